import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ConfigResourceTypes, Kafka, logLevel } from "kafkajs";
import { loadConfig } from "../../src/config/load-config.ts";
import {
  ConfigSource,
  checkTopicConfig,
  describeTopicConfig,
  notAppliedTopicConfigs,
  parseTopicConfigs,
  TOPIC_CONFIG_KEYS,
  TopicConfigConflict,
} from "../../src/config/topic-config.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { KafkaClient } from "../support/kafka-client.ts";

const broker = (settings: Record<string, string> = {}) =>
  loadConfig({
    flags: Object.entries(settings).map(([key, value]) => ({ key, value, flag: "--set" })),
  }).config;

const LONG_MAX = "9223372036854775807";

/** Every topic key Kafka 3.9's LogConfig defines, at Kafka's default value. */
const KAFKA_39_DEFAULTS: Record<string, string> = {
  "cleanup.policy": "delete",
  "compression.gzip.level": "-1",
  "compression.lz4.level": "9",
  "compression.type": "producer",
  "compression.zstd.level": "3",
  "delete.retention.ms": "86400000",
  "file.delete.delay.ms": "60000",
  "flush.messages": LONG_MAX,
  "flush.ms": LONG_MAX,
  "follower.replication.throttled.replicas": "",
  "index.interval.bytes": "4096",
  "leader.replication.throttled.replicas": "",
  "local.retention.bytes": "-2",
  "local.retention.ms": "-2",
  "max.compaction.lag.ms": LONG_MAX,
  "max.message.bytes": "1048588",
  "message.downconversion.enable": "true",
  "message.format.version": "3.0-IV1",
  "message.timestamp.after.max.ms": LONG_MAX,
  "message.timestamp.before.max.ms": LONG_MAX,
  "message.timestamp.difference.max.ms": LONG_MAX,
  "message.timestamp.type": "CreateTime",
  "min.cleanable.dirty.ratio": "0.5",
  "min.compaction.lag.ms": "0",
  "min.insync.replicas": "1",
  preallocate: "false",
  "remote.log.copy.disable": "false",
  "remote.log.delete.on.disable": "false",
  "remote.storage.enable": "false",
  "retention.bytes": "-1",
  "retention.ms": "604800000",
  "segment.bytes": "1073741824",
  "segment.index.bytes": "10485760",
  "segment.jitter.ms": "0",
  "segment.ms": "604800000",
  "unclean.leader.election.enable": "false",
};

