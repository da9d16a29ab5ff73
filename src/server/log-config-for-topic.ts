import type { BrokerConfig } from "../config/broker-config.ts";
import { LONG_MAX_AS_NUMBER } from "../config/config-key.ts";
import {
  type TopicConfig,
  type TopicConfigOverrides,
  topicConfig,
} from "../config/topic-config.ts";
import { type LogConfig, NEVER } from "../storage/log-config.ts";

/**
 * The storage settings of one topic: its overrides over the broker's defaults (the config
 * layer resolves Kafka's synonyms), translated to the storage layer's units.
 */
export function logConfigFor(overrides: TopicConfigOverrides, broker: BrokerConfig): LogConfig {
  const t = topicConfig(overrides, broker);
  return Object.freeze({
    segmentBytes: t["segment.bytes"],
    segmentMs: clampNever(t["segment.ms"]),
    segmentJitterMs: clampNever(t["segment.jitter.ms"]),
    fileDeleteDelayMs: clampNever(t["file.delete.delay.ms"]),
    segmentIndexBytes: t["segment.index.bytes"],
    indexIntervalBytes: t["index.interval.bytes"],
    retentionMs: clampNever(t["retention.ms"]),
    retentionBytes: clampNever(t["retention.bytes"]),
    maxMessageBytes: t["max.message.bytes"],
    messageTimestampType: t["message.timestamp.type"],
    // Kafka 3.9: a bound left at its default (Long.MAX_VALUE) takes difference.max.ms.
    messageTimestampBeforeMaxMs: clampNever(orDifference(t["message.timestamp.before.max.ms"], t)),
    messageTimestampAfterMaxMs: clampNever(orDifference(t["message.timestamp.after.max.ms"], t)),
    cleanupPolicy: t["cleanup.policy"].join(","),
    minCleanableDirtyRatio: t["min.cleanable.dirty.ratio"],
    deleteRetentionMs: clampNever(t["delete.retention.ms"]),
    minCompactionLagMs: clampNever(t["min.compaction.lag.ms"]),
    maxCompactionLagMs: clampNever(t["max.compaction.lag.ms"]),
    flushMessages: clampNever(t["flush.messages"]),
    flushMs: clampNever(t["flush.ms"]),
    compressionType: t["compression.type"],
    gzipLevel: t["compression.gzip.level"],
    zstdLevel: t["compression.zstd.level"],
  });
}

const orDifference = (boundMs: number, t: TopicConfig): number =>
  boundMs >= LONG_MAX_AS_NUMBER ? t["message.timestamp.difference.max.ms"] : boundMs;

/** Long.MAX_VALUE-style "never" values are beyond 2^53; storage uses NEVER for them. */
const clampNever = (n: number): number => Math.min(n, NEVER);
