/**
 * ACLs end to end with kafkajs over SASL PLAIN on an embedded broker with Kafka's AclAuthorizer
 * configured: the super user manages ACLs (CreateAcls, DescribeAcls, DeleteAcls); a principal
 * without ACLs is refused at each step with Kafka's error (Metadata hides topics, produce,
 * consume, group, create); with exactly the needed ACLs it produces and consumes in a group.
 * Raw requests check bad filters and the inter-broker APIs.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  AclOperationTypes,
  AclPermissionTypes,
  AclResourceTypes,
  type Admin,
  Kafka,
  logLevel,
  ResourcePatternTypes,
} from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { waitUntil } from "../support/wait-until.ts";

let broker: InProcessBroker;
let admin: Admin;
const port = (name: string) => broker.broker.listeners.find((l) => l.listenerName === name)!.port;

const kafkaAs = (username: string) =>
  new Kafka({
    clientId: `acl-${username}`,
    brokers: [`127.0.0.1:${port("SASL_PLAINTEXT")}`],
    logLevel: logLevel.NOTHING,
    sasl: { mechanism: "plain", username, password: `${username}-secret` },
    retry: { retries: 1, initialRetryTime: 50 },
  });

const allow = (
  resourceType: AclResourceTypes,
  resourceName: string,
  operation: AclOperationTypes,
  principal = "User:alice",
  resourcePatternType = ResourcePatternTypes.LITERAL,
) => ({
  resourceType,
  resourceName,
  resourcePatternType,
  principal,
  host: "*",
  operation,
  permissionType: AclPermissionTypes.ALLOW,
});

beforeAll(async () => {
  broker = await startInProcessBroker({
    settings: {
      listeners: "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
      "sasl.enabled.mechanisms": "PLAIN",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config":
        "org.apache.kafka.common.security.plain.PlainLoginModule required " +
        'user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";',
      "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
      "super.users": "User:admin",
      "num.partitions": "1",
    },
  });
  admin = kafkaAs("admin").admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: "orders" }, { topic: "secret" }] });
}, 60_000);

afterAll(async () => {
  await admin?.disconnect();
  await broker?.stop();
});

async function bobTopics(kafka: Kafka): Promise<string[]> {
  const a = kafka.admin();
  await a.connect();
  try {
    return await a.listTopics();
  } finally {
    await a.disconnect();
  }
}

const errorOf = async (p: Promise<unknown>) =>
  p.then(
    () => "no error",
    (e: { type?: string; errors?: { type?: string }[] }) =>
      e.type ?? e.errors?.[0]?.type ?? String(e),
  );

describe("ACLs with kafkajs", () => {
  test("a principal without ACLs is refused at each step with Kafka's errors", async () => {
    const bob = kafkaAs("bob");
    const bobAdmin = bob.admin();
    await bobAdmin.connect();
    // Metadata leaves out the topics bob may not describe.
    expect(await bobAdmin.listTopics()).toEqual([]);
    expect(await errorOf(bobAdmin.createTopics({ topics: [{ topic: "bobs" }] }))).toBe(
      "TOPIC_AUTHORIZATION_FAILED",
    );
    const describeAcls = bobAdmin.describeAcls({
      resourceType: AclResourceTypes.ANY,
      resourcePatternType: ResourcePatternTypes.ANY,
      operation: AclOperationTypes.ANY,
      permissionType: AclPermissionTypes.ANY,
    });
    expect(await errorOf(describeAcls)).toBe("CLUSTER_AUTHORIZATION_FAILED");
    await bobAdmin.disconnect();
    // Metadata refuses a named topic bob may not describe (kafkajs says so before producing).
    const producer = bob.producer();
    await producer.connect();
    const hidden = await errorOf(producer.send({ topic: "orders", messages: [{ value: "x" }] }));
    expect(hidden).toContain("Not authorized to access topics: [Topic authorization failed]");
    await producer.disconnect();
    // With DESCRIBE but not WRITE, the Produce request itself is refused.
    const { TOPIC } = AclResourceTypes;
    await admin.createAcls({
      acl: [allow(TOPIC, "orders", AclOperationTypes.DESCRIBE, "User:bob")],
    });
    await waitUntil(
      async () => (await bobTopics(bob)).includes("orders"),
      10_000,
      "bob's DESCRIBE",
    );
    await producer.connect();
    const send = producer.send({ topic: "orders", messages: [{ value: "x" }] });
    expect(await errorOf(send)).toBe("TOPIC_AUTHORIZATION_FAILED");
    await producer.disconnect();
    // kafkajs reports the group refusal as "Failed to find group coordinator"; the raw
    // answers carry Kafka's code.
    const crash = kafkaAs("bob").consumer({ groupId: "bob-group", retry: { retries: 0 } });
    await crash.connect();
    const crashed = new Promise<string>((resolve) =>
      crash.on(crash.events.CRASH, (e) => resolve(e.payload.error.message)),
    );
    await crash.subscribe({ topics: ["orders"] });
    await crash.run({});
    expect(await crashed).toBe("Failed to find group coordinator");
    await crash.disconnect();
    const plaintext = port("PLAINTEXT"); // User:ANONYMOUS, without ACLs
    const found = await requestOnce(plaintext, ApiKey.FindCoordinator, 3, { key: "g", keyType: 0 });
    expect(found.errorCode).toBe(ErrorCode.GROUP_AUTHORIZATION_FAILED);
    const joined = await requestOnce(plaintext, ApiKey.JoinGroup, 5, {
      groupId: "g",
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 10_000,
      memberId: "",
      protocolType: "consumer",
      protocols: [{ name: "range", metadata: new Uint8Array(0) }],
    });
    expect(joined.errorCode).toBe(ErrorCode.GROUP_AUTHORIZATION_FAILED);
    const committed = await requestOnce(plaintext, ApiKey.OffsetFetch, 5, {
      groupId: "g",
      topics: null,
    });
    expect(committed.errorCode).toBe(ErrorCode.GROUP_AUTHORIZATION_FAILED);
  }, 60_000);

  test("with exactly the needed ACLs a principal produces and consumes in a group", async () => {
    const { TOPIC, GROUP } = AclResourceTypes;
    const { WRITE, READ } = AclOperationTypes;
    await admin.createAcls({
      acl: [
        allow(TOPIC, "orders", WRITE),
        allow(TOPIC, "orders", READ),
        allow(GROUP, "alice-", READ, "User:alice", ResourcePatternTypes.PREFIXED),
      ],
    });
    const described = await admin.describeAcls({
      resourceType: AclResourceTypes.ANY,
      resourcePatternType: ResourcePatternTypes.ANY,
      principal: "User:alice",
      operation: AclOperationTypes.ANY,
      permissionType: AclPermissionTypes.ANY,
    });
    expect(described.resources.map((r) => r.resourceName).sort()).toEqual(["alice-", "orders"]);
    const alice = kafkaAs("alice");
    const aliceAdmin = alice.admin();
    await aliceAdmin.connect();
    expect(await aliceAdmin.listTopics()).toEqual(["orders"]); // READ implies DESCRIBE
    await aliceAdmin.disconnect();
    const producer = alice.producer();
    await producer.connect();
    await producer.send({ topic: "orders", messages: [{ value: "one" }, { value: "two" }] });
    const secret = producer.send({ topic: "secret", messages: [{ value: "x" }] });
    expect(await errorOf(secret)).toContain("Not authorized to access topics");
    await producer.disconnect();
    const consumer = alice.consumer({ groupId: "alice-app" });
    await consumer.connect();
    await consumer.subscribe({ topics: ["orders"], fromBeginning: true });
    const seen: string[] = [];
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          seen.push(String(message.value));
          if (seen.length === 2) resolve();
        },
      });
    });
    await consumer.disconnect();
    expect(seen).toEqual(["one", "two"]);
    // DeleteAcls: the write ACL goes, and with it alice's produce.
    const deleted = await admin.deleteAcls({
      filters: [
        {
          resourceType: TOPIC,
          resourceName: "orders",
          resourcePatternType: ResourcePatternTypes.LITERAL,
          operation: WRITE,
          permissionType: AclPermissionTypes.ANY,
        },
      ],
    });
    expect(deleted.filterResponses[0]!.matchingAcls).toHaveLength(1);
    const again = alice.producer();
    await again.connect();
    const refused = again.send({ topic: "orders", messages: [{ value: "three" }] });
    expect(await errorOf(refused)).toBe("TOPIC_AUTHORIZATION_FAILED");
    await again.disconnect();
  }, 60_000);

  test("bad filters and bindings are INVALID_REQUEST with Kafka's messages", async () => {
    const plaintext = port("PLAINTEXT"); // User:ANONYMOUS
    const anyFilter = {
      resourceTypeFilter: 1,
      resourceNameFilter: null,
      patternTypeFilter: 1,
      principalFilter: null,
      hostFilter: null,
      operation: 1,
      permissionType: 1,
    };
    const before = await requestOnce(plaintext, ApiKey.DescribeAcls, 3, anyFilter);
    expect(before.errorCode).toBe(ErrorCode.CLUSTER_AUTHORIZATION_FAILED);
    const { CLUSTER } = AclResourceTypes;
    await admin.createAcls({
      acl: [allow(CLUSTER, "kafka-cluster", AclOperationTypes.ALTER, "User:ANONYMOUS")],
    });
    const unknownType = await requestOnce(plaintext, ApiKey.DescribeAcls, 3, {
      ...anyFilter,
      resourceTypeFilter: 99,
    });
    expect(unknownType.errorCode).toBe(ErrorCode.INVALID_REQUEST);
    const { patternTypeFilter: _, ...v0Filter } = anyFilter;
    const v0 = await requestOnce(plaintext, ApiKey.DescribeAcls, 0, v0Filter);
    expect(v0.errorCode).toBe(ErrorCode.NONE); // literal patterns only
    expect(v0.resources.every((r) => r.patternType === 3)).toBe(true);
    const creation = {
      resourceType: 2,
      resourceName: "t",
      resourcePatternType: 3,
      principal: "User:x",
      host: "*",
      operation: 3,
      permissionType: 3,
    };
    const created = await requestOnce(plaintext, ApiKey.CreateAcls, 3, {
      creations: [
        { ...creation, operation: 1 }, // ANY
        { ...creation, resourceType: 4, resourceName: "other" },
        { ...creation, principal: "alice" },
        { ...creation, resourcePatternType: 2 }, // MATCH
      ],
    });
    expect(created.results.map((r) => r.errorCode)).toEqual(
      Array(4).fill(ErrorCode.INVALID_REQUEST),
    );
    expect(created.results[1]!.errorMessage).toBe(
      "The only valid name for the CLUSTER resource is kafka-cluster",
    );
    const deleted = await requestOnce(plaintext, ApiKey.DeleteAcls, 3, {
      filters: [{ ...anyFilter, operation: 77 }],
    });
    expect(deleted.filterResults[0]!.errorCode).toBe(ErrorCode.INVALID_REQUEST);
  }, 60_000);

  test("inter-broker APIs and follower fetches need CLUSTER_ACTION", async () => {
    const plaintext = port("PLAINTEXT"); // User:ANONYMOUS: ALTER on the cluster, no CLUSTER_ACTION
    const stop = await requestOnce(plaintext, ApiKey.StopReplica, 3, {
      controllerId: 0,
      controllerEpoch: 1_000_000,
      brokerEpoch: -1n,
      topics: [],
    });
    expect(stop.errorCode).toBe(ErrorCode.CLUSTER_AUTHORIZATION_FAILED);
    const shutdown = await requestOnce(plaintext, ApiKey.ControlledShutdown, 3, {
      brokerId: 0,
      brokerEpoch: -1n,
    });
    expect(shutdown.errorCode).toBe(ErrorCode.CLUSTER_AUTHORIZATION_FAILED);
    // A fetch with a replica id is a follower's: without CLUSTER_ACTION every partition is refused.
    const replicaFetch = await requestOnce(plaintext, ApiKey.Fetch, 11, {
      replicaId: 0,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [
        {
          topic: "orders",
          partitions: [
            {
              partition: 0,
              currentLeaderEpoch: -1,
              fetchOffset: 0n,
              lastFetchedEpoch: -1,
              logStartOffset: -1n,
              partitionMaxBytes: 1 << 20,
            },
          ],
        },
      ],
      forgottenTopicsData: [],
      rackId: "",
    });
    const fetched = replicaFetch.responses[0]!.partitions[0]!;
    expect(fetched.errorCode).toBe(ErrorCode.TOPIC_AUTHORIZATION_FAILED);
    expect(fetched.records).toSatisfy((r) => r === null || (r as unknown[]).length === 0);
  }, 60_000);
});
