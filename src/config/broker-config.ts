import { LOG_FORMATS, LOG_LEVELS } from "../util/logger.ts";
import { AUTHORIZER_CONFIG_KEYS } from "./authorizer-config-keys.ts";
import { type ConfigOrigin, DEFAULT_ORIGIN, invalidValue } from "./config-error.ts";
import {
  boolean,
  type ConfigKey,
  double,
  formatValue,
  INT_MAX,
  int,
  key,
  LONG_MAX_AS_NUMBER,
  list,
  long,
  nullableKey,
  oneOf,
  string,
} from "./config-key.ts";
import { GZIP_LEVEL, LZ4_LEVEL, messageFormatVersion, ZSTD_LEVEL } from "./kafka-value-types.ts";
import { type ResolvedListeners, resolveListeners } from "./listener-resolution.ts";
import {
  DEFAULT_SECURITY_PROTOCOL_MAP,
  listenerList,
  SECURITY_PROTOCOLS,
  securityProtocolMap,
} from "./listeners.ts";
import { SASL_CONFIG_KEYS } from "./sasl-config-keys.ts";
import { SSL_CONFIG_KEYS } from "./ssl-config-keys.ts";

/** Kafka's `group.consumer.migration.policy` values (`ConsumerGroupMigrationPolicy`). */
export const CONSUMER_MIGRATION_POLICIES = [
  "disabled",
  "upgrade",
  "downgrade",
  "bidirectional",
] as const;
export type ConsumerMigrationPolicy = (typeof CONSUMER_MIGRATION_POLICIES)[number];

export const COMPRESSION_TYPES = [
  "uncompressed",
  "zstd",
  "lz4",
  "snappy",
  "gzip",
  "producer",
] as const;
export const TIMESTAMP_TYPES = ["CreateTime", "LogAppendTime"] as const;
export const CLEANUP_POLICIES = ["compact", "delete"] as const;

/** Kafka's class name for KIP-392's rack-aware choice of a read replica. */
export const RACK_AWARE_REPLICA_SELECTOR =
  "org.apache.kafka.common.replica.RackAwareReplicaSelector";

const HOUR_MS = 60 * 60 * 1000;
const MINUTE_MS = 60 * 1000;

/**
 * Every broker key Quill reads, under Kafka's own name and with Kafka's default, so a Kafka
 * `server.properties` means the same thing here. Where Quill's default differs from Kafka's,
 * the doc says so.
 */
