/**
 * Every topic config key Kafka 3.9 accepts (its LogConfig), with Kafka's validation, the broker
 * keys that give its default (Kafka's synonyms, strongest first) and what Quill does with it.
 */
import {
  type BrokerConfig,
  type BrokerConfigKey,
  CLEANUP_POLICIES,
  COMPRESSION_TYPES,
  TIMESTAMP_TYPES,
} from "./broker-config.ts";
import {
  boolean,
  double,
  int,
  LONG_MAX_AS_NUMBER,
  list,
  long,
  oneOf,
  type ValueType,
} from "./config-key.ts";
import {
  GZIP_LEVEL,
  LZ4_LEVEL,
  messageFormatVersion,
  throttledReplicas,
  ZSTD_LEVEL,
} from "./kafka-value-types.ts";

/** A topic key: its type, and the broker keys that give its default (Kafka's synonyms). */
export interface TopicKey<T> {
  readonly valueType: ValueType<T>;
  /** Strongest first, as DescribeConfigs lists them. */
  readonly synonyms: readonly BrokerConfigKey[];
  readonly fromBroker: (broker: BrokerConfig) => T;
  readonly doc: string;
  /**
   * Set for keys Quill accepts and stores but does not act on: Kafka's default (as formatted),
   * whose behaviour Quill has anyway. A topic that sets another value gets one WARN line.
   */
  readonly notApplied?: { readonly inert: string };
}

const topicKey = <T>(
  valueType: ValueType<T>,
  synonyms: readonly BrokerConfigKey[],
  fromBroker: (broker: BrokerConfig) => T,
  doc: string,
  notApplied?: { readonly inert: string },
): TopicKey<T> => ({ valueType, synonyms, fromBroker, doc, notApplied });

/** Kafka's default for keys no broker key sets; the same for every broker. */
const fixed =
  <T>(value: T) =>
  (): T =>
    value;

/** The topic keys whose behaviour is log storage and produce validation. */
const STORAGE_KEYS = {
  "cleanup.policy": topicKey(
    list("policies", { allowed: CLEANUP_POLICIES, minItems: 1 }),
    ["log.cleanup.policy"],
    (b) => [...b["log.cleanup.policy"]],
    "delete: drop old segments by age and size. compact: the log cleaner keeps the latest " +
      "record of every key (time and size retention apply only with compact,delete).",
  ),
  "compression.type": topicKey(
    oneOf(COMPRESSION_TYPES),
    ["compression.type"],
    (b) => b["compression.type"],
    "Codec batches are stored with; producer keeps the producer's.",
  ),
  "compression.gzip.level": topicKey(
    GZIP_LEVEL,
    ["compression.gzip.level"],
    (b) => b["compression.gzip.level"],
    "gzip level when the broker recompresses to gzip (-1: zlib's default, 6).",
  ),
  "compression.lz4.level": topicKey(
    LZ4_LEVEL,
    ["compression.lz4.level"],
    (b) => b["compression.lz4.level"],
    "lz4 level when the broker recompresses to lz4; not applied: Quill's lz4 frame encoder " +
      "(lz4-napi) has one level.",
    { inert: "9" },
  ),
  "compression.zstd.level": topicKey(
    ZSTD_LEVEL,
    ["compression.zstd.level"],
    (b) => b["compression.zstd.level"],
    "zstd level when the broker recompresses to zstd.",
  ),
  "file.delete.delay.ms": topicKey(
    long({ min: 0n }),
    ["log.segment.delete.delay.ms"],
    (b) => b["log.segment.delete.delay.ms"],
    "A deleted segment is renamed .deleted and its files removed after this delay.",
  ),
  "flush.messages": topicKey(
    long({ min: 1n }),
    ["log.flush.interval.messages"],
    (b) => b["log.flush.interval.messages"],
    "fsync after this many messages.",
  ),
  "flush.ms": topicKey(
    long({ min: 0n }),
    ["log.flush.interval.ms"],
    (b) => b["log.flush.interval.ms"] ?? LONG_MAX_AS_NUMBER,
    "fsync when the oldest unflushed message is this old.",
  ),
  "index.interval.bytes": topicKey(
    int({ min: 0 }),
    ["log.index.interval.bytes"],
    (b) => b["log.index.interval.bytes"],
    "Bytes between offset index entries.",
  ),
  "max.message.bytes": topicKey(
    int({ min: 0 }),
    ["message.max.bytes"],
    (b) => b["message.max.bytes"],
    "Largest record batch accepted.",
  ),
  "message.timestamp.type": topicKey(
    oneOf(TIMESTAMP_TYPES),
    ["log.message.timestamp.type"],
    (b) => b["log.message.timestamp.type"],
    "CreateTime keeps the producer's timestamps; LogAppendTime uses the broker's clock.",
  ),
  "message.timestamp.difference.max.ms": topicKey(
    long({ min: 0n }),
    ["log.message.timestamp.difference.max.ms"],
    (b) => b["log.message.timestamp.difference.max.ms"],
    "Deprecated: the before and after bounds when they are left at their default.",
  ),
  "message.timestamp.before.max.ms": topicKey(
    long({ min: 0n }),
    ["log.message.timestamp.before.max.ms"],
    (b) => b["log.message.timestamp.before.max.ms"],
    "CreateTime: refuse (INVALID_TIMESTAMP) a record this much older than the broker's clock.",
  ),
  "message.timestamp.after.max.ms": topicKey(
    long({ min: 0n }),
    ["log.message.timestamp.after.max.ms"],
    (b) => b["log.message.timestamp.after.max.ms"],
    "CreateTime: refuse (INVALID_TIMESTAMP) a record this far ahead of the broker's clock.",
  ),
  "min.insync.replicas": topicKey(
    int({ min: 1 }),
    ["min.insync.replicas"],
    (b) => b["min.insync.replicas"],
    "Replicas that must have a write before acks=all succeeds.",
  ),
  "retention.bytes": topicKey(
    long(),
    ["log.retention.bytes"],
    (b) => b["log.retention.bytes"],
    "Delete old segments while the partition is larger than this; -1: no limit.",
  ),
  "retention.ms": topicKey(
    long({ min: -1n }),
    ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
    (b) => b["log.retention.ms"],
    "Delete segments older than this; -1: keep forever.",
  ),
  "segment.bytes": topicKey(
    int({ min: 14 }),
    ["log.segment.bytes"],
    (b) => b["log.segment.bytes"],
    "Size at which a new segment is rolled.",
  ),
  "segment.index.bytes": topicKey(
    int({ min: 4 }),
    ["log.index.size.max.bytes"],
    (b) => b["log.index.size.max.bytes"],
    "Largest offset or time index of a segment; a full index rolls the segment.",
  ),
  "segment.jitter.ms": topicKey(
    long({ min: 0n }),
    ["log.roll.jitter.ms", "log.roll.jitter.hours"],
    (b) => b["log.roll.jitter.ms"],
    "Most random time taken off segment.ms per segment, so partitions do not roll at once.",
  ),
  "segment.ms": topicKey(
    long({ min: 1n }),
    ["log.roll.ms", "log.roll.hours"],
    (b) => b["log.roll.ms"],
    "Roll a new segment after this age.",
  ),
} satisfies Record<string, TopicKey<unknown>>;

