// The broker's log.cleanup.policy and log.cleaner.* defaults reach a topic's storage settings
// when the topic does not override them, as Kafka's LogConfig synonyms do.
import { expect, test } from "bun:test";
import { loadConfig } from "../../src/config/load-config.ts";
import { logConfigFor } from "../../src/server/log-config-for-topic.ts";

const broker = (settings: Record<string, string> = {}) =>
  loadConfig({
    flags: Object.entries(settings).map(([key, value]) => ({ key, value, flag: "--set" })),
  }).config;

test("compaction settings come from the broker's defaults unless the topic sets them", () => {
  const defaults = broker({
    "log.cleanup.policy": "compact,delete",
    "log.cleaner.delete.retention.ms": "1000",
    "log.cleaner.min.cleanable.ratio": "0.25",
    "log.cleaner.min.compaction.lag.ms": "2000",
    "log.cleaner.max.compaction.lag.ms": "3000",
  });
  expect(logConfigFor({}, defaults)).toMatchObject({
    cleanupPolicy: "compact,delete",
    deleteRetentionMs: 1000,
    minCleanableDirtyRatio: 0.25,
    minCompactionLagMs: 2000,
    maxCompactionLagMs: 3000,
  });
  expect(logConfigFor({}, broker())).toMatchObject({ cleanupPolicy: "delete" });
  const topic = logConfigFor(
    { "cleanup.policy": ["compact"], "delete.retention.ms": 5, "min.cleanable.dirty.ratio": 0.9 },
    defaults,
  );
  expect(topic).toMatchObject({
    cleanupPolicy: "compact",
    deleteRetentionMs: 5,
    minCleanableDirtyRatio: 0.9,
    minCompactionLagMs: 2000,
  });
});