export const BROKER_CONFIG_KEYS = {
  "broker.id": key(
    int({ min: -1 }),
    0,
    "This broker's id (`--broker-id`). -1 in ZooKeeper mode: the id recorded in the data dir, " +
      "else one generated from /brokers/seqid (above 1000), as Kafka; Quill's default is 0.",
  ),
  "broker.rack": nullableKey(string(), "Rack of this broker, reported in Metadata."),
  "replica.selector.class": nullableKey(
    oneOf([RACK_AWARE_REPLICA_SELECTOR, "org.apache.kafka.common.replica.LeaderSelector"]),
    "Where consumers that name a client.rack read (KIP-392): Kafka's RackAwareReplicaSelector " +
      "sends them to an in-sync replica in their rack; unset or LeaderSelector: the leader.",
  ),
  listeners: key(
    listenerList(),
    [{ listenerName: "PLAINTEXT", host: "127.0.0.1", port: 9092 }],
    "Where the broker listens (`--listen`): NAME://HOST:PORT listeners separated by commas; " +
      "one PLAINTEXT listener on loopback by default (Kafka's binds every interface).",
  ),
  "admin.listeners": nullableKey(
    listenerList(),
    "Quill's admin HTTP listener (`--admin`): HOST:PORT, or NAME://HOST:PORT listeners " +
      "with distinct names separated by commas, serving /health/live, /health/ready and " +
      "/metrics (Prometheus). " +
      "Unset: no admin listener. See admin.authentication.",
  ),
  "admin.authentication": key(
    oneOf(["none", "scram", "mtls"] as const),
    "none",
    "Who may use the admin listener: none (anyone who reaches it: bind it to loopback or a " +
      "management network), scram (HTTP basic authentication against the SCRAM users, as " +
      "SASL/SCRAM clients log in) or mtls (HTTPS with a client certificate the trust store " +
      "verifies, its principal from ssl.principal.mapping.rules; TLS keys from " +
      "listener.name.<admin listener>.ssl.*, else ssl.*); /health/live and /health/ready " +
      "stay open for load balancers.",
  ),
  "advertised.listeners": nullableKey(
    listenerList(),
    "What Metadata tells clients of each listener (`--advertise`); a listener not named here " +
      "advertises its own address, a wildcard host replaced by the host name.",
  ),
  "listener.security.protocol.map": key(
    securityProtocolMap(),
    DEFAULT_SECURITY_PROTOCOL_MAP,
    "The security protocol of each listener name (NAME:PROTOCOL pairs).",
  ),
  "inter.broker.listener.name": nullableKey(
    string(),
    "The listener brokers use to reach each other; unset: the one named by " +
      "security.inter.broker.protocol.",
  ),
  "security.inter.broker.protocol": key(
    oneOf(SECURITY_PROTOCOLS),
    "PLAINTEXT",
    "Names the inter-broker listener when inter.broker.listener.name is unset.",
  ),
  "socket.request.max.bytes": key(
    int({ min: 1 }),
    104857600,
    "Largest request frame; a bigger one closes the connection.",
  ),
  "connections.max.idle.ms": key(
    long(),
    600000,
    "Connections idle this long are closed; -1 never closes them.",
  ),
  "max.connections": key(int({ min: 0 }), INT_MAX, "Most client connections open at once."),
  "quota.window.num": key(
    int({ min: 1 }),
    11,
    "Samples a client quota's rate is measured over (producer_byte_rate, consumer_byte_rate, " +
      "request_percentage).",
  ),
  "quota.window.size.seconds": key(
    int({ min: 1 }),
    1,
    "Length of one client quota sample, in seconds.",
  ),
  "controller.quota.window.num": key(
    int({ min: 1 }),
    11,
    "Samples of a controller_mutation_rate quota: its token bucket holds this many samples' " +
      "worth of mutations (KIP-599).",
  ),
  "controller.quota.window.size.seconds": key(
    int({ min: 1 }),
    1,
    "Length of one controller_mutation_rate sample, in seconds.",
  ),
  "queued.max.requests": key(
    int({ min: 1 }),
    500,
    "Most requests read but not yet answered before the network stops reading.",
  ),
  "queued.max.request.bytes": nullableKey(
    long({ min: -1n }),
    "Bytes of requests partly received or not yet answered, over all connections, before the " +
      "network stops reading (KIP-72). -1: unlimited, Kafka's default; Quill's default (unset) " +
      "is 1/16 of the memory (cgroup limit or host), between 256 MiB and 1 GiB, and at least " +
      "socket.request.max.bytes plus an eighth for small requests (docs/faults.md).",
  ),
  "num.partitions": key(int({ min: 1 }), 1, "Partitions of an automatically created topic."),
  "default.replication.factor": key(
    int({ min: 1 }),
    1,
    "Replication factor of an automatically created topic.",
  ),
  "auto.create.topics.enable": key(
    boolean(),
    true,
    "Create a topic when Metadata asks for one that does not exist.",
  ),
  "delete.topic.enable": key(boolean(), true, "Allow DeleteTopics."),
  "min.insync.replicas": key(int({ min: 1 }), 1, "Default for topic min.insync.replicas."),
  "message.max.bytes": key(
    int({ min: 0 }),
    1048588,
    "Largest record batch accepted; default for topic max.message.bytes.",
  ),
  "compression.type": key(
    oneOf(COMPRESSION_TYPES),
    "producer",
    "Default for topic compression.type; `producer` keeps the producer's codec.",
  ),
  "compression.gzip.level": key(
    GZIP_LEVEL,
    -1,
    "Default for topic compression.gzip.level (-1: zlib's default, 6).",
  ),
  "compression.lz4.level": key(LZ4_LEVEL, 9, "Default for topic compression.lz4.level."),
  "compression.zstd.level": key(ZSTD_LEVEL, 3, "Default for topic compression.zstd.level."),
  "fetch.max.bytes": key(int({ min: 1024 }), 57671680, "Most bytes one Fetch response returns."),
  "max.incremental.fetch.session.cache.slots": key(
    int({ min: 0 }),
    1000,
    "Most incremental fetch sessions (KIP-227) kept; 0: every fetch lists all its partitions.",
  ),
  "replica.fetch.max.bytes": key(
    int({ min: 0 }),
    1048576,
    "Bytes a follower asks for per partition.",
  ),
  "replica.fetch.wait.max.ms": key(
    int({ min: 0 }),
    500,
    "How long a follower's fetch waits at the leader for new records.",
  ),
  "replica.fetch.min.bytes": key(
    int({ min: 1 }),
    1,
    "Bytes a follower's fetch waits for at the leader.",
  ),
  "replica.fetch.backoff.ms": key(
    int({ min: 0 }),
    1000,
    "Pause of a follower after a failed fetch before it tries again.",
  ),
  "replica.socket.timeout.ms": key(
    int({ min: 1 }),
    30000,
    "How long a follower waits for a fetch answer beyond replica.fetch.wait.max.ms.",
  ),
  "replica.lag.time.max.ms": key(
    long({ min: 1n }),
    30000,
    "A follower not caught up with the leader for this long leaves the ISR.",
  ),
  // Kafka sets these only dynamically (kafka-configs.sh, kafka-reassign-partitions.sh
  // --throttle); Quill also reads them from the static config.
  "leader.replication.throttled.rate": key(
    long({ min: 0n }),
    LONG_MAX_AS_NUMBER,
    "Bytes per second this broker sends to followers of leader.replication.throttled.replicas.",
  ),
  "follower.replication.throttled.rate": key(
    long({ min: 0n }),
    LONG_MAX_AS_NUMBER,
    "Bytes per second this broker fetches for follower.replication.throttled.replicas.",
  ),
  "replica.alter.log.dirs.io.max.bytes.per.second": key(
    long({ min: 0n }),
    LONG_MAX_AS_NUMBER,
    "Bytes per second a replica moving between this broker's log dirs copies.",
  ),
  "log.dirs": nullableKey(
    list("directories", { minItems: 1 }),
    "Data directories (`--data-dir`); when unset, log.dir is used.",
  ),
  "log.dir": key(
    string(),
    "./data",
    "Data directory when log.dirs is unset. Kafka's default is /tmp/kafka-logs.",
  ),
  "log.segment.bytes": key(int({ min: 14 }), 1073741824, "Size at which a new segment is rolled."),
  "log.roll.ms": nullableKey(
    long({ min: 1n }),
    "Roll a new segment after this age; overrides log.roll.hours.",
  ),
  "log.roll.hours": key(int({ min: 1 }), 168, "Roll a new segment after this many hours."),
  "log.retention.ms": nullableKey(
    long(),
    "Delete segments older than this; overrides the minutes and hours keys; -1: keep forever.",
  ),
  "log.retention.minutes": nullableKey(
    int(),
    "Retention in minutes; overrides log.retention.hours.",
  ),
  "log.retention.hours": key(
    int(),
    168,
    "Retention in hours, used when the ms and minutes keys are unset.",
  ),
  "log.retention.bytes": key(
    long(),
    -1,
    "Delete old segments while a partition is larger than this; -1: no limit.",
  ),
  "log.retention.check.interval.ms": key(long({ min: 1n }), 300000, "How often retention runs."),
  "log.index.interval.bytes": key(int({ min: 0 }), 4096, "Bytes between offset index entries."),
  "log.index.size.max.bytes": key(
    int({ min: 4 }),
    10485760,
    "Largest offset or time index; a full index rolls the segment.",
  ),
  "log.roll.jitter.ms": nullableKey(
    long({ min: 0n }),
    "Most random time taken off segment.ms per segment; overrides log.roll.jitter.hours.",
  ),
  "log.roll.jitter.hours": key(
    int({ min: 0 }),
    0,
    "Most random hours taken off segment.ms per segment, when log.roll.jitter.ms is unset.",
  ),
  "log.segment.delete.delay.ms": key(
    long({ min: 0n }),
    60000,
    "How long a deleted segment stays on disk, renamed .deleted, before its files go.",
  ),
  "log.preallocate": key(
    boolean(),
    false,
    "Default for topic preallocate. Accepted; Quill never preallocates segment files.",
  ),
  "log.message.format.version": key(
    messageFormatVersion(),
    "3.0-IV1",
    "Default for topic message.format.version; ignored, as Kafka 3.x ignores it.",
  ),
  "log.message.timestamp.difference.max.ms": key(
    long({ min: 0n }),
    LONG_MAX_AS_NUMBER,
    "Deprecated default for both timestamp bounds below, when they are unset.",
  ),
  "log.message.timestamp.before.max.ms": key(
    long({ min: 0n }),
    LONG_MAX_AS_NUMBER,
    "Default for topic message.timestamp.before.max.ms.",
  ),
  "log.message.timestamp.after.max.ms": key(
    long({ min: 0n }),
    LONG_MAX_AS_NUMBER,
    "Default for topic message.timestamp.after.max.ms.",
  ),
  "log.message.downconversion.enable": key(
    boolean(),
    true,
    "Default for topic message.downconversion.enable (Quill never down-converts).",
  ),
  "log.cleaner.enable": key(
    boolean(),
    true,
    "Run the log cleaner, which compacts topics whose cleanup.policy includes compact.",
  ),
  "log.cleaner.dedupe.buffer.size": key(
    long({ min: 48n }),
    134217728,
    "Memory of the cleaner's key -> offset map (24 bytes a key); a dirty section with more " +
      "keys is cleaned in several passes.",
  ),
  "log.cleaner.io.buffer.size": key(
    int({ min: 1 }),
    524288,
    "Bytes the cleaner's thread reads at a time (one chunk of a segment).",
  ),
  "log.cleaner.io.buffer.load.factor": key(
    double({ min: 0.01, max: 1 }),
    0.9,
    "Share of the cleaner's map filled before a pass stops.",
  ),
  "log.cleaner.io.max.bytes.per.second": key(
    double({ min: 1, max: Number.MAX_VALUE }),
    Number.MAX_VALUE,
    "Limit on the cleaner's reads plus writes.",
  ),
  "log.cleaner.backoff.ms": key(
    long({ min: 0n }),
    15000,
    "How long the cleaner sleeps when no log needs cleaning.",
  ),
  "log.cleaner.delete.retention.ms": key(
    long({ min: 0n }),
    86400000,
    "Default for topic delete.retention.ms.",
  ),
  "log.cleaner.min.cleanable.ratio": key(
    double({ min: 0, max: 1 }),
    0.5,
    "Default for topic min.cleanable.dirty.ratio.",
  ),
  "log.cleaner.min.compaction.lag.ms": key(
    long({ min: 0n }),
    0,
    "Default for topic min.compaction.lag.ms.",
  ),
  "log.cleaner.max.compaction.lag.ms": key(
    long({ min: 1n }),
    LONG_MAX_AS_NUMBER,
    "Default for topic max.compaction.lag.ms.",
  ),
  "log.local.retention.ms": key(
    long({ min: -2n }),
    -2,
    "Default for topic local.retention.ms (tiered storage; Quill has none).",
  ),
  "log.local.retention.bytes": key(
    long({ min: -2n }),
    -2,
    "Default for topic local.retention.bytes (tiered storage; Quill has none).",
  ),
  "unclean.leader.election.enable": key(
    boolean(),
    false,
    "Default for topic unclean.leader.election.enable (static; not a dynamic key in Quill).",
  ),
  "log.flush.interval.messages": key(
    long({ min: 1n }),
    LONG_MAX_AS_NUMBER,
    "fsync a partition after this many messages (default: leave it to the OS).",
  ),
  "log.flush.interval.ms": nullableKey(
    long({ min: 0n }),
    "fsync a partition when its oldest unflushed message is this old (unset: never).",
  ),
  "log.message.timestamp.type": key(
    oneOf(TIMESTAMP_TYPES),
    "CreateTime",
    "Default for topic message.timestamp.type.",
  ),
  "log.cleanup.policy": key(
    list("policies", { allowed: CLEANUP_POLICIES, minItems: 1 }),
    ["delete"],
    "Default for topic cleanup.policy.",
  ),
  "group.initial.rebalance.delay.ms": key(
    int(),
    3000,
    "How long a new group waits for more members before its first rebalance.",
  ),
  "group.min.session.timeout.ms": key(
    int(),
    6000,
    "Smallest session timeout a consumer may ask for.",
  ),
  "group.max.session.timeout.ms": key(
    int(),
    1800000,
    "Largest session timeout a consumer may ask for.",
  ),
  "group.consumer.session.timeout.ms": key(
    int({ min: 1 }),
    45000,
    "Session timeout of KIP-848 consumer group members (group.protocol=consumer).",
  ),
  "group.consumer.heartbeat.interval.ms": key(
    int({ min: 1 }),
    5000,
    "How often KIP-848 consumer group members are told to heartbeat.",
  ),
  "group.consumer.assignors": key(
    list("assignors", { allowed: ["uniform", "range"] as const, minItems: 1 }),
    ["uniform", "range"],
    "Server-side assignors of KIP-848 consumer groups; the first is the default.",
  ),
  "group.consumer.migration.policy": key(
    oneOf(CONSUMER_MIGRATION_POLICIES, { ignoreCase: true }),
    "bidirectional",
    "Whether running groups may move between the classic and KIP-848 protocols " +
      "(upgrade, downgrade, bidirectional, disabled).",
  ),
  "group.share.session.timeout.ms": key(
    int({ min: 1 }),
    45000,
    "Session timeout of share group members (KIP-932).",
  ),
  "group.share.heartbeat.interval.ms": key(
    int({ min: 1 }),
    5000,
    "How often share group members are told to heartbeat.",
  ),
  "group.share.max.size": key(int({ min: 1, max: 1000 }), 200, "Members per share group."),
  "group.share.record.lock.duration.ms": key(
    int({ min: 1000, max: 3600000 }),
    30000,
    "How long a share consumer holds the records it acquired before they become available again.",
  ),
  "group.share.delivery.count.limit": key(
    int({ min: 2, max: 10 }),
    5,
    "Deliveries of a record to share consumers before it is archived instead of redelivered.",
  ),
  "group.share.partition.max.record.locks": key(
    int({ min: 100, max: 10000 }),
    2000,
    "In-flight (acquired or not yet acknowledged) records per share partition.",
  ),
  "group.consumer.min.session.timeout.ms": key(
    int({ min: 1 }),
    45000,
    "Smallest consumer.session.timeout.ms a consumer group's config may set.",
  ),
  "group.consumer.max.session.timeout.ms": key(
    int({ min: 1 }),
    60000,
    "Largest consumer.session.timeout.ms a consumer group's config may set.",
  ),
  "group.consumer.min.heartbeat.interval.ms": key(
    int({ min: 1 }),
    5000,
    "Smallest consumer.heartbeat.interval.ms a consumer group's config may set.",
  ),
  "group.consumer.max.heartbeat.interval.ms": key(
    int({ min: 1 }),
    15000,
    "Largest consumer.heartbeat.interval.ms a consumer group's config may set.",
  ),
  "group.share.min.session.timeout.ms": key(
    int({ min: 1 }),
    45000,
    "Smallest share.session.timeout.ms a share group's config may set.",
  ),
  "group.share.max.session.timeout.ms": key(
    int({ min: 1 }),
    60000,
    "Largest share.session.timeout.ms a share group's config may set.",
  ),
  "group.share.min.heartbeat.interval.ms": key(
    int({ min: 1 }),
    5000,
    "Smallest share.heartbeat.interval.ms a share group's config may set.",
  ),
  "group.share.max.heartbeat.interval.ms": key(
    int({ min: 1 }),
    15000,
    "Largest share.heartbeat.interval.ms a share group's config may set.",
  ),
  "group.share.min.record.lock.duration.ms": key(
    int({ min: 1000 }),
    15000,
    "Smallest share.record.lock.duration.ms a share group's config may set.",
  ),
  "group.share.max.record.lock.duration.ms": key(
    int({ min: 1000, max: 3600000 }),
    60000,
    "Largest share.record.lock.duration.ms a share group's config may set.",
  ),
  "group.share.min.delivery.count.limit": key(
    int({ min: 2, max: 10 }),
    2,
    "Smallest share.delivery.count.limit a share group's config may set.",
  ),
  "group.share.max.delivery.count.limit": key(
    int({ min: 2, max: 10 }),
    10,
    "Largest share.delivery.count.limit a share group's config may set.",
  ),
  "group.share.min.partition.max.record.locks": key(
    int({ min: 100, max: 10000 }),
    100,
    "Smallest share.partition.max.record.locks a share group's config may set.",
  ),
  "group.share.max.partition.max.record.locks": key(
    int({ min: 100, max: 10000 }),
    4000,
    "Largest share.partition.max.record.locks a share group's config may set.",
  ),
  "group.share.max.share.sessions": key(
    int({ min: 1 }),
    2000,
    "Share sessions (one per share consumer) a broker keeps.",
  ),
  "share.coordinator.state.topic.num.partitions": key(
    int({ min: 1 }),
    50,
    "Partitions of the internal __share_group_state topic (set before it is created).",
  ),
  "share.coordinator.state.topic.replication.factor": key(
    int({ min: 1 }),
    3,
    "Replication factor of __share_group_state; until this many brokers are alive the topic " +
      "is not created and share coordination is unavailable (1 for a single broker).",
  ),
  "share.coordinator.state.topic.min.isr": key(
    int({ min: 1 }),
    2,
    "min.insync.replicas of __share_group_state (capped at its replication factor).",
  ),
  "share.coordinator.state.topic.segment.bytes": key(
    int({ min: 14 }),
    104857600,
    "segment.bytes of __share_group_state.",
  ),
  "share.coordinator.write.timeout.ms": key(
    int({ min: 1 }),
    5000,
    "How long the share coordinator waits for a state write to reach every in-sync replica.",
  ),
  "offsets.retention.minutes": key(
    int({ min: 1 }),
    10080,
    "How long committed offsets of an empty group are kept.",
  ),
  "offsets.topic.num.partitions": key(
    int({ min: 1 }),
    50,
    "Partitions of __consumer_offsets, whose leaders coordinate the groups (set before it is " +
      "created).",
  ),
  "offsets.topic.replication.factor": key(
    int({ min: 1 }),
    3,
    "Replication factor of __consumer_offsets; until this many brokers are alive the topic " +
      "is not created and FindCoordinator answers COORDINATOR_NOT_AVAILABLE (1 for a single " +
      "broker).",
  ),
  "transaction.max.timeout.ms": key(
    int({ min: 1 }),
    900000,
    "Largest transaction.timeout.ms a transactional producer may ask for.",
  ),
  "transaction.state.log.num.partitions": key(
    int({ min: 1 }),
    50,
    "Partitions of the internal __transaction_state topic (set before it is created).",
  ),
  "transaction.state.log.replication.factor": key(
    int({ min: 1 }),
    3,
    "Replication factor of __transaction_state; until this many brokers are alive the topic " +
      "is not created and FindCoordinator answers COORDINATOR_NOT_AVAILABLE (1 for a single " +
      "broker).",
  ),
  "transaction.state.log.min.isr": key(
    int({ min: 1 }),
    2,
    "min.insync.replicas of __transaction_state (capped at its replication factor).",
  ),
  "transaction.state.log.segment.bytes": key(
    int({ min: 14 }),
    104857600,
    "segment.bytes of __transaction_state.",
  ),
  "transactional.id.expiration.ms": key(
    int({ min: 1 }),
    604800000,
    "A transactional id unused for this long (no transaction open) is forgotten.",
  ),
  "transaction.abort.timed.out.transaction.cleanup.interval.ms": key(
    int({ min: 1 }),
    10000,
    "How often the coordinator aborts transactions open longer than their timeout.",
  ),
  "transaction.remove.expired.transaction.cleanup.interval.ms": key(
    int({ min: 1 }),
    3600000,
    "How often the coordinator forgets expired transactional ids.",
  ),
  "auto.leader.rebalance.enable": key(
    boolean(),
    true,
    "Cluster mode: the controller moves leadership back to each partition's preferred replica.",
  ),
  "leader.imbalance.check.interval.seconds": key(
    int({ min: 1 }),
    300,
    "How often the controller checks leadership against the preferred replicas.",
  ),
  "leader.imbalance.per.broker.percentage": key(
    int({ min: 0, max: 100 }),
    10,
    "A broker's share of partitions not led by it though it is their preferred replica, above " +
      "which the controller moves them back.",
  ),
  "log.format": key(
    oneOf(LOG_FORMATS),
    "text",
    "Broker log lines: text (timestamp, level, [component], message) or json (one object a line).",
  ),
  "log.level": key(oneOf(LOG_LEVELS), "INFO", "Broker log lines below this level are dropped."),
  "zookeeper.connect": nullableKey(
    string(),
    "ZooKeeper connect string (`--zookeeper`) for cluster mode; unset: embedded single broker.",
  ),
  "zookeeper.session.timeout.ms": key(int(), 18000, "ZooKeeper session timeout."),
  "zookeeper.connection.timeout.ms": nullableKey(
    int(),
    "How long to wait for a ZooKeeper connection; unset: zookeeper.session.timeout.ms.",
  ),
  ...SSL_CONFIG_KEYS,
  ...SASL_CONFIG_KEYS,
  ...AUTHORIZER_CONFIG_KEYS,
} satisfies Record<string, ConfigKey<unknown>>;

