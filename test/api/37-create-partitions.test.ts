import { afterAll, beforeAll, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { KafkaClient, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

let b: TestBroker;
let client: KafkaClient;
beforeAll(async () => {
  b = await startTestBroker();
  client = await KafkaClient.connect(b.port);
  const res = await client.request(ApiKey.CreateTopics, 7, {
    topics: ["kjs-grow", "grow-v0", "grow-v3", "dry", "errors"].map((name) => ({
      name,
      numPartitions: 1,
      replicationFactor: 1,
      configs: [{ name: "retention.ms", value: "77777" }],
    })),
  });
  expect(res.topics.map((t) => t.errorCode)).toEqual([0, 0, 0, 0, 0]);
}, 60_000);
afterAll(async () => {
  client.close();
  await b.stop();
});

const partitionCount = (topic: string) =>
  b.broker.services.metadataCache.topic(topic)!.partitions.length;
const grow = (version: number, topics: object[], validateOnly = false) =>
  client.request(ApiKey.CreatePartitions, version, { topics, timeoutMs: 5000, validateOnly });

test("kafkajs createPartitions grows a topic; producing to a new partition works", async () => {
  const kafka = new Kafka({ brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  const producer = kafka.producer();
  await Promise.all([admin.connect(), producer.connect()]);
  try {
    await admin.createPartitions({ topicPartitions: [{ topic: "kjs-grow", count: 3 }] });
    const meta = await admin.fetchTopicMetadata({ topics: ["kjs-grow"] });
    expect(meta.topics[0]!.partitions.map((p) => p.partitionId).sort()).toEqual([0, 1, 2]);
    const [sent] = await producer.send({
      topic: "kjs-grow",
      messages: [{ value: "v", partition: 2 }],
    });
    expect(sent).toMatchObject({ partition: 2, errorCode: 0 });
  } finally {
    await Promise.all([admin.disconnect(), producer.disconnect()]);
  }
});

test("v0 (lowest): automatic placement, new partition directories, configs kept", async () => {
  const res = await grow(0, [{ name: "grow-v0", count: 4, assignments: null }]);
  expect(res.results).toEqual([{ name: "grow-v0", errorCode: 0, errorMessage: null }]);
  expect(partitionCount("grow-v0")).toBe(4);
  expect(fs.existsSync(path.join(b.dataDir, "grow-v0-3"))).toBe(true);
  const described = await client.request(ApiKey.DescribeConfigs, 4, {
    resources: [{ resourceType: 2, resourceName: "grow-v0", configurationKeys: ["retention.ms"] }],
  });
  expect(described.results[0]!.configs[0]!.value).toBe("77777");
});

test("v3 (highest): explicit assignments for the new partitions", async () => {
  const assignments = [{ brokerIds: [0] }, { brokerIds: [0] }];
  const res = await grow(3, [{ name: "grow-v3", count: 3, assignments }]);
  expect(res.results[0]!.errorCode).toBe(0);
  const t = b.broker.services.metadataCache.topic("grow-v3")!;
  expect(t.partitions.map((p) => p.replicas)).toEqual([[0], [0], [0]]);
});

test("validate_only checks and creates nothing", async () => {
  const res = await grow(3, [{ name: "dry", count: 5, assignments: null }], true);
  expect(res.results[0]!.errorCode).toBe(0);
  expect(partitionCount("dry")).toBe(1);
  const bad = await grow(3, [{ name: "dry", count: 1, assignments: null }], true);
  expect(bad.results[0]!.errorCode).toBe(ErrorCode.INVALID_PARTITIONS);
});

test("error paths, each with Kafka's code and message", async () => {
  await grow(3, [{ name: "errors", count: 2, assignments: null }]);
  const placing = (count: number, ...brokerIds: number[][]) => ({
    name: "errors",
    count,
    assignments: brokerIds.map((ids) => ({ brokerIds: ids })),
  });
  const cases: [object, number, string][] = [
    [
      { name: "missing", count: 2, assignments: null },
      ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
      "The topic 'missing' does not exist.",
    ],
    [
      { name: "errors", count: 1, assignments: null },
      ErrorCode.INVALID_PARTITIONS,
      "Topic currently has 2 partitions, which is higher than the requested 1.",
    ],
    [
      { name: "errors", count: 2, assignments: null },
      ErrorCode.INVALID_PARTITIONS,
      "Topic already has 2 partitions.",
    ],
    [
      placing(4, [0]),
      ErrorCode.INVALID_REPLICA_ASSIGNMENT,
      "Increasing the number of partitions by 2 but 1 assignments provided.",
    ],
    [
      placing(3, [5]),
      ErrorCode.INVALID_REPLICA_ASSIGNMENT,
      "Unknown broker(s) in replica assignment: 5.",
    ],
    [
      placing(3, [0, 0]),
      ErrorCode.INVALID_REPLICA_ASSIGNMENT,
      "Duplicate brokers not allowed in replica assignment: 0, 0 for partition id 2.",
    ],
    [
      placing(3, []),
      ErrorCode.INVALID_REPLICA_ASSIGNMENT,
      "Cannot have replication factor of 0 for partition id 2.",
    ],
    [
      { name: "errors", count: 20_000, assignments: null },
      ErrorCode.INVALID_PARTITIONS,
      "Number of partitions must be between 1 and 10000, got 20000.",
    ],
  ];
  for (const [t, code, message] of cases) {
    const res = await grow(1, [t]);
    const name = (t as { name: string }).name;
    expect(res.results[0]).toEqual({ name, errorCode: code, errorMessage: message });
  }
  expect(partitionCount("errors")).toBe(2);
});

test("a topic named twice gets one INVALID_REQUEST result and does not grow", async () => {
  const res = await grow(2, [
    { name: "errors", count: 5, assignments: null },
    { name: "errors", count: 6, assignments: null },
  ]);
  expect(res.results).toEqual([
    {
      name: "errors",
      errorCode: ErrorCode.INVALID_REQUEST,
      errorMessage: "Duplicate topic in request.",
    },
  ]);
  expect(partitionCount("errors")).toBe(2);
});

test("new partitions persist across a restart", async () => {
  client.close();
  b = await b.restart();
  client = await KafkaClient.connect(b.port);
  expect(partitionCount("grow-v0")).toBe(4);
  expect(partitionCount("grow-v3")).toBe(3);
}, 20_000);
