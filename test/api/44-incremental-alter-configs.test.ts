import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { KafkaClient, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

const TOPIC = 2;
const BROKER = 4;
const SET = 0;
const DELETE = 1;
const APPEND = 2;
const SUBTRACT = 3;

let b: TestBroker;
let client: KafkaClient;
let kafka: Kafka;
beforeAll(async () => {
  // Retention runs every 50 ms, so a retention change shows in the log quickly.
  b = await startTestBroker({ "log.retention.check.interval.ms": "50" });
  client = await KafkaClient.connect(b.port);
  kafka = new Kafka({ brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING });
  const res = await client.request(ApiKey.CreateTopics, 7, {
    topics: ["inc", "retained", "limited"].map((name) => ({
      name,
      numPartitions: 1,
      replicationFactor: 1,
      configs: [{ name: "segment.bytes", value: "1024" }],
    })),
  });
  expect(res.topics.map((t) => t.errorCode)).toEqual([0, 0, 0]);
}, 60_000);
afterAll(async () => {
  client.close();
  await b.stop();
});

const overrides = (topic: string) => b.broker.services.metadataCache.topic(topic)!.configs;
type Op = [name: string, op: number, value: string | null];
const alter = (version: number, topic: string, ops: Op[], validateOnly = false, type = TOPIC) =>
  client.request(ApiKey.IncrementalAlterConfigs, version, {
    resources: [
      {
        resourceType: type,
        resourceName: topic,
        configs: ops.map(([name, configOperation, value]) => ({ name, configOperation, value })),
      },
    ],
    validateOnly,
  });
/** The error code of one change to one topic, at v1. */
const alterCode = async (topic: string, op: Op) =>
  (await alter(1, topic, [op])).responses[0]!.errorCode;
const describeValue = async (topic: string, key: string) => {
  const res = await client.request(ApiKey.DescribeConfigs, 4, {
    resources: [{ resourceType: TOPIC, resourceName: topic, configurationKeys: [key] }],
  });
  return res.results[0]!.configs[0]!.value;
};

test("v0 (lowest): SET merges into the overrides instead of replacing them", async () => {
  const res = await alter(0, "inc", [["retention.ms", SET, "3600000"]]);
  expect(res.responses).toEqual([
    { errorCode: 0, errorMessage: null, resourceType: TOPIC, resourceName: "inc" },
  ]);
  expect(overrides("inc")).toEqual({ "segment.bytes": 1024, "retention.ms": 3600000 });
  expect(await describeValue("inc", "retention.ms")).toBe("3600000");
});

test("v1 (highest): DELETE falls back to the broker; APPEND and SUBTRACT edit lists", async () => {
  const deleted = await alter(1, "inc", [["segment.bytes", DELETE, null]]);
  expect(deleted.responses[0]!.errorCode).toBe(0);
  expect(await describeValue("inc", "segment.bytes")).toBe("1073741824");
  // No override yet: APPEND starts from the effective value, "delete".
  expect(await alterCode("inc", ["cleanup.policy", APPEND, "compact"])).toBe(0);
  expect(await describeValue("inc", "cleanup.policy")).toBe("delete,compact");
  expect(await alterCode("inc", ["cleanup.policy", APPEND, "compact"])).toBe(0);
  expect(await describeValue("inc", "cleanup.policy")).toBe("delete,compact");
  expect(await alterCode("inc", ["cleanup.policy", SUBTRACT, "delete"])).toBe(0);
  expect(overrides("inc")["cleanup.policy"]).toEqual(["compact"]);
});

test("APPEND and SUBTRACT on a non-list key are INVALID_REQUEST, and nothing changes", async () => {
  const before = { ...overrides("inc") };
  const res = await alter(1, "inc", [
    ["max.message.bytes", SET, "5000"],
    ["retention.ms", APPEND, "1"],
  ]);
  expect(res.responses[0]).toMatchObject({
    errorCode: ErrorCode.INVALID_REQUEST,
    errorMessage: "Config value append is not allowed for config key: retention.ms",
  });
  const sub = await alter(1, "inc", [["segment.ms", SUBTRACT, "1"]]);
  expect(sub.responses[0]!.errorMessage).toBe(
    "Config value subtract is not allowed for config key: segment.ms",
  );
  expect(overrides("inc")).toEqual(before);
});

test("errors: unknown key, bad or null value, duplicate key, missing topic, broker", async () => {
  const cases: [Op[], number, string, number?][] = [
    [[["no.such", SET, "1"]], ErrorCode.INVALID_CONFIG, "Unknown topic config name: no.such"],
    [
      [["retention.ms", SET, "later"]],
      ErrorCode.INVALID_REQUEST,
      "Invalid config value for resource",
    ],
    [
      [["retention.ms", SET, null]],
      ErrorCode.INVALID_REQUEST,
      "Null value not supported for : retention.ms",
    ],
    [
      [
        ["retention.ms", SET, "1"],
        ["retention.ms", DELETE, null],
      ],
      ErrorCode.INVALID_REQUEST,
      "Error due to duplicate config keys",
    ],
    [[["cleanup.policy", SUBTRACT, "delete,compact"]], ErrorCode.INVALID_REQUEST, "cleanup.policy"],
  ];
  for (const [ops, code, message] of cases) {
    const res = await alter(1, "inc", ops);
    expect(res.responses[0]!.errorCode).toBe(code);
    expect(res.responses[0]!.errorMessage).toContain(message);
  }
  const missing = await alter(1, "missing", [["retention.ms", SET, "1"]]);
  expect(missing.responses[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
  const broker = await alter(
    1,
    "0",
    [["log.retention.check.interval.ms", SET, "1"]],
    false,
    BROKER,
  );
  expect(broker.responses[0]!.errorCode).toBe(ErrorCode.INVALID_REQUEST);
  expect(broker.responses[0]!.errorMessage).toContain("Cannot update these configs dynamically");
  const append = await alter(1, "", [["log.retention.ms", APPEND, "1"]], false, BROKER);
  expect(append.responses[0]!.errorMessage).toBe(
    "Config value append is not allowed for config key: log.retention.ms",
  );
  expect(b.broker.services.dynamicConfig.value("log.retention.ms")).toBe(604800000);
});

test("validate_only changes nothing", async () => {
  const res = await alter(1, "inc", [["retention.ms", SET, "5"]], true);
  expect(res.responses[0]!.errorCode).toBe(0);
  expect(overrides("inc")["retention.ms"]).toBe(3600000);
});

test("retention.ms set incrementally reaches the running log: old segments go", async () => {
  const producer = kafka.producer();
  const admin = kafka.admin();
  await Promise.all([producer.connect(), admin.connect()]);
  try {
    // 1 KiB segments: every few batches roll a new one, so there are closed segments to delete.
    for (let i = 0; i < 20; i++) {
      await producer.send({ topic: "retained", messages: [{ value: "x".repeat(300) }] });
    }
    const low = async () => (await admin.fetchTopicOffsets("retained"))[0]!.low;
    expect(await low()).toBe("0");
    await Bun.sleep(200);
    expect(await low()).toBe("0");
    const res = await alter(1, "retained", [["retention.ms", SET, "1"]]);
    expect(res.responses[0]!.errorCode).toBe(0);
    expect(await describeValue("retained", "retention.ms")).toBe("1");
    const deadline = Date.now() + 5000;
    while ((await low()) === "0" && Date.now() < deadline) await Bun.sleep(25);
    expect(Number(await low())).toBeGreaterThan(0);
  } finally {
    await Promise.all([producer.disconnect(), admin.disconnect()]);
  }
}, 20_000);

test("max.message.bytes set incrementally applies to the next produce", async () => {
  const producer = kafka.producer({ retry: { retries: 0 } });
  await producer.connect();
  try {
    await producer.send({ topic: "limited", messages: [{ value: "y".repeat(600) }] });
    expect(await alterCode("limited", ["max.message.bytes", SET, "200"])).toBe(0);
    const error = await producer
      .send({ topic: "limited", messages: [{ value: "y".repeat(600) }] })
      .then(
        () => "sent",
        (e: { type?: string; cause?: { type?: string } }) => e.type ?? e.cause?.type,
      );
    expect(error).toBe("MESSAGE_TOO_LARGE");
  } finally {
    await producer.disconnect();
  }
});

test("incremental changes persist across a restart", async () => {
  await alter(1, "inc", [["retention.bytes", SET, "99999"]]);
  const expected = { ...overrides("inc") };
  client.close();
  b = await b.restart();
  client = await KafkaClient.connect(b.port);
  kafka = new Kafka({ brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING });
  expect(overrides("inc")).toEqual(expected);
  expect(await describeValue("inc", "retention.bytes")).toBe("99999");
}, 20_000);