export type BrokerConfigKey = keyof typeof BROKER_CONFIG_KEYS;
type ValueOf<K> = K extends ConfigKey<infer T> ? T : never;
export type BrokerConfigValues = {
  -readonly [K in BrokerConfigKey]: ValueOf<(typeof BROKER_CONFIG_KEYS)[K]>;
};

/** The keys whose effective value combines several settings (see BrokerConfig). */
type ResolvedKey =
  | "log.retention.ms"
  | "log.roll.ms"
  | "log.roll.jitter.ms"
  | "log.dirs"
  | "listeners"
  | "advertised.listeners"
  | "inter.broker.listener.name";

/**
 * The broker's configuration: Kafka's dotted key names (so code, docs and DescribeConfigs use
 * one vocabulary), with the keys that combine several settings resolved by Kafka's rules.
 */
export type BrokerConfig = Readonly<
  Omit<BrokerConfigValues, ResolvedKey> & {
    /** From log.retention.ms, else .minutes, else .hours (Kafka's order); -1: keep forever. */
    "log.retention.ms": number;
    /** From log.roll.ms, else log.roll.hours. */
    "log.roll.ms": number;
    /** From log.roll.jitter.ms, else log.roll.jitter.hours. */
    "log.roll.jitter.ms": number;
    /** From log.dirs, else log.dir. */
    "log.dirs": readonly string[];
  } & ResolvedListeners & {
      /** The source of every key that was set; keys left at their default are absent. */
      origins: ReadonlyMap<BrokerConfigKey, ConfigOrigin>;
      /** `listener.name.<listener>.<key>` settings by listener name (listener-config.ts). */
      listenerOverrides?: ReadonlyMap<string, ReadonlyMap<string, unknown>>;
    }