/** Keys Quill accepts, stores and reports, but whose behaviour it does not have (yet). */
const ACCEPTED_KEYS = {
  "delete.retention.ms": topicKey(
    long({ min: 0n }),
    ["log.cleaner.delete.retention.ms"],
    (b) => b["log.cleaner.delete.retention.ms"],
    "Compaction: how long tombstones stay readable.",
  ),
  "max.compaction.lag.ms": topicKey(
    long({ min: 1n }),
    ["log.cleaner.max.compaction.lag.ms"],
    (b) => b["log.cleaner.max.compaction.lag.ms"],
    "Compaction: longest a record may stay uncompacted.",
  ),
  "min.cleanable.dirty.ratio": topicKey(
    double({ min: 0, max: 1 }),
    ["log.cleaner.min.cleanable.ratio"],
    (b) => b["log.cleaner.min.cleanable.ratio"],
    "Compaction: share of the log not yet compacted before the cleaner runs.",
  ),
  "min.compaction.lag.ms": topicKey(
    long({ min: 0n }),
    ["log.cleaner.min.compaction.lag.ms"],
    (b) => b["log.cleaner.min.compaction.lag.ms"],
    "Compaction: shortest time a record stays uncompacted.",
  ),
  "follower.replication.throttled.replicas": topicKey(
    throttledReplicas("follower.replication.throttled.replicas"),
    [],
    fixed([]),
    "Replicas (partition:broker, or *) whose follower-side replication is throttled.",
    { inert: "" },
  ),
  "leader.replication.throttled.replicas": topicKey(
    throttledReplicas("leader.replication.throttled.replicas"),
    [],
    fixed([]),
    "Replicas (partition:broker, or *) whose leader-side replication is throttled.",
  ),
  "local.retention.bytes": topicKey(
    long({ min: -2n }),
    ["log.local.retention.bytes"],
    (b) => b["log.local.retention.bytes"],
    "Tiered storage: local bytes kept; -2: retention.bytes.",
    { inert: "-2" },
  ),
  "local.retention.ms": topicKey(
    long({ min: -2n }),
    ["log.local.retention.ms"],
    (b) => b["log.local.retention.ms"],
    "Tiered storage: local time kept; -2: retention.ms.",
    { inert: "-2" },
  ),
  "message.downconversion.enable": topicKey(
    boolean(),
    ["log.message.downconversion.enable"],
    (b) => b["log.message.downconversion.enable"],
    "Down-conversion for old fetch versions, which Quill does not offer (Fetch v4+), so moot.",
  ),
  "message.format.version": topicKey(
    messageFormatVersion(),
    ["log.message.format.version"],
    (b) => b["log.message.format.version"],
    "Ignored, as Kafka 3.x ignores it (record batches are always v2).",
  ),
  preallocate: topicKey(
    boolean(),
    ["log.preallocate"],
    (b) => b["log.preallocate"],
    "Preallocate segment files; Quill never does.",
    { inert: "false" },
  ),
  "remote.log.copy.disable": topicKey(
    boolean(),
    [],
    fixed(false),
    "Tiered storage: stop copying segments to remote storage.",
    { inert: "false" },
  ),
  "remote.log.delete.on.disable": topicKey(
    boolean(),
    [],
    fixed(false),
    "Tiered storage: delete remote data when it is disabled.",
    { inert: "false" },
  ),
  "remote.storage.enable": topicKey(
    boolean(),
    [],
    fixed(false),
    "Tiered storage; true is refused, as by a Kafka broker without tiered storage.",
  ),
  "unclean.leader.election.enable": topicKey(
    boolean(),
    ["unclean.leader.election.enable"],
    (b) => b["unclean.leader.election.enable"],
    "Elect an out-of-sync replica when no in-sync one is left (read by the controller).",
  ),
} satisfies Record<string, TopicKey<unknown>>;

/** The per-topic keys (CreateTopics, AlterConfigs, DescribeConfigs), in Kafka's name order. */
export const TOPIC_CONFIG_KEYS = Object.fromEntries(
  Object.entries({ ...STORAGE_KEYS, ...ACCEPTED_KEYS }).sort(([a], [b]) => a.localeCompare(b)),
) as typeof STORAGE_KEYS & typeof ACCEPTED_KEYS;
