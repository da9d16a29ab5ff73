import { describe, expect, test } from "bun:test";
import {
  describeBrokerConfigs,
  topicBrokerSynonyms,
} from "../../src/config/broker-config-description.ts";
import { ConfigError } from "../../src/config/config-error.ts";
import { DynamicBrokerConfig } from "../../src/config/dynamic-broker-config.ts";
import { loadConfig } from "../../src/config/load-config.ts";
import { ConfigSource, describeTopicConfig } from "../../src/config/topic-config.ts";

const dynamicOver = (settings: Record<string, string> = {}) =>
  new DynamicBrokerConfig(
    loadConfig({
      flags: Object.entries(settings).map(([key, value]) => ({ key, value, flag: "--set" })),
    }).config,
  );

const all = () => true;
const entry = (d: DynamicBrokerConfig, level: "broker" | "default", name: string) =>
  describeBrokerConfigs(d, level, (n) => n === name)[0];

describe("DynamicBrokerConfig", () => {
  test("a broker's own value beats the cluster default, which beats the static file", () => {
    const d = dynamicOver({ "log.segment.bytes": "4096" });
    expect(d.value("log.segment.bytes")).toBe(4096);
    d.update("default", new Map([["log.segment.bytes", "8192"]]));
    expect(d.value("log.segment.bytes")).toBe(8192);
    d.update("broker", new Map([["log.segment.bytes", "16384"]]));
    expect(d.value("log.segment.bytes")).toBe(16384);
    d.update("broker", new Map());
    expect(d.value("log.segment.bytes")).toBe(8192);
  });

  test("a dynamic hours key decides retention unless an ms key is set anywhere", () => {
    const d = dynamicOver();
    d.update("default", new Map([["log.retention.hours", "1"]]));
    expect(d.value("log.retention.ms")).toBe(3_600_000);
    const withMs = dynamicOver({ "log.retention.ms": "5000" });
    withMs.update("default", new Map([["log.retention.hours", "1"]]));
    expect(withMs.value("log.retention.ms")).toBe(5000);
  });

  test("listeners hear only the keys that changed, and only the keys they asked for", () => {
    const d = dynamicOver();
    const heard: string[][] = [];
    const throttles: number[] = [];
    d.onChange((_, changed) => heard.push([...changed]));
    d.onChange(
      (c) => throttles.push(c["leader.replication.throttled.rate"]),
      ["leader.replication.throttled.rate"],
    );
    d.update("broker", new Map([["message.max.bytes", "2000"]]));
    d.update("broker", new Map([["message.max.bytes", "2000"]]));
    d.update("broker", new Map([["leader.replication.throttled.rate", "1000"]]));
    expect(heard).toEqual([
      ["message.max.bytes"],
      ["message.max.bytes", "leader.replication.throttled.rate"],
    ]);
    expect(throttles).toEqual([1000]);
  });

  test("validate refuses static keys, bad values and retention 0 with Kafka's messages", () => {
    const d = dynamicOver();
    const refusal = (texts: Record<string, string>, level: "broker" | "default" = "broker") => {
      try {
        d.validate(level, new Map(Object.entries(texts)));
        return null;
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        return (e as Error).message;
      }
    };
    expect(refusal({ "log.dirs": "/x", "broker.id": "3" })).toBe(
      "Cannot update these configs dynamically: Set(log.dirs, broker.id)",
    );
    expect(refusal({ "log.retention.ms": "abc" })).toBe(
      "Invalid value abc for configuration log.retention.ms: Not a number of type LONG",
    );
    expect(refusal({ "log.segment.bytes": "13" })).toBe(
      "Invalid value 13 for configuration log.segment.bytes: Value must be at least 14",
    );
    expect(refusal({ "ssl.keystore.location": "/k" })).toContain("only per-listener");
    expect(refusal({ listeners: "PLAINTEXT://:9092" })).toContain("only at start");
    expect(refusal({ "log.retention.ms": "0" }, "default")).toContain("log.retention.ms");
    expect(refusal({ "num.io.threads": "16", "my.plugin.key": "x" })).toBeNull();
    expect(d.value("log.segment.bytes")).toBe(1073741824); // validate changes nothing
  });
});

describe("describeBrokerConfigs", () => {
  test("sources and synonyms level by level, as Kafka's ZooKeeper-mode broker lists them", () => {
    const d = dynamicOver({ "log.retention.minutes": "5", "num.partitions": "6" });
    d.update("default", new Map([["log.retention.ms", "7000"]]));
    d.update("broker", new Map([["log.cleaner.backoff.ms", "100"]]));
    expect(entry(d, "broker", "log.retention.ms")).toMatchObject({
      value: "7000",
      source: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
      readOnly: false,
      synonyms: [
        { name: "log.retention.ms", value: "7000", source: 3 },
        { name: "log.retention.minutes", value: "5", source: 4 },
        { name: "log.retention.hours", value: "168", source: 5 },
      ],
    });
    expect(entry(d, "broker", "log.cleaner.backoff.ms")).toMatchObject({
      value: "100",
      source: ConfigSource.DYNAMIC_BROKER_CONFIG,
      synonyms: [
        { name: "log.cleaner.backoff.ms", value: "100", source: 2 },
        { name: "log.cleaner.backoff.ms", value: "15000", source: 5 },
      ],
    });
    expect(entry(d, "broker", "num.partitions")).toMatchObject({
      value: "6",
      source: ConfigSource.STATIC_BROKER_CONFIG,
      readOnly: true,
    });
    expect(entry(d, "broker", "message.max.bytes")).toMatchObject({
      value: "1048588",
      source: ConfigSource.DEFAULT_CONFIG,
      isDefault: true,
    });
  });

  test("the cluster default lists only what is stored there, with its own synonyms", () => {
    const d = dynamicOver();
    expect(describeBrokerConfigs(d, "default", all)).toEqual([]);
    d.update("default", new Map([["message.max.bytes", "2000000"]]));
    d.update("broker", new Map([["message.max.bytes", "3000000"]]));
    const entries = describeBrokerConfigs(d, "default", all);
    expect(entries.map((e) => [e.name, e.value, e.source])).toEqual([
      ["message.max.bytes", "2000000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG],
    ]);
    expect(entries[0]!.synonyms).toEqual([
      { name: "message.max.bytes", value: "2000000", source: 3 },
    ]);
  });

  test("a topic without an override shows the changed broker default and its source", () => {
    const d = dynamicOver();
    d.update("default", new Map([["log.retention.ms", "60000"]]));
    const t = describeTopicConfig("retention.ms", {}, d.current, topicBrokerSynonyms(d));
    expect(t.value).toBe("60000");
    expect(t.source).toBe(ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG);
  });
});