>;

export const isBrokerConfigKey = (name: string): name is BrokerConfigKey =>
  Object.hasOwn(BROKER_CONFIG_KEYS, name);

/**
 * Kafka broker keys that Quill accepts and ignores (threads, buffers, KRaft, internal topics it
 * does not have), so a stock Kafka server.properties loads with a warning. Security keys are
 * never ignored: see security-guard.ts.
 */
export const KAFKA_KEYS_QUILL_IGNORES: ReadonlySet<string> = new Set([
  "num.network.threads",
  "num.io.threads",
  "background.threads",
  "num.recovery.threads.per.data.dir",
  "num.replica.fetchers",
  "num.replica.alter.log.dirs.threads",
  "socket.send.buffer.bytes",
  "socket.receive.buffer.bytes",
  "log.flush.scheduler.interval.ms",
  "log.flush.offset.checkpoint.interval.ms",
  "log.cleaner.threads",
  "process.roles",
  "node.id",
  "controller.quorum.voters",
  "controller.quorum.bootstrap.servers",
  "controller.listener.names",
  "inter.broker.protocol.version",
  "controlled.shutdown.enable",
  "broker.id.generation.enable",
  "reserved.broker.max.id",
  "metadata.log.dir",
]);

type Origins = ReadonlyMap<BrokerConfigKey, ConfigOrigin>;

