import { describe, expect, test } from "bun:test";
import { ConfigError } from "../../src/config/config-error.ts";
import { ConfigType } from "../../src/config/config-key.ts";
import { loadConfig } from "../../src/config/load-config.ts";
import {
  ConfigSource,
  describeTopicConfig,
  formatTopicConfigs,
  parseTopicConfigs,
  TOPIC_CONFIG_KEYS,
  type TopicConfigKey,
  topicConfig,
} from "../../src/config/topic-config.ts";

const broker = (settings: Record<string, string> = {}) =>
  loadConfig({
    flags: Object.entries(settings).map(([key, value]) => ({ key, value, flag: "--set" })),
  }).config;

describe("parseTopicConfigs", () => {
  test("parses every key from its string form", () => {
    const overrides = parseTopicConfigs([
      { name: "retention.ms", value: "-1" },
      { name: "segment.bytes", value: "1024" },
      { name: "cleanup.policy", value: "compact,delete" },
      { name: "message.timestamp.type", value: "LogAppendTime" },
      { name: "max.message.bytes", value: "100" },
      { name: "flush.messages", value: "9223372036854775807" },
    ]);
    expect(overrides).toEqual({
      "retention.ms": -1,
      "segment.bytes": 1024,
      "cleanup.policy": ["compact", "delete"],
      "message.timestamp.type": "LogAppendTime",
      "max.message.bytes": 100,
      "flush.messages": 2 ** 63,
    });
    expect(formatTopicConfigs(overrides)).toEqual({
      "retention.ms": "-1",
      "segment.bytes": "1024",
      "cleanup.policy": "compact,delete",
      "message.timestamp.type": "LogAppendTime",
      "max.message.bytes": "100",
      "flush.messages": "9223372036854775807",
    });
  });

  test("unknown keys, null values and bad values are ConfigErrors naming the key", () => {
    const fail = (name: string, value: string | null) => () => parseTopicConfigs([{ name, value }]);
    expect(fail("log.retention.ms", "1")).toThrow(
      new ConfigError("Unknown topic config name: log.retention.ms"),
    );
    expect(fail("retention.ms", null)).toThrow(
      new ConfigError("Null value not supported for topic configs: retention.ms"),
    );
    expect(fail("retention.ms", "-2")).toThrow(
      new ConfigError("Invalid value -2 for configuration retention.ms: Value must be at least -1"),
    );
    expect(fail("segment.bytes", "13")).toThrow(
      "Invalid value 13 for configuration segment.bytes: Value must be at least 14",
    );
    expect(fail("segment.bytes", "x")).toThrow(
      "Invalid value x for configuration segment.bytes: Not a number of type INT",
    );
    expect(fail("cleanup.policy", "")).toThrow("cleanup.policy");
    expect(fail("cleanup.policy", "compact,foo")).toThrow(
      "Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete",
    );
    expect(fail("compression.type", "brotli")).toThrow(
      "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
    );
    expect(fail("min.insync.replicas", "0")).toThrow("min.insync.replicas");
  });
});

describe("topicConfig", () => {
  test("overrides win; other keys follow the broker, including resolved retention and roll", () => {
    const config = topicConfig(
      { "segment.bytes": 2048 },
      broker({
        "log.retention.minutes": "10",
        "log.roll.hours": "2",
        "log.segment.bytes": "4096",
        "message.max.bytes": "77",
      }),
    );
    expect(config["segment.bytes"]).toBe(2048);
    expect(config["retention.ms"]).toBe(600_000);
    expect(config["segment.ms"]).toBe(7_200_000);
    expect(config["max.message.bytes"]).toBe(77);
    expect(config["flush.ms"]).toBe(2 ** 63); // log.flush.interval.ms unset: never
    expect(Object.keys(config).sort()).toEqual(Object.keys(TOPIC_CONFIG_KEYS).sort());
  });
});

describe("describeTopicConfig", () => {
  test("a topic override: DYNAMIC_TOPIC_CONFIG, then the broker default as a synonym", () => {
    const d = describeTopicConfig("segment.bytes", { "segment.bytes": 2048 }, broker());
    expect(d).toMatchObject({
      name: "segment.bytes",
      value: "2048",
      source: ConfigSource.DYNAMIC_TOPIC_CONFIG,
      isDefault: false,
      readOnly: false,
      sensitive: false,
      type: ConfigType.INT,
    });
    expect(d.synonyms).toEqual([
      { name: "segment.bytes", value: "2048", source: ConfigSource.DYNAMIC_TOPIC_CONFIG },
      { name: "log.segment.bytes", value: "1073741824", source: ConfigSource.DEFAULT_CONFIG },
    ]);
  });

  test("a broker key that was set: STATIC_BROKER_CONFIG with every synonym that applies", () => {
    const d = describeTopicConfig("retention.ms", {}, broker({ "log.retention.minutes": "5" }));
    expect(d.value).toBe("300000");
    expect(d.source).toBe(ConfigSource.STATIC_BROKER_CONFIG);
    expect(d.type).toBe(ConfigType.LONG);
    expect(d.synonyms).toEqual([
      { name: "log.retention.minutes", value: "5", source: ConfigSource.STATIC_BROKER_CONFIG },
      { name: "log.retention.hours", value: "168", source: ConfigSource.DEFAULT_CONFIG },
    ]);
  });

  test("nothing set: DEFAULT_CONFIG and isDefault, for every key", () => {
    for (const name of Object.keys(TOPIC_CONFIG_KEYS) as TopicConfigKey[]) {
      const d = describeTopicConfig(name, {}, broker());
      expect(d.source).toBe(ConfigSource.DEFAULT_CONFIG);
      expect(d.isDefault).toBe(true);
      expect(d.value).not.toBeNull();
      expect(d.documentation.length).toBeGreaterThan(0);
    }
    expect(describeTopicConfig("flush.ms", {}, broker()).value).toBe("9223372036854775807");
    expect(describeTopicConfig("cleanup.policy", {}, broker()).value).toBe("delete");
  });
});
