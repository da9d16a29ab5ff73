/**
 * The admin and transaction APIs refuse a principal without ACLs with Kafka's error codes, on an
 * embedded broker with the AclAuthorizer: raw requests on the PLAINTEXT listener (User:ANONYMOUS)
 * against a topic that exists, so only authorization can refuse them. Then one ACL lets a single
 * operation through and leaves the rest refused.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { PATTERN_LITERAL, PERMISSION_ALLOW } from "../../src/security/acl.ts";
import { AclOperation, ResourceType } from "../../src/security/authorized-operations.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { requestOnce } from "../support/kafka-client.ts";

let broker: InProcessBroker;

beforeAll(async () => {
  broker = await startInProcessBroker({
    settings: { "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer" },
  });
  await broker.broker.services.adminManager.createTopic(
    { name: "t", numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] },
    false,
  );
}, 60_000);

afterAll(async () => {
  await broker?.stop();
});

const TAF = ErrorCode.TOPIC_AUTHORIZATION_FAILED;

async function denials() {
  const p = broker.port;
  const partitions = await requestOnce(p, ApiKey.CreatePartitions, 3, {
    topics: [{ name: "t", count: 2, assignments: null }],
    timeoutMs: 5_000,
    validateOnly: true,
  });
  const deleted = await requestOnce(p, ApiKey.DeleteTopics, 4, {
    topicNames: ["t"],
    timeoutMs: 5_000,
  });
  const records = await requestOnce(p, ApiKey.DeleteRecords, 2, {
    topics: [{ name: "t", partitions: [{ partitionIndex: 0, offset: 0n }] }],
    timeoutMs: 5_000,
  });
  const configs = await requestOnce(p, ApiKey.DescribeConfigs, 4, {
    resources: [{ resourceType: 2, resourceName: "t", configurationKeys: null }],
  });
  const offsets = await requestOnce(p, ApiKey.ListOffsets, 7, {
    replicaId: -1,
    topics: [{ name: "t", partitions: [{ partitionIndex: 0, timestamp: -1n }] }],
  });
  return {
    createPartitions: partitions.results[0]!.errorCode,
    deleteTopics: deleted.responses[0]!.errorCode,
    deleteRecords: records.topics[0]!.partitions[0]!.errorCode,
    describeConfigs: configs.results[0]!.errorCode,
    listOffsets: offsets.topics[0]!.partitions[0]!.errorCode,
  };
}

test("admin, offset and transaction APIs answer Kafka's authorization errors", async () => {
  const p = broker.port;
  expect(await denials()).toEqual({
    createPartitions: TAF,
    deleteTopics: TAF,
    deleteRecords: TAF,
    describeConfigs: TAF,
    listOffsets: TAF,
  });
  const idempotent = await requestOnce(p, ApiKey.InitProducerId, 4, {
    transactionalId: null,
    transactionTimeoutMs: 60_000,
  });
  expect(idempotent.errorCode).toBe(ErrorCode.CLUSTER_AUTHORIZATION_FAILED);
  const transactional = await requestOnce(p, ApiKey.InitProducerId, 4, {
    transactionalId: "tx",
    transactionTimeoutMs: 60_000,
  });
  expect(transactional.errorCode).toBe(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
  const ended = await requestOnce(p, ApiKey.EndTxn, 3, {
    transactionalId: "tx",
    producerId: 1n,
    producerEpoch: 0,
    committed: true,
  });
  expect(ended.errorCode).toBe(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
  const groups = await requestOnce(p, ApiKey.DescribeGroups, 5, {
    groups: ["g"],
    includeAuthorizedOperations: true,
  });
  expect(groups.groups[0]!.errorCode).toBe(ErrorCode.GROUP_AUTHORIZATION_FAILED);
  // DESCRIBE_CONFIGS on the topic lets DescribeConfigs through, and nothing else.
  await broker.broker.services.authorizer!.create([
    {
      pattern: { resourceType: ResourceType.TOPIC, name: "t", patternType: PATTERN_LITERAL },
      entry: {
        principal: "User:ANONYMOUS",
        host: "*",
        operation: AclOperation.DESCRIBE_CONFIGS,
        permissionType: PERMISSION_ALLOW,
      },
    },
  ]);
  expect(await denials()).toEqual({
    createPartitions: TAF,
    deleteTopics: TAF,
    deleteRecords: TAF,
    describeConfigs: ErrorCode.NONE,
    listOffsets: TAF,
  });
}, 60_000);

test("decisions are logged as Kafka's authorizer logger: denials at INFO, grants at DEBUG", async () => {
  const before = broker.logger.lines.length;
  await denials();
  await requestOnce(broker.port, ApiKey.Metadata, 9, {
    topics: null,
    allowAutoTopicCreation: false,
    includeClusterAuthorizedOperations: false,
    includeTopicAuthorizedOperations: false,
  });
  const lines = broker.logger.lines.slice(before);
  const line = (verdict: string, operation: string, api: string) =>
    `Principal = User:ANONYMOUS is ${verdict} Operation = ${operation} from host = 127.0.0.1 ` +
    `on resource = Topic:LITERAL:t for request = ${api} with resourceRefCount = 1`;
  expect(lines).toContain(`INFO ${line("Denied", "Delete", "DeleteTopics")}`);
  expect(lines).toContain(`DEBUG ${line("Allowed", "DescribeConfigs", "DescribeConfigs")}`);
  // Listing every topic filters quietly (Kafka's logIfDenied = false).
  expect(lines.filter((l) => l.includes("for request = Metadata"))).toEqual([]);
}, 30_000);