/** Applies Kafka's rules for keys that combine, and rejects combinations that cannot work. */
export function resolveBrokerConfig(values: BrokerConfigValues, origins: Origins): BrokerConfig {
  return {
    ...values,
    ...resolveLogTimes(values, origins),
    "log.dirs": values["log.dirs"] ?? [values["log.dir"]],
    "queued.max.request.bytes": queuedMaxRequestBytes(values, origins),
    ...resolveListeners(values, origins),
    origins,
  };
}

type LogTimeKey = "log.retention.ms" | "log.roll.ms" | "log.roll.jitter.ms";
type LogTimeValues = Pick<
  BrokerConfigValues,
  | LogTimeKey
  | "log.retention.minutes"
  | "log.retention.hours"
  | "log.roll.hours"
  | "log.roll.jitter.hours"
>;

/** The time keys that combine an ms key with minutes or hours keys (Kafka's precedence). */
export function resolveLogTimes(
  values: LogTimeValues,
  origins: Origins,
): Record<LogTimeKey, number> {
  return {
    "log.retention.ms": retentionMs(values, origins),
    "log.roll.ms": values["log.roll.ms"] ?? values["log.roll.hours"] * HOUR_MS,
    "log.roll.jitter.ms": values["log.roll.jitter.ms"] ?? values["log.roll.jitter.hours"] * HOUR_MS,
  };
}

