import { afterAll, beforeAll, expect, test } from "bun:test";
import { ConfigResourceTypes, Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { KafkaClient, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

const TOPIC = 2;
const BROKER = 4;

let b: TestBroker;
let client: KafkaClient;
beforeAll(async () => {
  b = await startTestBroker();
  client = await KafkaClient.connect(b.port);
  const res = await client.request(ApiKey.CreateTopics, 7, {
    topics: ["altered", "validated", "kjs-altered"].map((name) => ({
      name,
      numPartitions: 2,
      replicationFactor: 1,
      configs: [{ name: "retention.ms", value: "1000" }],
    })),
  });
  expect(res.topics.map((t) => t.errorCode)).toEqual([0, 0, 0]);
}, 60_000);
afterAll(async () => {
  client.close();
  await b.stop();
});

const overrides = (topic: string) => b.broker.services.metadataCache.topic(topic)!.configs;
const alter = (version: number, resources: object[], validateOnly = false) =>
  client.request(ApiKey.AlterConfigs, version, { resources, validateOnly });
/** A topic resource setting `configs` ([name, value] pairs). */
const topicResource = (name: string, ...configs: [string, string | null][]) => ({
  resourceType: TOPIC,
  resourceName: name,
  configs: configs.map(([key, value]) => ({ name: key, value })),
});

test("kafkajs alterConfigs replaces the overrides, and describeConfigs shows them", async () => {
  const kafka = new Kafka({ brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: ConfigResourceTypes.TOPIC,
          name: "kjs-altered",
          configEntries: [{ name: "max.message.bytes", value: "2048" }],
        },
      ],
    });
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [
        {
          type: ConfigResourceTypes.TOPIC,
          name: "kjs-altered",
          configNames: ["max.message.bytes", "retention.ms"],
        },
      ],
    });
    const entries = described.resources[0]!.configEntries;
    const values = Object.fromEntries(entries.map((e) => [e.configName, e.configValue]));
    // AlterConfigs replaces: retention.ms, not named, is back to the broker default.
    expect(values).toEqual({ "max.message.bytes": "2048", "retention.ms": "604800000" });
  } finally {
    await admin.disconnect();
  }
});

test("v0 (lowest) and v2 (highest) replace the topic's overrides", async () => {
  const v0 = await alter(0, [topicResource("altered", ["segment.bytes", "100000"])]);
  expect(v0.responses).toEqual([
    { errorCode: 0, errorMessage: null, resourceType: TOPIC, resourceName: "altered" },
  ]);
  expect(overrides("altered")).toEqual({ "segment.bytes": 100000 });
  const v2 = await alter(2, [
    topicResource("altered", ["cleanup.policy", "compact,delete"], ["retention.ms", "-1"]),
  ]);
  expect(v2.responses[0]!.errorCode).toBe(0);
  expect(overrides("altered")).toEqual({
    "cleanup.policy": ["compact", "delete"],
    "retention.ms": -1,
  });
});

test("validate_only checks and changes nothing", async () => {
  const ok = await alter(2, [topicResource("validated", ["retention.ms", "5"])], true);
  expect(ok.responses[0]!.errorCode).toBe(0);
  const bad = await alter(2, [topicResource("validated", ["retention.ms", "x"])], true);
  expect(bad.responses[0]!.errorCode).toBe(ErrorCode.INVALID_REQUEST);
  expect(overrides("validated")).toEqual({ "retention.ms": 1000 });
});

test("error paths: per resource, with Kafka's codes and messages", async () => {
  const res = await alter(1, [
    { resourceType: TOPIC, resourceName: "missing", configs: [] },
    topicResource("validated", ["no.such", "1"]),
    topicResource("kjs-altered", ["segment.bytes", "1"]),
    { resourceType: BROKER, resourceName: "0", configs: [{ name: "num.partitions", value: "3" }] },
    { resourceType: BROKER, resourceName: "9", configs: [] },
    { resourceType: 16, resourceName: "metrics", configs: [] },
    { resourceType: TOPIC, resourceName: "dup", configs: [] },
    { resourceType: TOPIC, resourceName: "dup", configs: [] },
  ]);
  expect(res.responses.map((r) => [r.resourceName, r.errorCode])).toEqual([
    ["missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
    ["validated", ErrorCode.INVALID_CONFIG],
    ["kjs-altered", ErrorCode.INVALID_REQUEST],
    ["0", ErrorCode.INVALID_REQUEST],
    ["9", ErrorCode.INVALID_REQUEST],
    ["metrics", ErrorCode.INVALID_REQUEST],
    ["dup", ErrorCode.INVALID_REQUEST],
    ["dup", ErrorCode.INVALID_REQUEST],
  ]);
  const messages = res.responses.map((r) => r.errorMessage);
  expect(messages[0]).toBe("The topic 'missing' does not exist.");
  expect(messages[1]).toBe("Unknown topic config name: no.such");
  const resource = "ConfigResource(type=TOPIC, name='kjs-altered')";
  expect(messages[2]).toStartWith(`Invalid config value for resource ${resource}:`);
  expect(messages[3]).toBe(
    "Invalid config value for resource ConfigResource(type=BROKER, name='0'): " +
      "Cannot update these configs dynamically: Set(num.partitions)",
  );
  expect(messages[4]).toBe("Unexpected broker id, expected 0, but received 9");
  expect(messages[5]).toBe(
    "AlterConfigs is only supported for topics, brokers and groups, but resource type is " +
      "CLIENT_METRICS",
  );
  expect(messages[6]).toBe("Each resource must appear at most once.");
  expect(overrides("validated")).toEqual({ "retention.ms": 1000 });
  expect(b.broker.services.config["num.partitions"]).toBe(1);
});

test("null values and duplicate keys are INVALID_REQUEST", async () => {
  const res = await alter(2, [topicResource("validated", ["retention.ms", null])]);
  expect(res.responses[0]).toMatchObject({
    errorCode: ErrorCode.INVALID_REQUEST,
    errorMessage: "Null value not supported for : retention.ms",
  });
  const dup = await alter(2, [
    topicResource("validated", ["retention.ms", "1"], ["retention.ms", "2"]),
  ]);
  expect(dup.responses[0]).toMatchObject({
    errorCode: ErrorCode.INVALID_REQUEST,
    errorMessage: "Error due to duplicate config keys",
  });
});

test("altered configs persist across a restart", async () => {
  await alter(2, [topicResource("altered", ["retention.bytes", "123456"])]);
  client.close();
  b = await b.restart();
  client = await KafkaClient.connect(b.port);
  expect(overrides("altered")).toEqual({ "retention.bytes": 123456 });
  const described = await client.request(ApiKey.DescribeConfigs, 4, {
    resources: [
      { resourceType: TOPIC, resourceName: "altered", configurationKeys: ["retention.bytes"] },
    ],
  });
  expect(described.results[0]!.configs[0]).toMatchObject({
    name: "retention.bytes",
    value: "123456",
  });
}, 20_000);
