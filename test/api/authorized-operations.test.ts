// Authorized operations (KIP-430) as confluent-kafka's admin API asks for them
// (include_authorized_operations=True): with no authorizer, Kafka 3.9 answers every operation
// that applies to the cluster, a topic and a group; not asking gives none. Raw requests check
// each API version that carries the fields and the "not requested" value.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { AUTHORIZED_OPERATIONS_NOT_REQUESTED } from "../../src/security/authorized-operations.ts";
import { requestOnce, type TestBroker } from "../support/kafka-client.ts";
import { compatPython } from "../support/python-venv.ts";
import { simpleCommit, startGroupBroker } from "./group-api-support.ts";

const SCRIPT = join(import.meta.dir, "authorized-operations.py");
/** READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS: bits 3-8, 10, 11. */
const TOPIC_OPERATIONS = 0b1101_1111_1000;
/** CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE. */
const CLUSTER_OPERATIONS = 0b1_1111_1010_0000;
/** READ DELETE DESCRIBE. */
const GROUP_OPERATIONS = 0b1_0100_1000;

let broker: TestBroker;

beforeAll(async () => {
  broker = await startGroupBroker();
}, 60_000);
afterAll(async () => {
  await broker.stop();
});

test("confluent-kafka admin: cluster, topic and group operations, and none unasked", async () => {
  const python = await compatPython("confluent-kafka-python");
  const produced = await requestOnce(broker.port, ApiKey.Produce, 9, {
    transactionalId: null,
    acks: 1,
    timeoutMs: 5_000,
    topicData: [
      {
        name: "t",
        partitionData: [0, 1].map((index) => ({
          index,
          records: batchOf("hello"),
        })),
      },
    ],
  });
  expect(produced.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.NONE);
  const proc = Bun.spawn([python, SCRIPT, `127.0.0.1:${broker.port}`, "t", "ops-group"], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([
    proc.exited,
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
  ]);
  expect(code, stderr).toBe(0);
  const out = JSON.parse(stdout);
  expect(out.consumed).toBe(true);
  expect(out.asked).toEqual({
    cluster: [
      "ALTER",
      "ALTER_CONFIGS",
      "CLUSTER_ACTION",
      "CREATE",
      "DESCRIBE",
      "DESCRIBE_CONFIGS",
      "IDEMPOTENT_WRITE",
    ],
    topic: [
      "ALTER",
      "ALTER_CONFIGS",
      "CREATE",
      "DELETE",
      "DESCRIBE",
      "DESCRIBE_CONFIGS",
      "READ",
      "WRITE",
    ],
    group: ["DELETE", "DESCRIBE", "READ"],
    group_state: "STABLE",
  });
  expect(out.not_asked).toEqual({ cluster: null, topic: null, group: null, group_state: "STABLE" });
  expect(out.deleted_after_close).toBe("ok");
}, 180_000);

function batchOf(value: string) {
  return buildRecordBatch([{ value: new TextEncoder().encode(value) }]);
}

test("Metadata v8-v12: topic operations when asked, the cluster's in v8-v10 only", async () => {
  for (const version of [8, 10, 11, 12]) {
    const ask = (include: boolean) =>
      requestOnce(broker.port, ApiKey.Metadata, version, {
        topics: ["t", "nope"].map((name) => ({ name, topicId: new Uint8Array(16) })),
        allowAutoTopicCreation: false,
        includeClusterAuthorizedOperations: include && version <= 10,
        includeTopicAuthorizedOperations: include,
      });
    const asked = await ask(true);
    expect(asked.topics.map((t) => t.topicAuthorizedOperations)).toEqual([
      TOPIC_OPERATIONS,
      TOPIC_OPERATIONS,
    ]);
    expect(asked.clusterAuthorizedOperations).toBe(
      version <= 10 ? CLUSTER_OPERATIONS : AUTHORIZED_OPERATIONS_NOT_REQUESTED,
    );
    const unasked = await ask(false);
    expect(unasked.topics.map((t) => t.topicAuthorizedOperations)).toEqual([
      AUTHORIZED_OPERATIONS_NOT_REQUESTED,
      AUTHORIZED_OPERATIONS_NOT_REQUESTED,
    ]);
    expect(unasked.clusterAuthorizedOperations).toBe(AUTHORIZED_OPERATIONS_NOT_REQUESTED);
  }
});

test("DescribeGroups v3-v5: group operations for groups answered without an error", async () => {
  await simpleCommit(broker.port, 8, "committed-group", 5n);
  for (const version of [3, 5]) {
    const res = await requestOnce(broker.port, ApiKey.DescribeGroups, version, {
      groups: ["committed-group"],
      includeAuthorizedOperations: true,
    });
    expect(res.groups[0]!.authorizedOperations).toBe(GROUP_OPERATIONS);
    const unasked = await requestOnce(broker.port, ApiKey.DescribeGroups, version, {
      groups: ["committed-group"],
      includeAuthorizedOperations: false,
    });
    expect(unasked.groups[0]!.authorizedOperations).toBe(AUTHORIZED_OPERATIONS_NOT_REQUESTED);
  }
});
