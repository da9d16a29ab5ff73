/**
 * Per-partition log settings: the topic-level keys Kafka lets an operator override per topic
 * (`segment.bytes`, `retention.ms`, ...), with Kafka's defaults. A UnifiedLog holds one of these
 * and reads it on every append, roll and retention pass, so a new object takes effect at once.
 */
import { ErrorCode, KafkaError } from "../protocol/errors.ts";

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
  /** cleanup.policy: stored and reported; only "delete" is implemented (no compaction). */
  readonly cleanupPolicy: string;
  /** flush.messages: fdatasync after this many appended records (NEVER by default). */
  readonly flushMessages: number;
  /** flush.ms: fdatasync when the oldest unflushed append is this old (NEVER by default). */
  readonly flushMs: number;
}

export const DEFAULT_LOG_CONFIG: LogConfig = Object.freeze({
  segmentBytes: 1024 * 1024 * 1024,
  segmentMs: 7 * 24 * 60 * 60 * 1000,
  segmentIndexBytes: 10 * 1024 * 1024,
  indexIntervalBytes: 4096,
  retentionMs: 7 * 24 * 60 * 60 * 1000,
  retentionBytes: -1,
  maxMessageBytes: 1024 * 1024 + 12,
  messageTimestampType: "CreateTime",
  cleanupPolicy: "delete",
  flushMessages: NEVER,
  flushMs: NEVER,
});

type NumericKey = Exclude<keyof LogConfig, "messageTimestampType" | "cleanupPolicy">;

interface NumericKeySpec {
  readonly field: NumericKey;
  readonly min: number;
  readonly max: number;
}

/** Kafka's topic-level config names for the numeric settings, with their legal range. */
const NUMERIC_TOPIC_KEYS: Readonly<Record<string, NumericKeySpec>> = {
  "segment.bytes": { field: "segmentBytes", min: 14, max: SEGMENT_BYTES_MAX },
  "segment.ms": { field: "segmentMs", min: 1, max: NEVER },
  "segment.index.bytes": { field: "segmentIndexBytes", min: 12, max: SEGMENT_BYTES_MAX },
  "index.interval.bytes": { field: "indexIntervalBytes", min: 0, max: SEGMENT_BYTES_MAX },
  "retention.ms": { field: "retentionMs", min: -1, max: NEVER },
  "retention.bytes": { field: "retentionBytes", min: -1, max: NEVER },
  "max.message.bytes": { field: "maxMessageBytes", min: 0, max: SEGMENT_BYTES_MAX },
  "flush.messages": { field: "flushMessages", min: 1, max: NEVER },
  "flush.ms": { field: "flushMs", min: 0, max: NEVER },
};

/** The topic-level keys this module understands, for describe/alter configs. */
export const TOPIC_CONFIG_KEYS: readonly string[] = [
  ...Object.keys(NUMERIC_TOPIC_KEYS),
  "message.timestamp.type",
  "cleanup.policy",
];

/**
 * Returns `base` with Kafka-named topic overrides applied, e.g.
 * `withTopicOverrides(DEFAULT_LOG_CONFIG, { "retention.ms": "60000" })`. Unknown keys are
 * ignored (they belong to other layers); a bad value throws KafkaError(INVALID_CONFIG).
 */
export function withTopicOverrides(
  base: LogConfig,
  overrides: Readonly<Record<string, string>>,
): LogConfig {
  const result: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(overrides)) {
    const numeric = NUMERIC_TOPIC_KEYS[key];
    if (numeric) result[numeric.field] = parseBounded(key, value, numeric.min, numeric.max);
    else if (key === "message.timestamp.type") result.messageTimestampType = parseType(value);
    else if (key === "cleanup.policy") result.cleanupPolicy = parsePolicy(value);
  }
  return Object.freeze(result as unknown as LogConfig);
}

function parseBounded(key: string, value: string, min: number, max: number): number {
  if (!/^-?\d+$/.test(value.trim())) invalid(key, value);
  // Long.MAX_VALUE and other values beyond 2^53 mean "never" in practice; clamp them to NEVER.
  const parsed = Math.min(Number(value), NEVER);
  if (parsed < min) invalid(key, value);
  return Math.min(parsed, max);
}

function parseType(value: string): TimestampTypeName {
  if (value === "CreateTime" || value === "LogAppendTime") return value;
  return invalid("message.timestamp.type", value);
}

function parsePolicy(value: string): string {
  const parts = value.split(",").map((p) => p.trim());
  if (parts.length === 0 || parts.some((p) => p !== "delete" && p !== "compact")) {
    invalid("cleanup.policy", value);
  }
  return parts.join(",");
}

function invalid(key: string, value: string): never {
  throw new KafkaError(ErrorCode.INVALID_CONFIG, `Invalid value ${value} for configuration ${key}`);
}
