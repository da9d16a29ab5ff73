import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ConfigSource } from "../../src/config/topic-config.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { KafkaClient, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

let b: TestBroker;
let client: KafkaClient;
beforeAll(async () => {
  b = await startTestBroker({ "num.partitions": "3" });
  client = await KafkaClient.connect(b.port);
}, 60_000);
afterAll(async () => {
  client.close();
  await b.stop();
});

const create = (version: number, topics: object[], validateOnly = false) =>
  client.request(ApiKey.CreateTopics, version, { topics, timeoutMs: 5000, validateOnly });
const topic = (name: string, extra: object = {}) => ({
  name,
  numPartitions: -1,
  replicationFactor: -1,
  assignments: [],
  configs: [],
  ...extra,
});

test("kafkajs creates topics with partitions and configs; creating again fails", async () => {
  const kafka = new Kafka({ brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const created = await admin.createTopics({
      topics: [
        {
          topic: "kjs-a",
          numPartitions: 4,
          configEntries: [{ name: "retention.ms", value: "1234" }],
        },
      ],
    });
    expect(created).toBe(true);
    const meta = await admin.fetchTopicMetadata({ topics: ["kjs-a"] });
    expect(meta.topics[0]!.partitions.length).toBe(4);
    expect(b.broker.services.metadataCache.topic("kjs-a")?.configs["retention.ms"]).toBe(1234);
    expect(await admin.createTopics({ topics: [{ topic: "kjs-a" }] })).toBe(false);
    const bogus = [{ name: "bogus", value: "1" }];
    const error = await admin
      .createTopics({ topics: [{ topic: "kjs-b", configEntries: bogus }] })
      .catch((e: { errors?: { type: string }[] }) => e.errors?.[0]?.type);
    expect(error).toBe("INVALID_CONFIG");
  } finally {
    await admin.disconnect();
  }
});

test("v2 (lowest): created with the broker default partition count", async () => {
  const res = await create(2, [topic("low")]);
  expect(res.topics).toEqual([
    expect.objectContaining({ name: "low", errorCode: 0, errorMessage: null }),
  ]);
  expect(b.broker.services.metadataCache.topic("low")?.partitions.length).toBe(3);
});

test("v7 (highest): topic id, counts and every topic config with its source", async () => {
  const res = await create(7, [
    topic("high", {
      numPartitions: 2,
      replicationFactor: 1,
      configs: [{ name: "cleanup.policy", value: "compact" }],
    }),
  ]);
  const t = res.topics[0]!;
  expect(t.errorCode).toBe(ErrorCode.NONE);
  const known = b.broker.services.metadataCache.topic("high")!;
  expect(Buffer.from(t.topicId).equals(Buffer.from(known.topicId))).toBe(true);
  expect(t.topicId.some((x) => x !== 0)).toBe(true);
  expect(t.numPartitions).toBe(2);
  expect(t.replicationFactor).toBe(1);
  const policy = t.configs!.find((c) => c.name === "cleanup.policy")!;
  expect(policy).toMatchObject({
    value: "compact",
    configSource: ConfigSource.DYNAMIC_TOPIC_CONFIG,
  });
  const retention = t.configs!.find((c) => c.name === "retention.ms")!;
  expect(retention).toMatchObject({
    value: "604800000",
    configSource: ConfigSource.DEFAULT_CONFIG,
  });
  expect(t.configs!.length).toBe(36); // every key Kafka 3.9 lists for a topic
});

test("explicit replica assignment", async () => {
  const assignments = [0, 1, 2, 3, 4].map((p) => ({ partitionIndex: p, brokerIds: [0] }));
  const res = await create(5, [topic("assigned", { assignments })]);
  expect(res.topics[0]).toMatchObject({ errorCode: 0, numPartitions: 5, replicationFactor: 1 });
  expect(b.broker.services.metadataCache.topic("assigned")?.partitions.length).toBe(5);
});

test("validate_only checks and creates nothing, with a zero topic id", async () => {
  const res = await create(7, [topic("dry", { numPartitions: 2 })], true);
  expect(res.topics[0]).toMatchObject({ errorCode: 0, numPartitions: 2 });
  expect(res.topics[0]!.topicId.every((x) => x === 0)).toBe(true);
  expect(b.broker.services.metadataCache.topic("dry")).toBeUndefined();
  const bad = await create(7, [topic("dry", { numPartitions: 0 })], true);
  expect(bad.topics[0]!.errorCode).toBe(ErrorCode.INVALID_PARTITIONS);
});

test("error paths answer per topic with Kafka's codes and messages", async () => {
  await create(7, [topic("exists")]);
  const cases: [object, number, string][] = [
    [topic("exists"), ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 'exists' already exists."],
    [topic("bad/name"), ErrorCode.INVALID_TOPIC_EXCEPTION, "contains a character other than"],
    [topic(""), ErrorCode.INVALID_TOPIC_EXCEPTION, "it can't be empty"],
    [topic("x".repeat(250)), ErrorCode.INVALID_TOPIC_EXCEPTION, "longer than 249 characters"],
    [topic("zero", { numPartitions: 0 }), ErrorCode.INVALID_PARTITIONS, "must be larger than 0"],
    [
      topic("rf0", { replicationFactor: 0 }),
      ErrorCode.INVALID_REPLICATION_FACTOR,
      "must be larger than 0",
    ],
    [
      topic("rf3", { replicationFactor: 3 }),
      ErrorCode.INVALID_REPLICATION_FACTOR,
      "Replication factor: 3 larger than available brokers: 1.",
    ],
    [
      topic("cfg", { configs: [{ name: "retention.ms", value: "soon" }] }),
      ErrorCode.INVALID_CONFIG,
      "retention.ms",
    ],
    [
      topic("cfg2", { configs: [{ name: "no.such.key", value: "1" }] }),
      ErrorCode.INVALID_CONFIG,
      "no.such.key",
    ],
    [
      topic("nullcfg", { configs: [{ name: "retention.ms", value: null }] }),
      ErrorCode.INVALID_REQUEST,
      "Null value not supported for topic configs : retention.ms",
    ],
    [
      topic("both", { numPartitions: 1, assignments: [{ partitionIndex: 0, brokerIds: [0] }] }),
      ErrorCode.INVALID_REQUEST,
      "Both numPartitions or replicationFactor",
    ],
    [
      topic("gap", { assignments: [{ partitionIndex: 1, brokerIds: [0] }] }),
      ErrorCode.INVALID_REPLICA_ASSIGNMENT,
      "consecutive 0-based",
    ],
    [
      topic("nobroker", { assignments: [{ partitionIndex: 0, brokerIds: [7] }] }),
      ErrorCode.INVALID_REPLICA_ASSIGNMENT,
      "broker 7",
    ],
  ];
  for (const [t, code, message] of cases) {
    const res = await create(7, [t]);
    const r = res.topics[0]!;
    expect([r.name, r.errorCode]).toEqual([(t as { name: string }).name, code]);
    expect(r.errorMessage).toContain(message);
    expect(r).toMatchObject({ numPartitions: -1, replicationFactor: -1, configs: [] });
  }
  expect(b.broker.services.metadataCache.topic("zero")).toBeUndefined();
});

test("a name that collides with an existing one by '.' versus '_' is refused", async () => {
  await create(7, [topic("col.lide")]);
  const res = await create(7, [topic("col_lide")]);
  expect(res.topics[0]!.errorCode).toBe(ErrorCode.INVALID_TOPIC_EXCEPTION);
  expect(res.topics[0]!.errorMessage).toContain("collides with existing topics: col.lide");
});

test("a topic named twice in a request: INVALID_REQUEST for each entry, not created", async () => {
  const res = await create(4, [topic("twice"), topic("once"), topic("twice")]);
  expect(res.topics.map((t) => [t.name, t.errorCode])).toEqual([
    ["twice", ErrorCode.INVALID_REQUEST],
    ["once", 0],
    ["twice", ErrorCode.INVALID_REQUEST],
  ]);
  expect(res.topics[0]!.errorMessage).toBe("Found multiple entries for this topic.");
  expect(b.broker.services.metadataCache.topic("twice")).toBeUndefined();
});

test("versions 0 and 1 are not offered: the broker closes the connection", async () => {
  const other = await KafkaClient.connect(b.port);
  await expect(other.request(ApiKey.CreateTopics, 1, { topics: [topic("old")] })).rejects.toThrow();
  other.close();
});

test("created topics and their configs persist across a restart", async () => {
  const configs = [{ name: "segment.bytes", value: "65536" }];
  await create(7, [topic("durable", { numPartitions: 2, configs })]);
  client.close();
  b = await b.restart();
  client = await KafkaClient.connect(b.port);
  const t = b.broker.services.metadataCache.topic("durable")!;
  expect(t.partitions.length).toBe(2);
  expect(t.configs["segment.bytes"]).toBe(65536);
  const res = await create(7, [topic("durable")]);
  expect(res.topics[0]!.errorCode).toBe(ErrorCode.TOPIC_ALREADY_EXISTS);
}, 20_000);

/** confluent-kafka's AdminClient (librdkafka) as a separate process: create, describe, delete. */
const LIBRDKAFKA_ADMIN = `
import json, sys
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
out = {}
def wait(futures):
    return {k: f.result() for k, f in futures.items()}
wait(a.create_topics([NewTopic("rd-topic", num_partitions=3, replication_factor=1,
                                config={"retention.ms": "4321"})], operation_timeout=5))
try:
    wait(a.create_topics([NewTopic("rd-topic", num_partitions=1, replication_factor=1)]))
    out["again"] = "created twice"
except Exception as e:
    out["again"] = e.args[0].name()
out["partitions"] = len(a.list_topics(timeout=5).topics["rd-topic"].partitions)
cfg = list(wait(a.describe_configs([ConfigResource("topic", "rd-topic")])).values())[0]
out["retention"] = [cfg["retention.ms"].value, cfg["retention.ms"].source, len(cfg)]
wait(a.alter_configs([ConfigResource("topic", "rd-topic", set_config={"retention.ms": "999"})]))
cfg = list(wait(a.describe_configs([ConfigResource("topic", "rd-topic")])).values())[0]
out["altered"] = cfg["retention.ms"].value
wait(a.create_partitions([NewPartitions("rd-topic", 5)]))
out["grown"] = len(a.list_topics(timeout=5).topics["rd-topic"].partitions)
wait(a.delete_topics(["rd-topic"], operation_timeout=5))
out["deleted"] = "rd-topic" not in a.list_topics(timeout=5).topics
print(json.dumps(out))
`;

test("librdkafka (confluent-kafka) creates, describes, alters, grows and deletes", async () => {
  // Asynchronous spawn: the broker runs in this process and must keep serving meanwhile.
  const child = Bun.spawn(["/usr/bin/python3", "-c", LIBRDKAFKA_ADMIN, `127.0.0.1:${b.port}`], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  expect({ exitCode, stderr }).toEqual({ exitCode: 0, stderr: "" });
  expect(JSON.parse(stdout)).toEqual({
    again: "TOPIC_ALREADY_EXISTS",
    partitions: 3,
    retention: ["4321", ConfigSource.DYNAMIC_TOPIC_CONFIG, 36],
    altered: "999",
    grown: 5,
    deleted: true,
  });
  expect(b.broker.services.metadataCache.topic("rd-topic")).toBeUndefined();
}, 30_000);
