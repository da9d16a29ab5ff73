/**
 * Per-partition log settings: the topic-level keys Kafka lets an operator override per topic
 * (`segment.bytes`, `retention.ms`, ...), with Kafka's defaults. A UnifiedLog holds one of these
 * and reads it on every append, roll and retention pass, so a new object takes effect at once.
 * Parsing Kafka's config names and resolving broker defaults is the config layer's job
 * (src/server/log-config-for-topic.ts builds these objects).
 */
import type { CompressionPolicy } from "./compression-policy.ts";

/**
 * "Never" for settings whose Kafka default is Long.MAX_VALUE (flush.messages, flush.ms). A
 * JavaScript number cannot hold Long.MAX_VALUE exactly, and any value this large never fires.
 */
export const NEVER = Number.MAX_SAFE_INTEGER;

/** Byte positions inside a segment are int32 in the index format, so a segment is below 2 GiB. */
export const SEGMENT_BYTES_MAX = 0x7fffffff;

export type TimestampTypeName = "CreateTime" | "LogAppendTime";

export interface LogConfig {
  /** segment.bytes: roll to a new segment before the active one would exceed this. */
  readonly segmentBytes: number;
  /** segment.ms: roll when the active segment's first batch is this much older than new ones. */
  readonly segmentMs: number;
  /** segment.jitter.ms: each segment rolls up to a random part of this before segmentMs. */
  readonly segmentJitterMs: number;
  /** file.delete.delay.ms: a segment retention deletes is renamed .deleted, removed this later. */
  readonly fileDeleteDelayMs: number;
  /** segment.index.bytes: the largest offset index (and time index) file; a full index rolls. */
  readonly segmentIndexBytes: number;
  /** index.interval.bytes: bytes of batches between two offset index entries. */
  readonly indexIntervalBytes: number;
  /** retention.ms: delete sealed segments whose newest timestamp is older; -1 keeps forever. */
  readonly retentionMs: number;
  /** retention.bytes: delete the oldest sealed segments while the log is larger; -1 = no limit. */
  readonly retentionBytes: number;
  /** max.message.bytes: the largest batch an append accepts. */
  readonly maxMessageBytes: number;
  /** message.timestamp.type: LogAppendTime makes the broker stamp every batch it appends. */
  readonly messageTimestampType: TimestampTypeName;
  /**
   * message.timestamp.before.max.ms / after.max.ms (falling back to the deprecated
   * difference.max.ms): a CreateTime batch timestamped further from the broker's clock is
   * refused with INVALID_TIMESTAMP. NEVER: no bound.
   */
  readonly messageTimestampBeforeMaxMs: number;
  readonly messageTimestampAfterMaxMs: number;
  /**
   * cleanup.policy: `delete` (retention by time and size), `compact` (the LogCleaner keeps the
   * latest record of every key) or both, comma-separated.
   */
  readonly cleanupPolicy: string;
  /** min.cleanable.dirty.ratio: clean once dirty bytes / all bytes exceed this. */
  readonly minCleanableDirtyRatio: number;
  /** delete.retention.ms: how long a tombstone outlives the cleaning that first kept it. */
  readonly deleteRetentionMs: number;
  /** min.compaction.lag.ms: records younger than this stay uncompacted. */
  readonly minCompactionLagMs: number;
  /** max.compaction.lag.ms: a dirty record older than this makes its log eligible at once. */
  readonly maxCompactionLagMs: number;
  /** flush.messages: fdatasync after this many appended records (NEVER by default). */
  readonly flushMessages: number;
  /** compression.type: `producer` stores batches as sent; a codec name recompresses to it. */
  readonly compressionType: CompressionPolicy;
  /** compression.gzip.level: used only when the leader recompresses to gzip (-1: default). */
  readonly gzipLevel: number;
  /** compression.zstd.level: used only when the leader recompresses to zstd. */
  readonly zstdLevel: number;
  /** flush.ms: fdatasync when the oldest unflushed append is this old (NEVER by default). */
  readonly flushMs: number;
}

export const DEFAULT_LOG_CONFIG: LogConfig = Object.freeze({
  segmentBytes: 1024 * 1024 * 1024,
  segmentMs: 7 * 24 * 60 * 60 * 1000,
  segmentJitterMs: 0,
  // Kafka's default is 60 s (the broker passes it); storage alone removes files at once.
  fileDeleteDelayMs: 0,
  segmentIndexBytes: 10 * 1024 * 1024,
  indexIntervalBytes: 4096,
  retentionMs: 7 * 24 * 60 * 60 * 1000,
  retentionBytes: -1,
  maxMessageBytes: 1024 * 1024 + 12,
  messageTimestampType: "CreateTime",
  messageTimestampBeforeMaxMs: NEVER,
  messageTimestampAfterMaxMs: NEVER,
  cleanupPolicy: "delete",
  minCleanableDirtyRatio: 0.5,
  deleteRetentionMs: 24 * 60 * 60 * 1000,
  minCompactionLagMs: 0,
  maxCompactionLagMs: NEVER,
  flushMessages: NEVER,
  flushMs: NEVER,
  compressionType: "producer",
  gzipLevel: -1,
  zstdLevel: 3,
});

/** True when cleanup.policy includes `compact`. */
export function isCompacted(config: LogConfig): boolean {
  return config.cleanupPolicy.split(",").includes("compact");
}

/** True when cleanup.policy includes `delete`. */
export function hasDeletePolicy(config: LogConfig): boolean {
  return config.cleanupPolicy.split(",").includes("delete");
}