describe("Kafka 3.9's topic keys", () => {
  test("exactly Kafka's key set, each described at Kafka's default when nothing sets it", () => {
    expect(Object.keys(TOPIC_CONFIG_KEYS).sort()).toEqual(Object.keys(KAFKA_39_DEFAULTS).sort());
    for (const [name, value] of Object.entries(KAFKA_39_DEFAULTS)) {
      const d = describeTopicConfig(name as keyof typeof TOPIC_CONFIG_KEYS, {}, broker());
      expect({ name, value: d.value }).toEqual({ name, value });
    }
  });

  test("every key is accepted at Kafka's default and formats back to the same text", () => {
    const overrides = parseTopicConfigs(
      Object.entries(KAFKA_39_DEFAULTS).map(([name, value]) => ({ name, value })),
    );
    for (const [name, value] of Object.entries(KAFKA_39_DEFAULTS)) {
      const d = describeTopicConfig(name as keyof typeof TOPIC_CONFIG_KEYS, overrides, broker());
      expect({ name, value: d.value, source: d.source }).toEqual({
        name,
        value,
        source: ConfigSource.DYNAMIC_TOPIC_CONFIG,
      });
    }
    expect(() => checkTopicConfig(overrides, broker())).not.toThrow();
    expect(notAppliedTopicConfigs(overrides).map(([n]) => n)).not.toContain(
      "unclean.leader.election.enable",
    );
  });

  test("gzip and zstd levels are applied (no WARN); lz4's level is not (lz4-napi has none)", () => {
    const overrides = parseTopicConfigs([
      { name: "compression.gzip.level", value: "1" },
      { name: "compression.lz4.level", value: "1" },
      { name: "compression.zstd.level", value: "-5" },
    ]);
    expect(notAppliedTopicConfigs(overrides)).toEqual([["compression.lz4.level", "1"]]);
  });

  test("bad values are refused with Kafka's ConfigException text", () => {
    const refused = (name: string, value: string) => {
      try {
        parseTopicConfigs([{ name, value }]);
      } catch (e) {
        return (e as Error).message;
      }
      throw new Error(`${name}=${value} was accepted`);
    };
    const cases: [string, string, string][] = [
      ["segment.jitter.ms", "-1", "Value must be at least 0"],
      ["segment.index.bytes", "3", "Value must be at least 4"],
      ["min.cleanable.dirty.ratio", "1.5", "Value must be no more than 1"],
      ["min.cleanable.dirty.ratio", "half", "Not a number of type DOUBLE"],
      ["max.compaction.lag.ms", "0", "Value must be at least 1"],
      ["delete.retention.ms", "-1", "Value must be at least 0"],
      ["local.retention.ms", "-3", "Value must be at least -2"],
      ["compression.gzip.level", "0", "Value must be between 1 and 9 or equal to -1"],
      ["compression.gzip.level", "10", "Value must be between 1 and 9 or equal to -1"],
      ["compression.lz4.level", "18", "Value must be no more than 17"],
      ["compression.zstd.level", "23", "Value must be no more than 22"],
      ["preallocate", "yes", "Expected value to be either true or false"],
      ["message.format.version", "3.10", "Version 3.10 is not a valid version"],
      ["message.format.version", "2.8-IV2", "Version 2.8-IV2 is not a valid version"],
      ["message.timestamp.before.max.ms", "-5", "Value must be at least 0"],
      ["segment.bytes", "2147483648", "Not a number of type INT"],
    ];
    for (const [name, value, reason] of cases) {
      const shown =
        /^-?\d+$/.test(value) && !reason.startsWith("Not") ? String(Number(value)) : value;
      expect(refused(name, value)).toBe(
        `Invalid value ${shown} for configuration ${name}: ${reason}`,
      );
    }
    expect(refused("leader.replication.throttled.replicas", "0:1,x")).toBe(
      "Invalid value [0:1, x] for configuration leader.replication.throttled.replicas: " +
        "leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the " +
        "following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...",
    );
  });

  test("values Kafka accepts that look odd are accepted", () => {
    const o = parseTopicConfigs([
      { name: "leader.replication.throttled.replicas", value: "*" },
      { name: "follower.replication.throttled.replicas", value: "0:1, 1:2" },
      { name: "message.format.version", value: "2.8" },
      { name: "compression.zstd.level", value: "-5" },
      { name: "min.cleanable.dirty.ratio", value: "1" },
      { name: "unclean.leader.election.enable", value: "TRUE" },
    ]);
    expect(o["follower.replication.throttled.replicas"]).toEqual(["0:1", "1:2"]);
    expect(describeTopicConfig("min.cleanable.dirty.ratio", o, broker()).value).toBe("1.0");
    expect(o["unclean.leader.election.enable"]).toBe(true);
  });

  test("keys that conflict, or need tiered storage, are refused as Kafka refuses them", () => {
    const conflict = parseTopicConfigs([{ name: "min.compaction.lag.ms", value: "10" }]);
    expect(() =>
      checkTopicConfig(conflict, broker({ "log.cleaner.max.compaction.lag.ms": "5" })),
    ).toThrow(
      new TopicConfigConflict(
        "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)",
      ),
    );
    const remote = parseTopicConfigs([{ name: "remote.storage.enable", value: "true" }]);
    expect(() => checkTopicConfig(remote, broker())).toThrow(
      "Tiered Storage functionality is disabled in the broker",
    );
  });

  test("broker keys give the default, listed as synonyms with their source", () => {
    const d = describeTopicConfig(
      "segment.jitter.ms",
      {},
      broker({ "log.roll.jitter.hours": "1" }),
    );
    expect(d).toMatchObject({ value: "3600000", source: ConfigSource.STATIC_BROKER_CONFIG });
    expect(d.synonyms).toEqual([
      { name: "log.roll.jitter.hours", value: "1", source: ConfigSource.STATIC_BROKER_CONFIG },
      { name: "log.roll.jitter.hours", value: "0", source: ConfigSource.DEFAULT_CONFIG },
    ]);
    const ratio = describeTopicConfig("min.cleanable.dirty.ratio", {}, broker());
    expect(ratio.synonyms).toEqual([
      {
        name: "log.cleaner.min.cleanable.ratio",
        value: "0.5",
        source: ConfigSource.DEFAULT_CONFIG,
      },
    ]);
    const throttled = describeTopicConfig("leader.replication.throttled.replicas", {}, broker());
    expect(throttled).toMatchObject({
      value: "",
      source: ConfigSource.DEFAULT_CONFIG,
      synonyms: [],
    });
  });
});