/** Kafka's rule: -1 (unlimited) or at least socket.request.max.bytes (0 is refused too). */
function queuedMaxRequestBytes(values: BrokerConfigValues, origins: Origins): number | null {
  const queued = values["queued.max.request.bytes"];
  if (queued === null || queued === -1 || queued >= values["socket.request.max.bytes"]) {
    return queued;
  }
  const source = (origins.get("queued.max.request.bytes") ?? DEFAULT_ORIGIN).label;
  throw invalidValue(
    "queued.max.request.bytes",
    String(queued),
    source,
    `-1 or at least socket.request.max.bytes (${values["socket.request.max.bytes"]})`,
  );
}

/** Kafka's KafkaConfig.logRetentionTimeMillis, including its "-1 or at least 1" check. */
function retentionMs(values: LogTimeValues, origins: Origins): number {
  const { "log.retention.ms": ms, "log.retention.minutes": minutes } = values;
  const [from, retention] =
    ms !== null
      ? ["log.retention.ms" as const, ms]
      : minutes !== null
        ? ["log.retention.minutes" as const, minutes * MINUTE_MS]
        : ["log.retention.hours" as const, values["log.retention.hours"] * HOUR_MS];
  if (retention === 0) {
    const text = formatValue(BROKER_CONFIG_KEYS[from] as ConfigKey<unknown>, values[from]) ?? "";
    const source = (origins.get(from) ?? DEFAULT_ORIGIN).label;
    throw invalidValue(from, text, source, "a retention of -1 (unlimited) or at least 1 ms");
  }
  return retention < 0 ? -1 : retention;
}
