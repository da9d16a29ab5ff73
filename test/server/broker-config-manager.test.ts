/**
 * Dynamic broker configs on one embedded broker, through kafkajs's admin client: AlterConfigs
 * and DescribeConfigs on BROKER resources (this broker's id and the cluster-wide default),
 * the change reaching running logs whose topics do not override it, the change surviving a
 * restart (dynamic-broker-configs.json), and bad input answered per resource.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Admin, ConfigResourceTypes, Kafka, logLevel } from "kafkajs";
import { ConfigSource } from "../../src/config/topic-config.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { KafkaClient, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

let b: TestBroker;
let admin: Admin;

async function connect(broker: TestBroker): Promise<Admin> {
  const kafka = new Kafka({ brokers: [`127.0.0.1:${broker.port}`], logLevel: logLevel.NOTHING });
  const a = kafka.admin();
  await a.connect();
  return a;
}

beforeAll(async () => {
  b = await startTestBroker({ "log.segment.bytes": "1048576" });
  admin = await connect(b);
  await admin.createTopics({
    topics: [
      { topic: "follows-default", numPartitions: 1 },
      {
        topic: "overrides",
        numPartitions: 1,
        configEntries: [{ name: "max.message.bytes", value: "500000" }],
      },
    ],
  });
}, 60_000);

afterAll(async () => {
  await admin.disconnect();
  await b.stop();
});

const brokerResource = (name: string) => ({ type: ConfigResourceTypes.BROKER, name });

async function describeBroker(name: string, keys?: string[]) {
  const res = await admin.describeConfigs({
    resources: [{ ...brokerResource(name), configNames: keys }],
    includeSynonyms: true,
  });
  return res.resources[0]!.configEntries;
}

/** kafkajs refuses an empty resource name, so the cluster default goes over the wire here. */
async function alterDefault(configs: { name: string; value: string }[]) {
  const client = await KafkaClient.connect(b.port);
  try {
    const res = await client.request(ApiKey.AlterConfigs, 2, {
      resources: [{ resourceType: 4, resourceName: "", configs }],
      validateOnly: false,
    });
    expect(res.responses[0]!.errorCode).toBe(ErrorCode.NONE);
  } finally {
    client.close();
  }
}

async function describeDefault(): Promise<[string, string | null, number][]> {
  const client = await KafkaClient.connect(b.port);
  try {
    const res = await client.request(ApiKey.DescribeConfigs, 4, {
      resources: [{ resourceType: 4, resourceName: "", configurationKeys: null }],
      includeSynonyms: true,
      includeDocumentation: false,
    });
    return res.results[0]!.configs.map((c) => [c.name, c.value, c.configSource]);
  } finally {
    client.close();
  }
}

test("the cluster default and the broker's own value, with Kafka's sources", async () => {
  await alterDefault([{ name: "message.max.bytes", value: "2000" }]);
  expect(await describeDefault()).toEqual([
    ["message.max.bytes", "2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG],
  ]);
  let entry = (await describeBroker("0", ["message.max.bytes"]))[0]!;
  expect(entry).toMatchObject({ configValue: "2000", readOnly: false });
  expect(entry.configSource).toBe(ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG);
  await admin.alterConfigs({
    validateOnly: false,
    resources: [
      { ...brokerResource("0"), configEntries: [{ name: "message.max.bytes", value: "3000" }] },
    ],
  });
  entry = (await describeBroker("0", ["message.max.bytes"]))[0]!;
  expect(entry.configSource).toBe(ConfigSource.DYNAMIC_BROKER_CONFIG);
  expect(entry.configSynonyms.map((s) => [s.configValue, s.configSource])).toEqual([
    ["3000", ConfigSource.DYNAMIC_BROKER_CONFIG],
    ["2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG],
    ["1048588", ConfigSource.DEFAULT_CONFIG],
  ]);
});

test("running logs of topics without an override take the new default; overrides stay", async () => {
  const kafka = new Kafka({ brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ retry: { retries: 0 } });
  await producer.connect();
  try {
    const big = { value: "x".repeat(4000) };
    await expect(producer.send({ topic: "follows-default", messages: [big] })).rejects.toThrow(
      /larger than the max/,
    );
    await producer.send({ topic: "overrides", messages: [big] });
  } finally {
    await producer.disconnect();
  }
  const topic = await admin.describeConfigs({
    resources: [
      {
        type: ConfigResourceTypes.TOPIC,
        name: "follows-default",
        configNames: ["max.message.bytes"],
      },
    ],
    includeSynonyms: false,
  });
  expect(topic.resources[0]!.configEntries[0]!.configValue).toBe("3000");
});

test("a restart keeps both layers (embedded mode stores them in the data dir)", async () => {
  await admin.disconnect();
  b = await b.restart();
  admin = await connect(b);
  expect(b.broker.services.dynamicConfig.value("message.max.bytes")).toBe(3000);
  expect((await describeDefault()).map((e) => e[1])).toEqual(["2000"]);
  // Deleting the broker's own value falls back to the cluster default.
  await admin.alterConfigs({
    validateOnly: false,
    resources: [{ ...brokerResource("0"), configEntries: [] }],
  });
  expect(b.broker.services.dynamicConfig.value("message.max.bytes")).toBe(2000);
});

test("bad input: static keys, bad values, other brokers, null values, per resource", async () => {
  const client = await KafkaClient.connect(b.port);
  try {
    const cases: [string, { name: string; value: string | null }, string][] = [
      [
        "0",
        op("log.dirs", "/tmp/x"),
        "Invalid config value for resource ConfigResource(type=BROKER, name='0'): " +
          "Cannot update these configs dynamically: Set(log.dirs)",
      ],
      [
        "",
        op("log.segment.bytes", "12"),
        "Invalid config value for resource ConfigResource(type=BROKER, name=''): " +
          "Invalid value 12 for configuration log.segment.bytes: Value must be at least 14",
      ],
      ["7", op("log.segment.bytes", "2048"), "Unexpected broker id, expected 0, but received 7"],
      ["zero", op("log.segment.bytes", "2048"), "Broker id must be an integer, but it is: zero"],
      ["0", op("log.roll.ms", null), "Null value not supported for : log.roll.ms"],
      ["0", op("log.roll.ms", "x".repeat(20_000)), "Not a number of type LONG"],
    ];
    for (const [resourceName, config, message] of cases) {
      const res = await client.request(ApiKey.IncrementalAlterConfigs, 1, {
        resources: [{ resourceType: 4, resourceName, configs: [config] }],
        validateOnly: false,
      });
      expect(res.responses[0]!.errorCode).toBe(ErrorCode.INVALID_REQUEST);
      expect(res.responses[0]!.errorMessage).toContain(message);
    }
    // The broker still answers, and nothing changed.
    expect(b.broker.services.dynamicConfig.value("log.segment.bytes")).toBe(1048576);
  } finally {
    client.close();
  }
});

const op = (name: string, value: string | null) => ({ name, configOperation: 0, value });
