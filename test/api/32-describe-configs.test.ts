import { afterAll, beforeAll, expect, test } from "bun:test";
import { ConfigResourceTypes, Kafka, logLevel } from "kafkajs";
import { BROKER_CONFIG_KEYS } from "../../src/config/broker-config.ts";
import { ConfigType } from "../../src/config/config-key.ts";
import { ConfigSource, TOPIC_CONFIG_KEYS } from "../../src/config/topic-config.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { KafkaClient, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

const TOPIC = 2;
const BROKER = 4;

let b: TestBroker;
let client: KafkaClient;
beforeAll(async () => {
  // Set through a flag, so the broker synonym shows as STATIC_BROKER_CONFIG.
  b = await startTestBroker({ "log.segment.bytes": "1048576" });
  client = await KafkaClient.connect(b.port);
  const res = await client.request(ApiKey.CreateTopics, 7, {
    topics: [
      {
        name: "described",
        numPartitions: 1,
        replicationFactor: 1,
        configs: [{ name: "retention.ms", value: "60000" }],
      },
    ],
  });
  expect(res.topics[0]!.errorCode).toBe(ErrorCode.NONE);
}, 60_000);
afterAll(async () => {
  client.close();
  await b.stop();
});

const describe = (version: number, resources: object[], synonyms = false, documentation = false) =>
  client.request(ApiKey.DescribeConfigs, version, {
    resources,
    includeSynonyms: synonyms,
    includeDocumentation: documentation,
  });
/** The topic "described", with only `keys` (null: all). */
const described = (keys: string[] | null) => ({
  resourceType: TOPIC,
  resourceName: "described",
  configurationKeys: keys,
});

test("kafkajs describes a topic: override, broker and default values with sources", async () => {
  const kafka = new Kafka({ brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const res = await admin.describeConfigs({
      includeSynonyms: true,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: "described" }],
    });
    const entries = res.resources[0]!.configEntries;
    const byName = new Map(entries.map((e) => [e.configName, e]));
    expect(byName.size).toBe(Object.keys(TOPIC_CONFIG_KEYS).length);
    expect(byName.get("retention.ms")).toMatchObject({
      configValue: "60000",
      configSource: ConfigSource.DYNAMIC_TOPIC_CONFIG,
      readOnly: false,
    });
    expect(byName.get("retention.ms")!.configSynonyms[0]).toMatchObject({
      configName: "retention.ms",
      configValue: "60000",
      configSource: ConfigSource.DYNAMIC_TOPIC_CONFIG,
    });
    expect(byName.get("segment.bytes")).toMatchObject({
      configValue: "1048576",
      configSource: ConfigSource.STATIC_BROKER_CONFIG,
    });
    expect(byName.get("cleanup.policy")).toMatchObject({
      configValue: "delete",
      configSource: ConfigSource.DEFAULT_CONFIG,
    });
  } finally {
    await admin.disconnect();
  }
});

test("v1 (lowest): synonyms only when asked for, no type or documentation", async () => {
  const plain = await describe(1, [described(null)]);
  const r = plain.results[0]!;
  expect(r.errorCode).toBe(ErrorCode.NONE);
  expect(r.configs.every((c) => c.synonyms.length === 0)).toBe(true);
  const withSynonyms = await describe(1, [described(["segment.bytes"])], true);
  const segment = withSynonyms.results[0]!.configs;
  expect(segment.map((c) => c.name)).toEqual(["segment.bytes"]);
  expect(segment[0]!.synonyms).toEqual([
    { name: "log.segment.bytes", value: "1048576", source: ConfigSource.STATIC_BROKER_CONFIG },
    { name: "log.segment.bytes", value: "1073741824", source: ConfigSource.DEFAULT_CONFIG },
  ]);
  // v1 has no ConfigType or Documentation on the wire: the decoder fills their defaults.
  expect(segment[0]!.configType).toBe(0);
});

test("v4 (highest): config types, documentation when asked for, key filter", async () => {
  const keys = ["retention.ms", "cleanup.policy", "nope"];
  const res = await describe(4, [described(keys)], false, true);
  const configs = res.results[0]!.configs;
  expect(configs.map((c) => c.name).sort()).toEqual(["cleanup.policy", "retention.ms"]);
  const retention = configs.find((c) => c.name === "retention.ms")!;
  expect(retention).toMatchObject({
    value: "60000",
    configType: ConfigType.LONG,
    isSensitive: false,
  });
  expect(retention.documentation).toContain("older than");
  expect(configs.find((c) => c.name === "cleanup.policy")!.configType).toBe(ConfigType.LIST);
  const noDocs = await describe(4, [described([])]);
  expect(noDocs.results[0]!.configs.length).toBe(Object.keys(TOPIC_CONFIG_KEYS).length);
  expect(noDocs.results[0]!.configs.every((c) => c.documentation === null)).toBe(true);
});

test("broker: every broker key, dynamic ones writable; the empty name lists none yet", async () => {
  const res = await describe(
    4,
    [
      { resourceType: BROKER, resourceName: "0", configurationKeys: null },
      { resourceType: BROKER, resourceName: "", configurationKeys: null },
    ],
    true,
  );
  const [own, defaults] = res.results;
  expect(own!.errorCode).toBe(ErrorCode.NONE);
  expect(own!.configs.length).toBe(Object.keys(BROKER_CONFIG_KEYS).length);
  const writable = own!.configs.filter((c) => !c.readOnly).map((c) => c.name);
  expect(writable).toContain("log.retention.ms");
  expect(writable).toContain("leader.replication.throttled.rate");
  expect(writable).not.toContain("log.dirs");
  expect(writable).not.toContain("listeners");
  const segment = own!.configs.find((c) => c.name === "log.segment.bytes")!;
  expect(segment).toMatchObject({
    value: "1048576",
    configSource: ConfigSource.STATIC_BROKER_CONFIG,
  });
  const listeners = own!.configs.find((c) => c.name === "listeners")!;
  expect(listeners.value).toBe("PLAINTEXT://127.0.0.1:0");
  expect(defaults).toMatchObject({ errorCode: ErrorCode.NONE, configs: [] });
});

test("errors per resource: missing topic, illegal name, other broker, other type", async () => {
  const res = await describe(4, [
    { resourceType: TOPIC, resourceName: "missing", configurationKeys: null },
    { resourceType: TOPIC, resourceName: "bad name", configurationKeys: null },
    { resourceType: BROKER, resourceName: "3", configurationKeys: null },
    { resourceType: BROKER, resourceName: "zero", configurationKeys: null },
    { resourceType: 8, resourceName: "0", configurationKeys: null },
    described(["retention.ms"]),
  ]);
  expect(res.results.map((r) => [r.resourceType, r.resourceName, r.errorCode])).toEqual([
    [TOPIC, "missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
    [TOPIC, "bad name", ErrorCode.INVALID_TOPIC_EXCEPTION],
    [BROKER, "3", ErrorCode.INVALID_REQUEST],
    [BROKER, "zero", ErrorCode.INVALID_REQUEST],
    [8, "0", ErrorCode.INVALID_REQUEST],
    [TOPIC, "described", ErrorCode.NONE],
  ]);
  expect(res.results[2]!.errorMessage).toBe(
    "Unexpected broker id, expected 0 or empty string, but received 3",
  );
  expect(res.results[3]!.errorMessage).toBe("Broker id must be an integer, but it is: zero");
  expect(res.results[4]!.errorMessage).toBe("Unsupported resource type: BROKER_LOGGER");
  expect(res.results.slice(0, 5).every((r) => r.configs.length === 0)).toBe(true);
});