describe("with kafkajs against a broker", () => {
  let b: InProcessBroker;
  let kafka: Kafka;
  beforeAll(async () => {
    b = await startInProcessBroker();
    kafka = new Kafka({ brokers: [b.bootstrap], logLevel: logLevel.NOTHING });
  }, 60_000);
  afterAll(() => b.stop());

  test("a topic created with every Kafka 3.9 key at its default reports each as a topic config", async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const configEntries = Object.entries(KAFKA_39_DEFAULTS).map(([name, value]) => ({
        name,
        value,
      }));
      expect(await admin.createTopics({ topics: [{ topic: "all-keys", configEntries }] })).toBe(
        true,
      );
      const described = await admin.describeConfigs({
        includeSynonyms: true,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: "all-keys" }],
      });
      const entries = described.resources[0]!.configEntries;
      expect(entries.length).toBe(Object.keys(KAFKA_39_DEFAULTS).length);
      for (const e of entries) {
        expect({ name: e.configName, value: e.configValue, source: e.configSource }).toEqual({
          name: e.configName,
          value: KAFKA_39_DEFAULTS[e.configName]!,
          source: ConfigSource.DYNAMIC_TOPIC_CONFIG,
        });
      }
      expect(
        b.logger.lines.filter((l) => l.includes("all-keys") && l.includes("not applied")),
      ).toEqual([]);
    } finally {
      await admin.disconnect();
    }
  });

  test("a bad value is refused with INVALID_CONFIG and Kafka's message; nothing is created", async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const error = await admin
        .createTopics({
          topics: [
            { topic: "bad-jitter", configEntries: [{ name: "segment.jitter.ms", value: "-1" }] },
          ],
        })
        .then(
          () => null,
          (e: unknown) => e as { errors?: { type: string; message: string }[] },
        );
      // kafkajs shows its own text for the code; the wire carries Kafka's message (below).
      expect(error?.errors?.[0]?.type).toBe("INVALID_CONFIG");
      expect(await admin.listTopics()).not.toContain("bad-jitter");
      const client = await KafkaClient.connect(b.port);
      try {
        const res = await client.request(ApiKey.CreateTopics, 7, {
          topics: [
            {
              name: "bad-jitter",
              numPartitions: 1,
              replicationFactor: 1,
              assignments: [],
              configs: [{ name: "segment.jitter.ms", value: "-1" }],
            },
          ],
        });
        expect(res.topics[0]).toMatchObject({
          errorCode: ErrorCode.INVALID_CONFIG,
          errorMessage:
            "Invalid value -1 for configuration segment.jitter.ms: Value must be at least 0",
        });
      } finally {
        client.close();
      }
    } finally {
      await admin.disconnect();
    }
  });

  test("a key whose behaviour Quill lacks is stored and logged once per topic at WARN", async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.createTopics({ topics: [{ topic: "unclean", configEntries: [] }] });
      const set = (value: string) =>
        admin.alterConfigs({
          validateOnly: false,
          resources: [
            {
              type: ConfigResourceTypes.TOPIC,
              name: "unclean",
              configEntries: [{ name: "preallocate", value }],
            },
          ],
        });
      await set("true");
      await set("true");
      const described = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [
          {
            type: ConfigResourceTypes.TOPIC,
            name: "unclean",
            configNames: ["preallocate"],
          },
        ],
      });
      expect(described.resources[0]!.configEntries[0]).toMatchObject({
        configValue: "true",
        configSource: ConfigSource.DYNAMIC_TOPIC_CONFIG,
      });
      const warned = b.logger.lines.filter((l) => l.includes("preallocate"));
      expect(warned).toEqual([
        "WARN topic unclean: config preallocate=true is accepted but not applied " +
          "(see the README's topic keys)",
      ]);
    } finally {
      await admin.disconnect();
    }
  });

  test("timestamp bounds: a CreateTime record out of range is INVALID_TIMESTAMP; difference.max.ms is the fallback", async () => {
    const admin = kafka.admin();
    await admin.connect();
    const producer = kafka.producer({ retry: { retries: 0 } });
    await producer.connect();
    try {
      const hourMs = "3600000";
      await admin.createTopics({
        topics: [
          {
            topic: "ts-bounded",
            configEntries: [
              { name: "message.timestamp.before.max.ms", value: hourMs },
              { name: "message.timestamp.after.max.ms", value: hourMs },
            ],
          },
          {
            topic: "ts-difference",
            configEntries: [{ name: "message.timestamp.difference.max.ms", value: hourMs }],
          },
        ],
      });
      const send = (topic: string, offsetMs: number) =>
        producer
          .send({
            topic,
            acks: -1,
            messages: [{ value: "v", timestamp: String(Date.now() + offsetMs) }],
          })
          .then(
            () => "NONE",
            (e: { type?: string }) => e.type ?? String(e),
          );
      expect(await send("ts-bounded", 0)).toBe("NONE");
      expect(await send("ts-bounded", -2 * 3600_000)).toBe("INVALID_TIMESTAMP");
      expect(await send("ts-bounded", 2 * 3600_000)).toBe("INVALID_TIMESTAMP");
      expect(await send("ts-difference", 2 * 3600_000)).toBe("INVALID_TIMESTAMP");
      expect(await send("ts-difference", -60_000)).toBe("NONE");
      expect(b.logger.lines.filter((l) => l.includes("ts-") && l.includes("not applied"))).toEqual(
        [],
      );
    } finally {
      await producer.disconnect();
      await admin.disconnect();
    }
  });
});
