import type { BrokerConfig, ConsumerMigrationPolicy } from "../config/broker-config.ts";

export function upgradeEnabled(policy: ConsumerMigrationPolicy): boolean {
  return policy === "upgrade" || policy === "bidirectional";
}

export function downgradeEnabled(policy: ConsumerMigrationPolicy): boolean {
  return policy === "downgrade" || policy === "bidirectional";
}

/**
 * Settings of the group coordinator. The first five are Kafka broker keys with Kafka's
 * defaults; the rest are Quill's explicit limits on everything that grows with client
 * behaviour (Kafka has no such limits, so clients never see them in normal use).
 */
export interface GroupConfig {
  /** `group.min.session.timeout.ms`: smaller session timeouts get INVALID_SESSION_TIMEOUT. */
  readonly minSessionTimeoutMs: number;
  /** `group.max.session.timeout.ms`: larger session timeouts get INVALID_SESSION_TIMEOUT. */
  readonly maxSessionTimeoutMs: number;
  /** `group.initial.rebalance.delay.ms`: how long a new group waits for more members. */
  readonly initialRebalanceDelayMs: number;
  /** `group.max.size`: members per group; more get GROUP_MAX_SIZE_REACHED. */
  readonly maxSize: number;
  /** `offset.metadata.max.bytes`: longer commit metadata gets OFFSET_METADATA_TOO_LARGE. */
  readonly offsetMetadataMaxBytes: number;
  /** Groups this coordinator keeps in memory; a new group beyond it is refused. */
  readonly groupsMax: number;
  /** Committed partitions per group; a commit going past it gets INVALID_COMMIT_OFFSET_SIZE. */
  readonly offsetsPerGroupMax: number;
  /** Partitions in one OffsetCommit; a larger commit gets INVALID_COMMIT_OFFSET_SIZE. */
  readonly offsetsPerCommitMax: number;
  /** Protocol metadata bytes of one member, over all its protocols; more gets INVALID_REQUEST. */
  readonly memberMetadataBytesMax: number;
  /** Protocols one member may offer in a JoinGroup; more gets INVALID_REQUEST. */
  readonly protocolsPerMemberMax: number;
  /** Assignment bytes the leader may give one member in SyncGroup; more gets INVALID_REQUEST. */
  readonly memberAssignmentBytesMax: number;
  /** Members that were told MEMBER_ID_REQUIRED and have not rejoined yet, per group. */
  readonly pendingMembersMax: number;
  /**
   * How often Empty groups without offsets are forgotten (Kafka does it in the offset-expiration
   * task, every `offsets.retention.check.interval.ms`, default 10 minutes).
   */
  readonly emptyGroupCleanupIntervalMs: number;
  /** `group.consumer.session.timeout.ms`: a KIP-848 member silent this long is fenced. */
  readonly consumerSessionTimeoutMs: number;
  /** `group.consumer.heartbeat.interval.ms`: how often KIP-848 members are told to heartbeat. */
  readonly consumerHeartbeatIntervalMs: number;
  /** `group.consumer.assignors`: the server-side assignors, the first the default. */
  readonly consumerAssignors: readonly string[];
  /**
   * `group.consumer.migration.policy`: whether a classic group with members becomes a consumer
   * group when a KIP-848 member joins (upgrade), and back when its last KIP-848 member leaves
   * and only classic members remain (downgrade).
   */
  readonly consumerMigrationPolicy: ConsumerMigrationPolicy;
  /** `group.share.session.timeout.ms`: a share group member silent this long is removed. */
  readonly shareSessionTimeoutMs: number;
  /** `group.share.heartbeat.interval.ms`: how often share group members are told to beat. */
  readonly shareHeartbeatIntervalMs: number;
  /** `group.share.max.size`: members per share group. */
  readonly shareMaxSize: number;
}

/**
 * Per-group values of the KIP-848 and share group timings: Kafka 4's group configs
 * (`consumer.session.timeout.ms`, ...), else the broker's keys (server/group-config-manager.ts).
 */
export interface PerGroupTimings {
  consumerSessionTimeoutMs(groupId: string): number;
  consumerHeartbeatIntervalMs(groupId: string): number;
  shareSessionTimeoutMs(groupId: string): number;
  shareHeartbeatIntervalMs(groupId: string): number;
}

/** The broker-wide values for every group (no group configs). */
export function brokerWideTimings(config: GroupConfig): PerGroupTimings {
  return {
    consumerSessionTimeoutMs: () => config.consumerSessionTimeoutMs,
    consumerHeartbeatIntervalMs: () => config.consumerHeartbeatIntervalMs,
    shareSessionTimeoutMs: () => config.shareSessionTimeoutMs,
    shareHeartbeatIntervalMs: () => config.shareHeartbeatIntervalMs,
  };
}

export const DEFAULT_GROUP_CONFIG: GroupConfig = Object.freeze({
  minSessionTimeoutMs: 6_000,
  maxSessionTimeoutMs: 1_800_000,
  initialRebalanceDelayMs: 3_000,
  maxSize: 2_147_483_647,
  offsetMetadataMaxBytes: 4_096,
  groupsMax: 100_000,
  offsetsPerGroupMax: 100_000,
  offsetsPerCommitMax: 10_000,
  memberMetadataBytesMax: 1 << 20,
  protocolsPerMemberMax: 64,
  memberAssignmentBytesMax: 1 << 20,
  pendingMembersMax: 10_000,
  emptyGroupCleanupIntervalMs: 600_000,
  consumerSessionTimeoutMs: 45_000,
  consumerHeartbeatIntervalMs: 5_000,
  consumerAssignors: Object.freeze(["uniform", "range"]),
  consumerMigrationPolicy: "bidirectional",
  shareSessionTimeoutMs: 45_000,
  shareHeartbeatIntervalMs: 5_000,
  shareMaxSize: 200,
});

/**
 * Kafka's `GroupCoordinator.NewMemberJoinTimeoutMs`: a brand-new member's JoinGroup cannot be
 * covered by its session timeout (it has no id to heartbeat with, and its socket is parked),
 * so it is dropped after this long if the rebalance has still not completed.
 */
export const NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000;

/** The broker keys Kafka reads for its classic groups, mapped onto GroupConfig. */
export function groupConfigFrom(config: BrokerConfig): Partial<GroupConfig> {
  return {
    minSessionTimeoutMs: config["group.min.session.timeout.ms"],
    maxSessionTimeoutMs: config["group.max.session.timeout.ms"],
    initialRebalanceDelayMs: config["group.initial.rebalance.delay.ms"],
    consumerSessionTimeoutMs: config["group.consumer.session.timeout.ms"],
    consumerHeartbeatIntervalMs: config["group.consumer.heartbeat.interval.ms"],
    consumerAssignors: config["group.consumer.assignors"],
    consumerMigrationPolicy: config["group.consumer.migration.policy"],
    shareSessionTimeoutMs: config["group.share.session.timeout.ms"],
    shareHeartbeatIntervalMs: config["group.share.heartbeat.interval.ms"],
    shareMaxSize: config["group.share.max.size"],
  };
}
