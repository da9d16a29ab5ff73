import type { TopicNames } from "../common/internal-topics.ts";
import { type TopicPartitionKey, topicPartitionKey } from "../common/topic-partition.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { assert } from "../util/assert.ts";
import { type Logger, SILENT_LOGGER } from "../util/logger.ts";
import { mapLimit } from "../util/map-limit.ts";
import { ClassicGroup, type JoinWait, joinError, syncError } from "./classic-group.ts";
import type { ConsumerGroup } from "./consumer-group.ts";
import {
  ConsumerGroupManager,
  type HeartbeatRequest as ConsumerHeartbeatRequest,
  type HeartbeatResult as ConsumerHeartbeatResult,
  type PartitionCounts,
} from "./consumer-group-manager.ts";
import {
  DEFAULT_GROUP_CONFIG,
  type GroupConfig,
  NEW_MEMBER_JOIN_TIMEOUT_MS,
  type PerGroupTimings,
} from "./group-config.ts";
import { describedError, describeGroup } from "./group-description.ts";
import {
  classicMembershipRecord,
  consumerMembershipRecord,
  restoreClassicGroup,
} from "./group-membership.ts";
import { decodeMembership, encodeMembership } from "./group-membership-record.ts";
import {
  consumerMembersOf,
  fillFromConsumerGroup,
  MALFORMED_UPGRADE,
  upgradeRefusal,
} from "./group-migration.ts";
import {
  commitError,
  countCommitPartitions,
  deleteOffsets,
  ensureOffsetsLoaded,
  fetchOffsets,
  partitionErrors,
  storeOffsets,
} from "./group-offsets.ts";
import type {
  DeleteGroupResult,
  DescribedGroup,
  HeartbeatRequest,
  JoinGroupRequest,
  JoinGroupResult,
  LeaveGroupRequest,
  LeaveGroupResult,
  LeavingMember,
  ListGroupsRequest,
  ListGroupsResult,
  OffsetCommitRequest,
  OffsetCommitResult,
  OffsetDeleteRequest,
  OffsetDeleteResult,
  OffsetFetchRequest,
  OffsetFetchResult,
  SyncGroupRequest,
  SyncGroupResult,
} from "./group-operations.ts";
import { GroupState } from "./group-state.ts";
import {
  uniqueProtocols,
  validateCurrentMember,
  validateOffsetCommit,
  validateSync,
} from "./group-validation.ts";
import { EMPTY_BYTES, MemberMetadata } from "./member-metadata.ts";
import { type MembershipSnapshot, MembershipWriter } from "./membership-writer.ts";
import type { CommittedOffset, OffsetStore, StoredGroupMetadata } from "./offset-store.ts";
import {
  isPendingGroupId,
  PENDING_GROUP_PREFIX,
  PENDING_PRODUCERS_MAX,
  type PendingOffset,
  PendingTxnOffsets,
} from "./pending-txn-offsets.ts";
import {
  ShareGroupManager,
  type ShareGroupSettings,
  type ShareHeartbeatRequest,
  type ShareHeartbeatResult,
} from "./share-group-manager.ts";

type JoinCallback = (result: JoinGroupResult) => void;

/** JoinGroup v4+ clients understand MEMBER_ID_REQUIRED (KIP-394). */
const MEMBER_ID_REQUIRED_MIN_VERSION = 4;
/** JoinGroup v9+ lets a rejoining static leader skip the assignment (KIP-814). */
const SKIP_ASSIGNMENT_MIN_VERSION = 9;
/** DescribeGroups v6+ answers GROUP_ID_NOT_FOUND for unknown groups instead of a Dead group. */
const DESCRIBE_NOT_FOUND_MIN_VERSION = 6;
/** Store reads one request (ListGroups, DescribeGroups, DeleteGroups) keeps in flight. */
const STORE_READ_CONCURRENCY = 64;
/** Groups remembered as having had their stored pending offsets read (pendingScanned). */
const PENDING_SCANNED_MAX = 100_000;
/** Group types as ListGroups names them: JoinGroup groups, and KIP-848 groups. */
const CLASSIC_GROUP_TYPE = "classic";
const CONSUMER_GROUP_TYPE = "consumer";
/** ListGroups v5 GroupType (and ProtocolType) of a KIP-932 share group. */
const SHARE_GROUP_TYPE = "share";

/** One group as groupViews() shows it. */
export interface GroupView {
  readonly groupId: string;
  readonly state: GroupState;
  readonly protocolType: string | null;
  readonly members: readonly MemberMetadata[];
  readonly offsets: ReadonlyMap<TopicPartitionKey, CommittedOffset> | null;
}

/**
 * Kafka 3.9's classic group coordinator (`kafka.coordinator.group.GroupCoordinator`) on plain
 * domain types: membership and rebalances in memory, committed offsets through an OffsetStore.
 *
 * Requests that Kafka parks in purgatory (JoinGroup until the rebalance completes, SyncGroup
 * until the leader's assignment arrives) return promises resolved by the same events. Timers
 * replace Kafka's delayed operations: one join timer and one sync timer per group, one session
 * timer per member. Everything runs on the event loop, so no locking is needed; the only awaits
 * are offset-store calls, after which state is checked again.
 */
export class GroupCoordinator {
  private readonly config: GroupConfig;
  private readonly groups = new Map<string, ClassicGroup>();
  private readonly pendingTxnOffsets: PendingTxnOffsets;
  /**
   * Groups whose stored pending offsets this broker read since it became their coordinator
   * (readStoredPending). At most PENDING_SCANNED_MAX; forgetting one costs a re-read.
   */
  private readonly pendingScanned = new Set<string>();
  /** KIP-848 membership; the group's offsets stay with its entry in `groups`. */
  private readonly consumerGroups: ConsumerGroupManager;
  /** KIP-932 share groups: membership only; delivery state is the partition leaders'. */
  readonly shareGroups: ShareGroupManager;
  /** Stores each group's membership record after a change (group-membership-record.ts). */
  private readonly membershipWriter: MembershipWriter;
  /** Membership reads in flight, so concurrent requests of a group share one. */
  private readonly membershipLoads = new Map<string, Promise<number | null>>();
  private active = false;
  private cleanupTimer: ReturnType<typeof setInterval> | null = null;

  /**
   * `isCoordinatorFor` says whether this broker coordinates a group: always in the embedded
   * broker; in a cluster, for the groups whose __consumer_offsets partition it leads (other groups
   * get NOT_COORDINATOR, and clients ask FindCoordinator again).
   */
  constructor(
    private readonly store: OffsetStore,
    config: Partial<GroupConfig> = {},
    private readonly nowMs: () => number = Date.now,
    private readonly isCoordinatorFor: (groupId: string) => boolean = () => true,
    partitionCounts: PartitionCounts = () => new Map(),
    private readonly log: Logger = SILENT_LOGGER,
    topicNames?: () => TopicNames,
    timings?: PerGroupTimings,
  ) {
    this.config = { ...DEFAULT_GROUP_CONFIG, ...config };
    this.pendingTxnOffsets = new PendingTxnOffsets(store);
    const snapshot = (groupId: string) => this.membershipSnapshot(groupId);
    this.membershipWriter = new MembershipWriter(store, snapshot, log);
    const onChange = (groupId: string) => this.membershipWriter.schedule(groupId);
    this.consumerGroups = new ConsumerGroupManager(
      this.config,
      partitionCounts,
      onChange,
      topicNames,
      timings,
    );
    this.consumerGroups.onDowngrade = (group, leaving, rebalance) =>
      this.downgrade(group, leaving, rebalance);
    const shares = shareSettings(this.config);
    this.shareGroups = new ShareGroupManager(shares, partitionCounts, timings ?? null);
    assert(
      this.config.minSessionTimeoutMs <= this.config.maxSessionTimeoutMs,
      `group.min.session.timeout.ms ${this.config.minSessionTimeoutMs} exceeds the max ` +
        `${this.config.maxSessionTimeoutMs}`,
    );
    assert(this.config.maxSize > 0, `group.max.size must be positive, not ${this.config.maxSize}`);
  }

  /**
   * Serves requests. Groups with committed offsets are taken from the store when a request
   * needs them (see adoptStoredGroup), so a restart and a failover look the same.
   */
  async start(): Promise<void> {
    assert(!this.active, "the group coordinator is already started");
    // Offsets of transactions still open when the broker stopped wait for their markers.
    await this.pendingTxnOffsets.load(await this.store.listGroupIds(PENDING_GROUP_PREFIX));
    this.active = true;
    const cleanupIntervalMs = this.config.emptyGroupCleanupIntervalMs;
    this.cleanupTimer = setInterval(() => this.removeIdleGroups(), cleanupIntervalMs);
    this.cleanupTimer.unref();
  }

  /** Answers parked requests with NOT_COORDINATOR and stops all timers; the store stays open. */
  close(): void {
    this.active = false;
    if (this.cleanupTimer !== null) clearInterval(this.cleanupTimer);
    for (const group of this.groups.values()) this.unload(group);
    this.groups.clear();
    for (const group of [...this.consumerGroups.all()]) this.consumerGroups.unload(group.groupId);
    this.shareGroups.close();
  }

  /**
   * Drops the groups this broker no longer coordinates (the live brokers changed): their
   * parked requests are answered NOT_COORDINATOR, and whoever takes a group over reads its
   * offsets from the store afresh, as must this broker if the group comes back to it.
   */
  releaseMovedGroups(): void {
    for (const groupId of this.pendingScanned) {
      if (!this.isCoordinatorFor(groupId)) this.pendingScanned.delete(groupId);
    }
    for (const group of [...this.groups.values()]) {
      if (this.isCoordinatorFor(group.groupId)) continue;
      this.unload(group);
      this.groups.delete(group.groupId);
    }
    for (const group of [...this.consumerGroups.all()]) {
      if (!this.isCoordinatorFor(group.groupId)) this.consumerGroups.unload(group.groupId);
    }
    for (const group of [...this.shareGroups.all()]) {
      if (!this.isCoordinatorFor(group.groupId)) this.shareGroups.unload(group.groupId);
    }
  }

  // ---- ShareGroupHeartbeat, ShareGroupDescribe (KIP-932) -----------------------------------

  /**
   * One share group heartbeat. A group id taken by a classic or consumer group, even an Empty
   * one that only has offsets, is GROUP_ID_NOT_FOUND (Kafka's getOrMaybeCreateShareGroup): a
   * group new here is first looked up in the store, where such a group may be kept.
   */
  async shareGroupHeartbeat(req: ShareHeartbeatRequest): Promise<ShareHeartbeatResult> {
    const refuse = (errorCode: number, errorMessage: string | null) => ({
      errorCode,
      errorMessage,
      memberId: req.memberId,
      memberEpoch: req.memberEpoch,
      heartbeatIntervalMs: 0,
      assignment: null,
    });
    const invalidId = this.validateGroupId(req.groupId, true);
    if (invalidId !== null) return refuse(invalidId, null);
    if (this.shareGroups.get(req.groupId) === undefined && req.groupId !== "") {
      const adoptError = await this.adoptStoredGroup(req.groupId);
      if (adoptError !== null) return refuse(adoptError, null);
    }
    const type = this.groupType(req.groupId);
    if (type !== null && type !== SHARE_GROUP_TYPE) {
      return refuse(ErrorCode.GROUP_ID_NOT_FOUND, `Group ${req.groupId} is not a share group.`);
    }
    return this.shareGroups.heartbeat(req);
  }

  /**
   * The type of the group holding the id here ("classic", "consumer" or "share"), or null. One
   * id is one group: the APIs of another type refuse it, as Kafka's GroupMetadataManager does.
   */
  groupType(groupId: string): string | null {
    if (this.shareGroups.get(groupId) !== undefined) return SHARE_GROUP_TYPE;
    if (this.consumerGroups.get(groupId) !== undefined) return CONSUMER_GROUP_TYPE;
    const classic = this.groups.get(groupId);
    return classic === undefined || classic.is(GroupState.Dead) ? null : CLASSIC_GROUP_TYPE;
  }

  /** Whether a share group holds the id, so the classic and consumer group APIs refuse it. */
  private isShareGroup(groupId: string): boolean {
    return this.shareGroups.get(groupId) !== undefined;
  }

  private listedShareGroups() {
    return [...this.shareGroups.all()]
      .filter((g) => this.isCoordinatorFor(g.groupId))
      .map((g) => ({
        groupId: g.groupId,
        protocolType: SHARE_GROUP_TYPE,
        groupState: g.state,
        groupType: SHARE_GROUP_TYPE,
      }));
  }

  /** The share group, or null (unknown here, or not coordinated by this broker). */
  shareGroup(groupId: string) {
    if (!this.active || !this.isCoordinatorFor(groupId)) return null;
    return this.shareGroups.get(groupId) ?? null;
  }

  // ---- ConsumerGroupHeartbeat, ConsumerGroupDescribe (KIP-848) ------------------------------

  /**
   * One KIP-848 heartbeat. A group with classic members is not a consumer group (Kafka with
   * its migration policy off says so too); an Empty classic group with offsets becomes one.
   */
  async consumerGroupHeartbeat(req: ConsumerHeartbeatRequest): Promise<ConsumerHeartbeatResult> {
    const refuse = (errorCode: number, errorMessage: string | null) => ({
      errorCode,
      errorMessage,
      memberId: req.memberId,
      memberEpoch: req.memberEpoch,
      heartbeatIntervalMs: 0,
      assignment: null,
    });
    const invalidId =
      this.validateGroupId(req.groupId, true) ?? (await this.loadGroup(req.groupId));
    if (invalidId !== null) return refuse(invalidId, null);
    if (this.isShareGroup(req.groupId)) {
      return refuse(ErrorCode.GROUP_ID_NOT_FOUND, `Group ${req.groupId} is not a consumer group.`);
    }
    const classic = this.groups.get(req.groupId);
    if (classic !== undefined && !classic.is(GroupState.Empty)) {
      const refusal = this.upgrade(classic, req.memberEpoch);
      if (refusal !== null) return refuse(ErrorCode.GROUP_ID_NOT_FOUND, refusal);
    }
    if (classic === undefined && this.createGroup(req.groupId) === null) {
      return refuse(ErrorCode.COORDINATOR_NOT_AVAILABLE, null);
    }
    const result = this.consumerGroups.heartbeat(req);
    // Answered once what it changed is stored, so a coordinator taking over knows the epoch.
    const storeError = await this.membershipWriter.settled(req.groupId);
    if (storeError === null || result.errorCode !== ErrorCode.NONE) return result;
    return refuse(storeError, null);
  }

  /**
   * Online upgrade (Kafka's getOrMaybeCreateConsumerGroup with convertToConsumerGroup): a
   * joining ConsumerGroupHeartbeat turns a classic group with members into a consumer group of
   * the same members, when `group.consumer.migration.policy` allows it and the group uses the
   * consumer protocol. Parked JoinGroup and SyncGroup requests are answered
   * REBALANCE_IN_PROGRESS, so their members rejoin the new group. Null when done, else why not.
   */
  private upgrade(group: ClassicGroup, memberEpoch: number): string | null {
    if (memberEpoch !== 0) return `Group ${group.groupId} is not a consumer group.`;
    const { consumerMigrationPolicy, maxSize } = this.config;
    const refusal = upgradeRefusal(group, consumerMigrationPolicy, maxSize);
    if (refusal !== null) return refusal;
    const members = consumerMembersOf(group);
    if (members === null) return MALFORMED_UPGRADE(group.groupId);
    this.dismissMembers(group, ErrorCode.REBALANCE_IN_PROGRESS);
    group.resetToEmpty();
    this.consumerGroups.adoptClassic(group.groupId, group.generationId, members);
    this.log.info(
      `group ${group.groupId}: upgraded to a consumer group (${members.length} members)`,
    );
    return null;
  }

  /**
   * Online downgrade (Kafka's convertToClassicGroup): the last KIP-848 member left a group of
   * classic members (or was replaced by one), which become a classic group at the group epoch
   * and rebalance at once (after a replacement: if the subscription changed).
   */
  private downgrade(consumer: ConsumerGroup, leaving: string | null, rebalance: boolean): void {
    const group = this.groups.get(consumer.groupId);
    assert(group?.is(GroupState.Empty) === true, `${consumer.groupId} has no Empty classic group`);
    fillFromConsumerGroup(group, consumer, leaving);
    for (const m of group.allMembers()) this.scheduleSessionTimeout(group, m, m.sessionTimeoutMs);
    if (rebalance) this.prepareRebalance(group);
    this.membershipWriter.schedule(group.groupId);
    this.log.info(`group ${group.groupId}: downgraded to a classic group (${group.size} members)`);
  }

  /**
   * Takes a group this broker coordinates but does not hold from its stored membership record
   * (a failover or a restart), with its members' session timers armed: members that go on
   * heartbeating keep their generation or epoch and assignment. Handlers of the membership
   * APIs call it first. Null when done (or nothing to do), else the store's error code.
   */
  loadGroup(groupId: string): Promise<number | null> {
    if (groupId === "" || !this.active || !this.isCoordinatorFor(groupId)) {
      return Promise.resolve(null);
    }
    if (this.groups.has(groupId)) return Promise.resolve(null);
    let load = this.membershipLoads.get(groupId);
    if (load === undefined) {
      load = this.readMembership(groupId).finally(() => this.membershipLoads.delete(groupId));
      this.membershipLoads.set(groupId, load);
    }
    return load;
  }

  private async readMembership(groupId: string): Promise<number | null> {
    let bytes: Uint8Array | null;
    try {
      bytes = await this.store.loadMembership(groupId);
    } catch (error) {
      if (error instanceof KafkaError) return error.code;
      // An unreadable record (a disk error) is no record: the members rejoin.
      this.log.warn(`group ${groupId}: stored membership not read: ${String(error)}`);
      return null;
    }
    if (bytes === null || this.groups.has(groupId)) return null;
    if (!this.active || !this.isCoordinatorFor(groupId)) return null;
    const record = decodeMembership(bytes);
    if (record === null) {
      this.log.warn(`group ${groupId}: stored membership not readable, members will rejoin`);
      return null;
    }
    const group = this.createGroup(groupId);
    if (group === null) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    if (record.type === "consumer") {
      this.consumerGroups.restore(groupId, record);
    } else if (restoreClassicGroup(group, record)) {
      for (const m of group.allMembers()) this.scheduleSessionTimeout(group, m, m.sessionTimeoutMs);
    }
    this.log.info(`group ${groupId}: taken over from the store (${record.members.length} members)`);
    return null;
  }

  /** What the membership writer stores for a group now. */
  private membershipSnapshot(groupId: string): MembershipSnapshot {
    if (!this.active || !this.isCoordinatorFor(groupId)) return "skip";
    const consumer = this.consumerGroups.get(groupId);
    if (consumer !== undefined && !consumer.isEmpty) {
      return encodeMembership(consumerMembershipRecord(consumer));
    }
    const classic = this.groups.get(groupId);
    const record = classic === undefined ? null : classicMembershipRecord(classic);
    return record === null ? null : encodeMembership(record);
  }

  /** The KIP-848 group, or null (unknown here, or a classic group). */
  consumerGroup(groupId: string) {
    if (!this.active || !this.isCoordinatorFor(groupId)) return null;
    return this.consumerGroups.get(groupId) ?? null;
  }

  /** Number of groups in memory, for tests and metrics. */
  get groupCount(): number {
    return this.groups.size;
  }

  /**
   * The groups held here (not Dead), for metrics and the console: a read-only view, taken
   * between awaits. Offsets are null until a request loaded them; groups only in the store
   * (none of their members came back since a restart) are not listed.
   */
  groupViews(): GroupView[] {
    return [...this.groups.values()]
      .filter((g) => !g.is(GroupState.Dead))
      .map((g) => ({
        groupId: g.groupId,
        state: g.state,
        protocolType: g.protocolType,
        members: g.allMembers(),
        offsets: g.offsets,
      }));
  }

  /** The group's state, or null when this coordinator does not know it. */
  groupState(groupId: string): GroupState | null {
    return this.groups.get(groupId)?.state ?? null;
  }

  // ---- JoinGroup --------------------------------------------------------------------------

  joinGroup(req: JoinGroupRequest): Promise<JoinGroupResult> {
    if (this.groups.has(req.groupId)) return this.joinLoadedGroup(req);
    return this.loadGroup(req.groupId).then((loadError) => {
      if (loadError === null) return this.joinLoadedGroup(req);
      return joinError(req.memberId, loadError);
    });
  }

  private joinLoadedGroup(req: JoinGroupRequest): Promise<JoinGroupResult> {
    const errorCode = this.validateGroupId(req.groupId, false) ?? this.validateJoin(req);
    if (errorCode !== null) return Promise.resolve(joinError(req.memberId, errorCode));
    // A share group holds the id: Kafka answers INCONSISTENT_GROUP_PROTOCOL with no member id.
    if (this.isShareGroup(req.groupId)) {
      return Promise.resolve(joinError("", ErrorCode.INCONSISTENT_GROUP_PROTOCOL));
    }
    const isUnknownMember = req.memberId === "";
    let group = this.groups.get(req.groupId);
    if (group === undefined) {
      if (!isUnknownMember) {
        return Promise.resolve(joinError(req.memberId, ErrorCode.UNKNOWN_MEMBER_ID));
      }
      group = this.createGroup(req.groupId) ?? undefined;
      if (group === undefined) {
        return Promise.resolve(joinError(req.memberId, ErrorCode.COORDINATOR_NOT_AVAILABLE));
      }
    }
    const joined = { ...req, protocols: uniqueProtocols(req.protocols) };
    if (this.consumerGroups.hasMembers(req.groupId)) return this.joinConsumerGroup(joined);
    // A consumer group whose members all left makes way for a classic one, as in Kafka.
    if (this.consumerGroups.get(req.groupId) !== undefined) {
      this.consumerGroups.unload(req.groupId);
    }
    const target = group;
    return new Promise((resolve) => {
      if (!this.acceptJoiningMember(target, req.memberId)) {
        if (target.has(req.memberId)) this.removeMember(target, target.get(req.memberId));
        resolve(joinError("", ErrorCode.GROUP_MAX_SIZE_REACHED));
      } else if (isUnknownMember) {
        this.newMemberJoin(target, joined, resolve);
      } else {
        this.currentMemberJoin(target, joined, resolve);
      }
      this.tryCompleteJoin(target);
    });
  }

  /** A classic member joining a consumer group: answered once its change is stored. */
  private async joinConsumerGroup(req: JoinGroupRequest): Promise<JoinGroupResult> {
    const result = this.consumerGroups.classicJoin(req);
    const storeError = await this.membershipWriter.settled(req.groupId);
    if (storeError === null || result.errorCode !== ErrorCode.NONE) return result;
    return joinError(req.memberId, storeError);
  }

  private validateJoin(req: JoinGroupRequest): number | null {
    const { minSessionTimeoutMs, maxSessionTimeoutMs } = this.config;
    if (req.sessionTimeoutMs < minSessionTimeoutMs) return ErrorCode.INVALID_SESSION_TIMEOUT;
    if (req.sessionTimeoutMs > maxSessionTimeoutMs) return ErrorCode.INVALID_SESSION_TIMEOUT;
    if (req.protocols.length > this.config.protocolsPerMemberMax) return ErrorCode.INVALID_REQUEST;
    let metadataBytes = 0;
    for (const p of req.protocols) metadataBytes += p.metadata.length;
    if (metadataBytes > this.config.memberMetadataBytesMax) return ErrorCode.INVALID_REQUEST;
    return null;
  }

  /** Kafka's acceptJoiningMember: whether group.max.size leaves room for this member. */
  private acceptJoiningMember(group: ClassicGroup, memberId: string): boolean {
    switch (group.state) {
      case GroupState.Empty:
      case GroupState.Dead:
        return true;
      case GroupState.PreparingRebalance:
        // Counting members awaiting join (not all members) lets the group shed the members
        // that rejoin last when group.max.size was lowered.
        return (
          (group.has(memberId) && group.get(memberId).isAwaitingJoin) ||
          group.awaitingJoinMembers < this.config.maxSize
        );
      case GroupState.CompletingRebalance:
      case GroupState.Stable:
        return group.has(memberId) || group.size < this.config.maxSize;
    }
  }

  private newMemberJoin(group: ClassicGroup, req: JoinGroupRequest, resolve: JoinCallback): void {
    if (group.is(GroupState.Dead)) {
      return resolve(joinError("", ErrorCode.COORDINATOR_NOT_AVAILABLE));
    }
    if (
      !group.supportsProtocols(
        req.protocolType,
        req.protocols.map((p) => p.name),
      )
    ) {
      return resolve(joinError("", ErrorCode.INCONSISTENT_GROUP_PROTOCOL));
    }
    const newMemberId = group.generateMemberId(req.clientId, req.groupInstanceId);
    if (req.groupInstanceId !== null) {
      const oldMemberId = group.staticMemberId(req.groupInstanceId);
      if (oldMemberId !== undefined) {
        return this.replaceStaticMember(group, oldMemberId, newMemberId, req, resolve);
      }
      return this.addMemberAndRebalance(group, newMemberId, req, resolve);
    }
    if (req.apiVersion < MEMBER_ID_REQUIRED_MIN_VERSION) {
      return this.addMemberAndRebalance(group, newMemberId, req, resolve);
    }
    // KIP-394: hand out the id first and count the member only when it rejoins with it, so a
    // client whose JoinGroup times out does not leave a ghost member behind.
    if (group.pendingMembers.size >= this.config.pendingMembersMax) {
      return resolve(joinError("", ErrorCode.GROUP_MAX_SIZE_REACHED));
    }
    const expire = () => this.expirePendingMember(group, newMemberId);
    const timer = setTimeout(expire, req.sessionTimeoutMs);
    timer.unref();
    group.pendingMembers.set(newMemberId, timer);
    resolve(joinError(newMemberId, ErrorCode.MEMBER_ID_REQUIRED));
  }

  private currentMemberJoin(
    group: ClassicGroup,
    req: JoinGroupRequest,
    resolve: JoinCallback,
  ): void {
    if (group.is(GroupState.Dead)) {
      return resolve(joinError(req.memberId, ErrorCode.COORDINATOR_NOT_AVAILABLE));
    }
    if (
      !group.supportsProtocols(
        req.protocolType,
        req.protocols.map((p) => p.name),
      )
    ) {
      return resolve(joinError(req.memberId, ErrorCode.INCONSISTENT_GROUP_PROTOCOL));
    }
    if (group.pendingMembers.has(req.memberId)) {
      // Pending ids are only handed to dynamic members; a static one reusing it is confused.
      if (req.groupInstanceId !== null) {
        return resolve(joinError(req.memberId, ErrorCode.UNKNOWN_MEMBER_ID));
      }
      return this.addMemberAndRebalance(group, req.memberId, req, resolve);
    }
    const errorCode = validateCurrentMember(group, req.memberId, req.groupInstanceId);
    if (errorCode !== null) return resolve(joinError(req.memberId, errorCode));
    const member = group.get(req.memberId);
    switch (group.state) {
      case GroupState.PreparingRebalance:
        return this.updateMemberAndRebalance(group, member, req, resolve);
      case GroupState.CompletingRebalance:
        // The same metadata means the member missed its JoinGroup response: send it again.
        if (member.matches(req.protocols)) {
          return resolve(this.currentGeneration(group, member.memberId));
        }
        return this.updateMemberAndRebalance(group, member, req, resolve);
      case GroupState.Stable:
        // A rejoining leader forces a rebalance: that is how it reacts to metadata changes
        // (new partitions, say) that do not change its own subscription.
        if (group.isLeader(member.memberId) || !member.matches(req.protocols)) {
          return this.updateMemberAndRebalance(group, member, req, resolve);
        }
        return resolve(this.currentGeneration(group, member.memberId));
      case GroupState.Empty:
      case GroupState.Dead:
        return resolve(joinError(req.memberId, ErrorCode.UNKNOWN_MEMBER_ID));
    }
  }

  /** The current generation's JoinGroup answer, with the member list for the leader only. */
  private currentGeneration(
    group: ClassicGroup,
    memberId: string,
    skipAssignment = false,
  ): JoinGroupResult {
    const isLeader = group.isLeader(memberId);
    return {
      errorCode: ErrorCode.NONE,
      generationId: group.generationId,
      protocolType: group.protocolType,
      protocolName: group.protocolName,
      leader: group.leaderId ?? "",
      skipAssignment,
      memberId,
      members: isLeader ? group.currentMemberMetadata() : [],
    };
  }

  private addMemberAndRebalance(
    group: ClassicGroup,
    memberId: string,
    req: JoinGroupRequest,
    resolve: JoinCallback,
  ): void {
    const member = new MemberMetadata(
      memberId,
      req.groupInstanceId,
      req.clientId,
      req.clientHost,
      Math.max(0, req.rebalanceTimeoutMs),
      req.sessionTimeoutMs,
      req.protocolType,
      req.protocols,
    );
    member.isNew = true;
    // A member joining during the initial delay extends it, up to the rebalance timeout.
    if (group.is(GroupState.PreparingRebalance) && group.generationId === 0) {
      group.newMemberAdded = true;
    }
    group.add(member, resolve);
    // A new member cannot heartbeat while its JoinGroup is parked, so its session timeout does
    // not apply yet; this longer timeout drops it if it vanishes during a long rebalance.
    this.scheduleSessionTimeout(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS);
    this.maybePrepareRebalance(group);
  }

  private updateMemberAndRebalance(
    group: ClassicGroup,
    member: MemberMetadata,
    req: JoinGroupRequest,
    resolve: JoinCallback,
  ): void {
    // A JoinGroup already parked for this member was given up by its client; answer it so
    // its connection's response queue does not stall.
    group.answerJoin(member, joinError(member.memberId, ErrorCode.REBALANCE_IN_PROGRESS));
    this.updateMember(group, member, req, resolve);
    this.maybePrepareRebalance(group);
  }

  /** Records a rejoining member's protocols and timeouts and parks its JoinGroup. */
  private updateMember(
    group: ClassicGroup,
    member: MemberMetadata,
    req: JoinGroupRequest,
    resolve: JoinCallback,
  ): void {
    const rebalanceTimeoutMs = Math.max(0, req.rebalanceTimeoutMs);
    group.updateMember(member, req.protocols, rebalanceTimeoutMs, req.sessionTimeoutMs, resolve);
  }

  /**
   * KIP-345: a static member rejoining with an unknown member id takes over its instance's
   * entry under a new id. In Stable, when the group's protocol would not change, there is no
   * rebalance: the member gets the current generation and keeps its assignment.
   */
  private replaceStaticMember(
    group: ClassicGroup,
    oldMemberId: string,
    newMemberId: string,
    req: JoinGroupRequest,
    resolve: JoinCallback,
  ): void {
    assert(req.groupInstanceId !== null, "only static members are replaced");
    const previousLeader = group.leaderId ?? "";
    const member = group.replaceStaticMember(req.groupInstanceId, oldMemberId, newMemberId);
    this.scheduleSessionTimeout(group, member, member.sessionTimeoutMs);
    this.updateMember(group, member, req, resolve);
    switch (group.state) {
      case GroupState.Stable:
        if (group.protocolName !== group.selectProtocol()) return this.maybePrepareRebalance(group);
        this.membershipWriter.schedule(group.groupId);
        if (req.apiVersion >= SKIP_ASSIGNMENT_MIN_VERSION) {
          // The leader learns it leads (to keep watching metadata) but must not reassign.
          const isLeader = group.isLeader(newMemberId);
          group.answerJoin(member, this.currentGeneration(group, newMemberId, isLeader));
        } else {
          // Older clients would run a trivial assignment that a Stable group ignores; naming
          // the old leader id keeps the restarted member a follower.
          const current = this.currentGeneration(group, newMemberId);
          group.answerJoin(member, { ...current, leader: previousLeader, members: [] });
        }
        return;
      case GroupState.CompletingRebalance:
        // The leader may be assigning to the old member id; start over so the new id gets one.
        return this.prepareRebalance(group);
      case GroupState.PreparingRebalance:
        return;
      case GroupState.Empty:
      case GroupState.Dead:
        assert(false, `${group.groupId} has a static member in state ${group.state}`);
    }
  }

  // ---- Rebalance machinery ------------------------------------------------------------------

  private maybePrepareRebalance(group: ClassicGroup): void {
    if (group.canRebalance) this.prepareRebalance(group);
  }

  /** Moves the group to PreparingRebalance and arms the delayed join (Kafka's prepareRebalance). */
  private prepareRebalance(group: ClassicGroup): void {
    if (group.is(GroupState.CompletingRebalance)) {
      for (const m of group.allMembers()) {
        m.assignment = EMPTY_BYTES;
        group.answerSync(m, syncError(ErrorCode.REBALANCE_IN_PROGRESS));
      }
    }
    this.clearPendingSync(group);
    const wasEmpty = group.is(GroupState.Empty);
    group.transitionTo(GroupState.PreparingRebalance);
    if (wasEmpty) {
      // A new group waits group.initial.rebalance.delay.ms for more members, so a fleet of
      // consumers starting together causes one rebalance instead of one per consumer.
      const delayMs = this.config.initialRebalanceDelayMs;
      this.scheduleJoin(group, "initial", delayMs, Math.max(group.rebalanceTimeoutMs - delayMs, 0));
    } else {
      this.scheduleJoin(group, "members", group.rebalanceTimeoutMs, 0);
      // Kafka's tryCompleteElseWatch: a group whose members have all rejoined (or that has no
      // members left) completes at once, so the last member's LeaveGroup or session expiry
      // is answered with the group already Empty rather than one timer tick later.
      this.tryCompleteJoin(group);
    }
  }

  private scheduleJoin(
    group: ClassicGroup,
    wait: JoinWait,
    delayMs: number,
    remainingMs: number,
  ): void {
    if (group.joinTimer !== null) clearTimeout(group.joinTimer);
    group.joinWait = wait;
    const expire = () => this.onJoinTimer(group, wait, delayMs, remainingMs);
    group.joinTimer = setTimeout(expire, delayMs);
    group.joinTimer.unref();
  }

  /** Kafka's InitialDelayedJoin and DelayedJoin expiry. */
  private onJoinTimer(
    group: ClassicGroup,
    wait: JoinWait,
    delayMs: number,
    remainingMs: number,
  ): void {
    group.joinTimer = null;
    if (!group.is(GroupState.PreparingRebalance)) return;
    if (wait === "initial" && group.newMemberAdded && remainingMs !== 0) {
      group.newMemberAdded = false;
      const nextDelayMs = Math.min(this.config.initialRebalanceDelayMs, remainingMs);
      return this.scheduleJoin(group, "initial", nextDelayMs, Math.max(remainingMs - delayMs, 0));
    }
    this.completeJoin(group);
  }

  /**
   * Ends the join phase early once every member has rejoined. The initial delay waits for
   * members still to come, so it is not cut short, unless nobody is left to wait for: the last
   * member left during it (Kafka would keep a memberless group in PreparingRebalance until the
   * delay ends, refusing DeleteGroups with NON_EMPTY_GROUP meanwhile).
   */
  private tryCompleteJoin(group: ClassicGroup): void {
    if (!group.is(GroupState.PreparingRebalance) || !group.hasAllMembersJoined) return;
    const memberless = group.size === 0;
    if (group.joinWait !== "members" && !memberless) return;
    if (group.joinTimer !== null) clearTimeout(group.joinTimer);
    group.joinTimer = null;
    this.completeJoin(group);
  }

  /** Kafka's onCompleteJoin: drops dynamic members that did not rejoin, starts a generation. */
  private completeJoin(group: ClassicGroup): void {
    assert(group.is(GroupState.PreparingRebalance), `${group.groupId} joins in ${group.state}`);
    for (const m of group.notYetRejoinedMembers()) if (!m.isStatic) this.removeMember(group, m);
    if (!group.maybeElectNewJoinedLeader() && group.size > 0) {
      // Only static members remain and none rejoined: wait until they do or their sessions end.
      return this.scheduleJoin(group, "members", group.rebalanceTimeoutMs, 0);
    }
    group.initNextGeneration();
    if (group.is(GroupState.Empty)) return this.membershipWriter.schedule(group.groupId);
    for (const m of group.allMembers()) {
      group.answerJoin(m, this.currentGeneration(group, m.memberId));
      this.scheduleSessionTimeout(group, m, m.sessionTimeoutMs);
      m.isNew = false;
      group.pendingSyncMembers.add(m.memberId);
    }
    const generationId = group.generationId;
    const expire = () => this.expirePendingSync(group, generationId);
    group.syncTimer = setTimeout(expire, group.rebalanceTimeoutMs);
    group.syncTimer.unref();
  }

  /** Members that got a JoinGroup response but never sent SyncGroup are removed (KIP-814 era). */
  private expirePendingSync(group: ClassicGroup, generationId: number): void {
    group.syncTimer = null;
    if (generationId !== group.generationId || group.pendingSyncMembers.size === 0) return;
    if (!group.is(GroupState.CompletingRebalance) && !group.is(GroupState.Stable)) return;
    for (const memberId of [...group.pendingSyncMembers]) {
      this.removeMember(group, group.get(memberId));
    }
    this.prepareRebalance(group);
  }

  private clearPendingSync(group: ClassicGroup): void {
    group.pendingSyncMembers.clear();
    if (group.syncTimer !== null) clearTimeout(group.syncTimer);
    group.syncTimer = null;
  }

  private removePendingSyncMember(group: ClassicGroup, memberId: string): void {
    group.pendingSyncMembers.delete(memberId);
    if (group.pendingSyncMembers.size === 0) this.clearPendingSync(group);
  }

  /** Arms the member's session deadline; a heartbeat (or any proof of life) re-arms it. */
  private scheduleSessionTimeout(
    group: ClassicGroup,
    member: MemberMetadata,
    timeoutMs: number,
  ): void {
    member.heartbeatSatisfied = false;
    if (member.sessionTimer !== null) clearTimeout(member.sessionTimer);
    member.sessionTimer = setTimeout(() => this.onSessionTimeout(group, member), timeoutMs);
    member.sessionTimer.unref();
  }

  private onSessionTimeout(group: ClassicGroup, member: MemberMetadata): void {
    member.sessionTimer = null;
    if (group.is(GroupState.Dead) || !group.has(member.memberId)) return;
    if (group.get(member.memberId) !== member) return;
    if (!member.hasSatisfiedHeartbeat) this.removeMemberAndUpdateGroup(group, member);
  }

  private expirePendingMember(group: ClassicGroup, memberId: string): void {
    if (!group.removePendingMember(memberId)) return;
    this.tryCompleteJoin(group);
  }

  /** Kafka's removeMemberAndUpdateGroup: the group reacts to a member that left or failed. */
  private removeMemberAndUpdateGroup(group: ClassicGroup, member: MemberMetadata): void {
    this.removeMember(group, member);
    switch (group.state) {
      case GroupState.Stable:
      case GroupState.CompletingRebalance:
        return this.maybePrepareRebalance(group);
      case GroupState.PreparingRebalance:
        return this.tryCompleteJoin(group);
      case GroupState.Empty:
      case GroupState.Dead:
        return;
    }
  }

  /** Removes a member, answering its parked requests with UNKNOWN_MEMBER_ID. */
  private removeMember(group: ClassicGroup, member: MemberMetadata): void {
    group.answerJoin(member, joinError("", ErrorCode.UNKNOWN_MEMBER_ID));
    group.answerSync(member, syncError(ErrorCode.UNKNOWN_MEMBER_ID));
    this.dropMember(group, member);
  }

  private dropMember(group: ClassicGroup, member: MemberMetadata): void {
    if (member.sessionTimer !== null) clearTimeout(member.sessionTimer);
    member.sessionTimer = null;
    group.remove(member.memberId);
  }

  // ---- SyncGroup, Heartbeat, LeaveGroup ---------------------------------------------------

  syncGroup(req: SyncGroupRequest): Promise<SyncGroupResult> {
    if (this.groups.has(req.groupId)) return this.syncLoadedGroup(req);
    return this.loadGroup(req.groupId).then((loadError) => {
      return loadError === null ? this.syncLoadedGroup(req) : syncError(loadError);
    });
  }

  private syncLoadedGroup(req: SyncGroupRequest): Promise<SyncGroupResult> {
    const errorCode = this.validateGroupId(req.groupId, false) ?? this.validateAssignments(req);
    if (errorCode !== null) return Promise.resolve(syncError(errorCode));
    if (this.consumerGroups.hasMembers(req.groupId)) {
      return Promise.resolve(this.consumerGroups.classicSync(req));
    }
    const group = this.groups.get(req.groupId);
    if (group === undefined) return Promise.resolve(syncError(ErrorCode.UNKNOWN_MEMBER_ID));
    const invalid = validateSync(group, req);
    if (invalid !== null) return Promise.resolve(syncError(invalid));
    switch (group.state) {
      case GroupState.Empty:
        return Promise.resolve(syncError(ErrorCode.UNKNOWN_MEMBER_ID));
      case GroupState.PreparingRebalance:
        return Promise.resolve(syncError(ErrorCode.REBALANCE_IN_PROGRESS));
      case GroupState.CompletingRebalance:
        return new Promise((resolve) => this.parkSync(group, req, resolve));
      case GroupState.Stable: {
        const member = group.get(req.memberId);
        this.removePendingSyncMember(group, member.memberId);
        this.scheduleSessionTimeout(group, member, member.sessionTimeoutMs);
        return Promise.resolve(assigned(group, member.assignment));
      }
      case GroupState.Dead:
        return Promise.resolve(syncError(ErrorCode.COORDINATOR_NOT_AVAILABLE));
    }
  }

  private validateAssignments(req: SyncGroupRequest): number | null {
    for (const a of req.assignments) {
      if (a.assignment.length > this.config.memberAssignmentBytesMax) {
        return ErrorCode.INVALID_REQUEST;
      }
    }
    return null;
  }

  /** Parks a SyncGroup until the leader's assignment arrives; the leader's own sync delivers it. */
  private parkSync(
    group: ClassicGroup,
    req: SyncGroupRequest,
    resolve: (r: SyncGroupResult) => void,
  ): void {
    const member = group.get(req.memberId);
    group.answerSync(member, syncError(ErrorCode.REBALANCE_IN_PROGRESS));
    member.awaitingSync = resolve;
    this.removePendingSyncMember(group, member.memberId);
    if (!group.isLeader(member.memberId)) return;
    // Copied: the decoded bytes are views into the request's network buffer.
    const assignments = new Map(req.assignments.map((a) => [a.memberId, a.assignment.slice()]));
    // Members the leader left out get an empty assignment, as in Kafka.
    for (const m of group.allMembers()) {
      m.assignment = assignments.get(m.memberId) ?? EMPTY_BYTES;
      const answered = group.answerSync(m, assigned(group, m.assignment));
      // A member whose session ran out while it waited for the assignment starts afresh.
      if (answered) this.scheduleSessionTimeout(group, m, m.sessionTimeoutMs);
    }
    group.transitionTo(GroupState.Stable);
    this.membershipWriter.schedule(group.groupId);
  }

  heartbeat(req: HeartbeatRequest): number {
    const invalidId = this.validateGroupId(req.groupId, false);
    if (invalidId !== null) return invalidId;
    if (this.consumerGroups.hasMembers(req.groupId))
      return this.consumerGroups.classicHeartbeat(req);
    const group = this.groups.get(req.groupId);
    if (group === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
    if (group.is(GroupState.Dead)) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    const errorCode = validateCurrentMember(group, req.memberId, req.groupInstanceId);
    if (errorCode !== null) return errorCode;
    if (req.generationId !== group.generationId) return ErrorCode.ILLEGAL_GENERATION;
    if (group.is(GroupState.Empty)) return ErrorCode.UNKNOWN_MEMBER_ID;
    const member = group.get(req.memberId);
    this.scheduleSessionTimeout(group, member, member.sessionTimeoutMs);
    if (group.is(GroupState.PreparingRebalance)) return ErrorCode.REBALANCE_IN_PROGRESS;
    return ErrorCode.NONE;
  }

  /** LeaveGroup for one or more members (batched since v3, KIP-345). */
  leaveGroup(req: LeaveGroupRequest): LeaveGroupResult {
    const invalidId = this.validateGroupId(req.groupId, false);
    if (invalidId !== null) return { errorCode: invalidId, members: [] };
    if (this.consumerGroups.hasMembers(req.groupId)) {
      const members = this.consumerGroups.classicLeave(req.groupId, req.members);
      return { errorCode: ErrorCode.NONE, members };
    }
    const group = this.groups.get(req.groupId);
    const answer = (m: LeavingMember, errorCode: number) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      errorCode,
    });
    if (group === undefined) {
      const members = req.members.map((m) => answer(m, ErrorCode.UNKNOWN_MEMBER_ID));
      return { errorCode: ErrorCode.NONE, members };
    }
    if (group.is(GroupState.Dead)) {
      return { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, members: [] };
    }
    const members = req.members.map((m) => answer(m, this.leaveOne(group, m)));
    return { errorCode: ErrorCode.NONE, members };
  }

  private leaveOne(group: ClassicGroup, leaving: LeavingMember): number {
    if (leaving.memberId === "") {
      // Admin removal of a static member by instance id alone (kafka-consumer-groups --delete ...).
      const instanceId = leaving.groupInstanceId;
      const memberId = instanceId === null ? undefined : group.staticMemberId(instanceId);
      if (memberId === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
      this.removeMemberAndUpdateGroup(group, group.get(memberId));
      return ErrorCode.NONE;
    }
    if (group.removePendingMember(leaving.memberId)) {
      this.tryCompleteJoin(group);
      return ErrorCode.NONE;
    }
    const errorCode = validateCurrentMember(group, leaving.memberId, leaving.groupInstanceId);
    if (errorCode !== null) return errorCode;
    this.removeMemberAndUpdateGroup(group, group.get(leaving.memberId));
    return ErrorCode.NONE;
  }

  // ---- DescribeGroups, ListGroups, DeleteGroups ---------------------------------------------

  describeGroups(groupIds: readonly string[], apiVersion: number): Promise<DescribedGroup[]> {
    return mapLimit(groupIds, STORE_READ_CONCURRENCY, async (groupId) => {
      if (!this.active) return describedError(groupId, ErrorCode.COORDINATOR_NOT_AVAILABLE, null);
      if (!this.isCoordinatorFor(groupId)) {
        return describedError(groupId, ErrorCode.NOT_COORDINATOR, null);
      }
      const adoptError = await this.adoptStoredGroup(groupId);
      if (adoptError !== null) return describedError(groupId, adoptError, null);
      const group = this.groups.get(groupId);
      // A consumer group, with classic members or none, or a share group, is not described
      // here (Kafka 4).
      const notClassic =
        this.consumerGroups.get(groupId) !== undefined || this.isShareGroup(groupId);
      if (group === undefined || group.is(GroupState.Dead) || notClassic) {
        if (apiVersion >= DESCRIBE_NOT_FOUND_MIN_VERSION) {
          const what = notClassic ? "is not a classic group" : "not found";
          const message = `Group ${groupId} ${what}.`;
          return describedError(groupId, ErrorCode.GROUP_ID_NOT_FOUND, message);
        }
        return describedError(groupId, ErrorCode.NONE, null);
      }
      return describeGroup(group);
    });
  }

  async listGroups(req: ListGroupsRequest): Promise<ListGroupsResult> {
    if (!this.active) return { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, groups: [] };
    const adoptError = await this.adoptStoredGroups();
    if (adoptError !== null) return { errorCode: adoptError, groups: [] };
    const states = new Set(req.statesFilter.map((s) => s.toLowerCase()));
    const types = new Set(req.typesFilter.map((t) => t.toLowerCase()));
    const groups = [...this.groups.values()]
      .filter((g) => !g.is(GroupState.Dead) && this.isCoordinatorFor(g.groupId))
      .map((g) => {
        const consumer = this.consumerGroups.get(g.groupId);
        // A consumer group whose members left stays one (Empty) until a JoinGroup or cleanup.
        if (consumer === undefined) {
          const protocolType = g.protocolType ?? "";
          return {
            groupId: g.groupId,
            protocolType,
            groupState: g.state,
            groupType: CLASSIC_GROUP_TYPE,
          };
        }
        const groupState = consumer.state;
        return {
          groupId: g.groupId,
          protocolType: "consumer",
          groupState,
          groupType: CONSUMER_GROUP_TYPE,
        };
      })
      .concat(this.listedShareGroups())
      .filter((g) => states.size === 0 || states.has(g.groupState.toLowerCase()))
      .filter((g) => types.size === 0 || types.has(g.groupType));
    return { errorCode: ErrorCode.NONE, groups };
  }

  /** Deletes Empty groups and their offsets; groups with members get NON_EMPTY_GROUP. */
  async deleteGroups(groupIds: readonly string[]): Promise<DeleteGroupResult[]> {
    const results = new Map<string, number>();
    const eligible: ClassicGroup[] = [];
    const unique = [...new Set(groupIds)];
    const adoptErrors = await mapLimit(unique, STORE_READ_CONCURRENCY, async (groupId) =>
      this.active && this.isCoordinatorFor(groupId) ? this.adoptStoredGroup(groupId) : null,
    );
    for (const [i, groupId] of unique.entries()) {
      const group = this.groups.get(groupId);
      const adoptError = adoptErrors[i] ?? null;
      if (!this.active) results.set(groupId, ErrorCode.COORDINATOR_NOT_AVAILABLE);
      else if (adoptError !== null) results.set(groupId, adoptError);
      else if (!this.isCoordinatorFor(groupId)) results.set(groupId, ErrorCode.NOT_COORDINATOR);
      else if (group === undefined || group.is(GroupState.Dead)) {
        results.set(groupId, ErrorCode.GROUP_ID_NOT_FOUND);
      } else if (!group.is(GroupState.Empty) || this.consumerGroups.hasMembers(groupId)) {
        results.set(groupId, ErrorCode.NON_EMPTY_GROUP);
      } else eligible.push(group);
    }
    for (const group of eligible) {
      group.transitionTo(GroupState.Dead);
      this.groups.delete(group.groupId);
      this.consumerGroups.unload(group.groupId);
    }
    await Promise.all(
      eligible.map(async (group) => {
        results.set(group.groupId, await this.deleteStoredGroup(group));
      }),
    );
    return [...results].map(([groupId, errorCode]) => ({ groupId, errorCode }));
  }

  private async deleteStoredGroup(group: ClassicGroup): Promise<number> {
    try {
      await this.store.deleteGroup(group.groupId);
      return ErrorCode.NONE;
    } catch (error) {
      if (!(error instanceof KafkaError)) throw error;
      // The offsets are still stored: bring the group back (offsets reloaded on next use).
      if (!this.groups.has(group.groupId)) {
        this.groups.set(group.groupId, new ClassicGroup(group.groupId));
      }
      return error.code;
    }
  }

  // ---- Offsets ----------------------------------------------------------------------------

  async offsetCommit(req: OffsetCommitRequest): Promise<OffsetCommitResult> {
    const invalidId = this.validateGroupId(req.groupId, true);
    if (invalidId !== null) return commitError(req, invalidId);
    // A share group keeps no committed offsets (Kafka's ShareGroup.validateOffsetCommit).
    if (this.isShareGroup(req.groupId)) return commitError(req, ErrorCode.GROUP_ID_NOT_FOUND);
    if (countCommitPartitions(req) > this.config.offsetsPerCommitMax) {
      return commitError(req, ErrorCode.INVALID_COMMIT_OFFSET_SIZE);
    }
    const membershipError = await this.loadGroup(req.groupId);
    if (membershipError !== null) return commitError(req, membershipError);
    const consumer = this.consumerGroups.get(req.groupId);
    let group = this.groups.get(req.groupId);
    if (group === undefined) {
      // Only a consumer that assigns partitions itself may create a group by committing.
      if (req.generationId >= 0) return commitError(req, ErrorCode.ILLEGAL_GENERATION);
      group = this.createGroup(req.groupId) ?? undefined;
      if (group === undefined) return commitError(req, ErrorCode.COORDINATOR_NOT_AVAILABLE);
    }
    const loadError = await this.loadOffsets(group);
    if (loadError !== null) return commitError(req, loadError);
    // KIP-848 groups check the member epoch (the request's generation field carries it).
    const errorCode =
      consumer !== undefined
        ? this.consumerGroups.validateCommit(req.groupId, req.memberId, req.generationId)
        : validateOffsetCommit(group, req);
    if (errorCode !== null) return commitError(req, errorCode);
    if (group.is(GroupState.CompletingRebalance)) {
      return commitError(req, ErrorCode.REBALANCE_IN_PROGRESS);
    }
    if (group.has(req.memberId)) {
      const member = group.get(req.memberId);
      this.scheduleSessionTimeout(group, member, member.sessionTimeoutMs);
    }
    const metadataError = await this.storeProtocolType(group);
    if (metadataError !== null) return commitError(req, metadataError);
    return storeOffsets(this.store, this.config, group, req, this.nowMs());
  }

  /**
   * TxnOffsetCommit: offsets of an open transaction, kept pending (durably) until its marker.
   * Members are checked as for OffsetCommit when the request names a generation (KIP-447).
   */
  async txnOffsetCommit(
    req: OffsetCommitRequest & { producerId: bigint },
  ): Promise<OffsetCommitResult> {
    const invalidId = this.validateGroupId(req.groupId, false);
    if (invalidId !== null) return commitError(req, invalidId);
    if (isPendingGroupId(req.groupId)) return commitError(req, ErrorCode.INVALID_GROUP_ID);
    if (this.isShareGroup(req.groupId)) return commitError(req, ErrorCode.GROUP_ID_NOT_FOUND);
    if (countCommitPartitions(req) > this.config.offsetsPerCommitMax) {
      return commitError(req, ErrorCode.INVALID_COMMIT_OFFSET_SIZE);
    }
    if (this.pendingTxnOffsets.producerCount >= PENDING_PRODUCERS_MAX) {
      return commitError(req, ErrorCode.COORDINATOR_NOT_AVAILABLE);
    }
    const membershipError = await this.loadGroup(req.groupId);
    if (membershipError !== null) return commitError(req, membershipError);
    const group = this.groups.get(req.groupId) ?? this.createGroup(req.groupId);
    if (group === null) return commitError(req, ErrorCode.COORDINATOR_NOT_AVAILABLE);
    if (req.generationId >= 0 || req.memberId !== "") {
      // A KIP-848 member commits with its member epoch, checked as for OffsetCommit.
      const errorCode = this.consumerGroups.get(req.groupId)
        ? this.consumerGroups.validateCommit(req.groupId, req.memberId, req.generationId)
        : validateOffsetCommit(group, req);
      if (errorCode !== null) return commitError(req, errorCode);
    }
    const nowMs = this.nowMs();
    const offsets = req.topics.flatMap((t) =>
      t.partitions.map((p) => ({
        topic: t.name,
        partition: p.partitionIndex,
        committed: {
          offset: p.committedOffset,
          leaderEpoch: p.committedLeaderEpoch,
          metadata: p.committedMetadata ?? "",
          commitTimestampMs: nowMs,
        },
      })),
    );
    try {
      await this.pendingTxnOffsets.add(req.producerId, req.groupId, offsets);
    } catch (error) {
      if (error instanceof KafkaError) return commitError(req, error.code);
      throw error;
    }
    return commitError(req, ErrorCode.NONE);
  }

  /**
   * A transaction marker reached the groups (WriteTxnMarkers for __consumer_offsets): the
   * producer's pending offsets become committed (COMMIT) or are dropped (ABORT).
   */
  async completeTransaction(producerId: bigint, commit: boolean): Promise<void> {
    const apply = async (groupId: string, offsets: readonly PendingOffset[]) => {
      await this.store.commit(groupId, offsets);
      await this.loadGroup(groupId);
      const group = this.groups.get(groupId) ?? this.createGroup(groupId);
      if (group?.offsets == null) return; // loaded from the store, with these, on first use
      for (const o of offsets)
        group.offsets.set(topicPartitionKey(o.topic, o.partition), o.committed);
    };
    await this.pendingTxnOffsets.complete(producerId, commit, apply);
    // Those a dead broker held: the groups' coordinator now is the one to commit them.
    const owns = (groupId: string) => this.isCoordinatorFor(groupId);
    await this.pendingTxnOffsets.completeStored(producerId, commit, owns, apply);
  }

  /** Offsets are answered in every group state: a group may use Kafka only to store offsets. */
  async offsetFetch(req: OffsetFetchRequest): Promise<OffsetFetchResult> {
    const memberError = await this.validateFetchMember(req);
    if (memberError !== null) return { errorCode: memberError, topics: [] };
    const result = await this.offsetFetchCommitted(req);
    if (!req.requireStable || result.errorCode !== ErrorCode.NONE) return result;
    const scanError = await this.readStoredPending(req.groupId);
    if (scanError !== null) return { errorCode: scanError, topics: [] };
    if (!this.pendingTxnOffsets.hasPendingFor(req.groupId)) return result;
    // KIP-447: an offset a transaction may still change is UNSTABLE_OFFSET_COMMIT (retriable),
    // so a consumer taking over never starts from the offset the transaction replaces.
    return {
      ...result,
      topics: result.topics.map((t) => ({
        ...t,
        partitions: t.partitions.map((p) =>
          !this.pendingTxnOffsets.isPending(req.groupId, t.name, p.partitionIndex)
            ? p
            : { ...p, committedOffset: -1n, errorCode: ErrorCode.UNSTABLE_OFFSET_COMMIT },
        ),
      })),
    };
  }

  /**
   * The first stable fetch of a group since this broker became its coordinator reads the
   * group's pending offsets from the store: the broker that coordinated it before may have died
   * with a transaction open, and its offsets must be UNSTABLE_OFFSET_COMMIT here too until the
   * marker (KIP-447), or a consumer taking over would start before what that transaction
   * consumed. One listing of the store's group ids per group and coordinator move.
   */
  private async readStoredPending(groupId: string): Promise<number | null> {
    if (this.pendingScanned.has(groupId)) return null;
    try {
      const stored = await this.store.listGroupIds(PENDING_GROUP_PREFIX);
      await this.pendingTxnOffsets.load(stored, (id) => id === groupId);
    } catch (error) {
      if (error instanceof KafkaError) return error.code;
      throw error;
    }
    if (this.pendingScanned.size >= PENDING_SCANNED_MAX) this.pendingScanned.clear();
    this.pendingScanned.add(groupId);
    return null;
  }

  /**
   * OffsetFetch v9+ from a member of a KIP-848 group (Kafka's ConsumerGroup.validateOffsetFetch):
   * an unknown member is UNKNOWN_MEMBER_ID, another epoch STALE_MEMBER_EPOCH (a classic member:
   * ILLEGAL_GENERATION). The group's stored membership is read first, so a coordinator that just
   * took the group over checks its members too.
   */
  private async validateFetchMember(req: OffsetFetchRequest): Promise<number | null> {
    const memberId = req.memberId ?? null;
    const memberEpoch = req.memberEpoch ?? -1;
    if (memberId === null && memberEpoch < 0) return null;
    if (this.validateGroupId(req.groupId, true) !== null) return null; // answered below
    const loadError = await this.loadGroup(req.groupId);
    if (loadError !== null) return loadError;
    return this.consumerGroups.validateFetch(req.groupId, memberId, memberEpoch);
  }

  private async offsetFetchCommitted(req: OffsetFetchRequest): Promise<OffsetFetchResult> {
    const invalidId = this.validateGroupId(req.groupId, true);
    if (invalidId !== null) return { errorCode: invalidId, topics: [] };
    // Kafka's ShareGroup.validateOffsetFetch: a share group's progress is not offsets.
    if (this.isShareGroup(req.groupId))
      return { errorCode: ErrorCode.GROUP_ID_NOT_FOUND, topics: [] };
    const group = this.groups.get(req.groupId);
    // A group unknown here may have offsets stored by the broker that coordinated it before.
    if (group === undefined) return await this.fetchStoredOffsets(req);
    const loadError = await this.loadOffsets(group);
    if (loadError !== null) return { errorCode: loadError, topics: [] };
    return fetchOffsets(group.offsets ?? new Map(), req);
  }

  async offsetDelete(req: OffsetDeleteRequest): Promise<OffsetDeleteResult> {
    const invalidId = this.validateGroupId(req.groupId, false);
    if (invalidId !== null) return { errorCode: invalidId, topics: [] };
    const adoptError = await this.adoptStoredGroup(req.groupId);
    if (adoptError !== null) return { errorCode: adoptError, topics: [] };
    const group = this.groups.get(req.groupId);
    if (group === undefined || group.is(GroupState.Dead)) {
      return { errorCode: ErrorCode.GROUP_ID_NOT_FOUND, topics: [] };
    }
    const loadError = await this.loadOffsets(group);
    if (loadError !== null) return { errorCode: loadError, topics: [] };
    if (group.is(GroupState.Dead)) return { errorCode: ErrorCode.GROUP_ID_NOT_FOUND, topics: [] };
    if (!group.is(GroupState.Empty) && !group.isConsumerGroup) {
      return { errorCode: ErrorCode.NON_EMPTY_GROUP, topics: [] };
    }
    // An Empty group loses any offset; a live consumer group keeps those of subscribed topics.
    const subscribed = (topic: string) =>
      !group.is(GroupState.Empty) && group.isSubscribedToTopic(topic);
    const eligible = req.topics
      .filter((t) => !subscribed(t.name))
      .flatMap((t) => t.partitions.map((partition) => ({ topic: t.name, partition })));
    const deleteError = await deleteOffsets(this.store, group, eligible);
    const topics = partitionErrors(req.topics, (topic) =>
      subscribed(topic) ? ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC : deleteError,
    );
    return { errorCode: ErrorCode.NONE, topics };
  }

  /** Offsets straight from the store, for a group this coordinator has not loaded. */
  private async fetchStoredOffsets(req: OffsetFetchRequest): Promise<OffsetFetchResult> {
    try {
      return fetchOffsets(await this.store.loadGroup(req.groupId), req);
    } catch (error) {
      if (error instanceof KafkaError) return { errorCode: error.code, topics: [] };
      throw error;
    }
  }

  private async loadOffsets(group: ClassicGroup): Promise<number | null> {
    try {
      await ensureOffsetsLoaded(this.store, group);
      return null;
    } catch (error) {
      if (error instanceof KafkaError) return error.code;
      throw error;
    }
  }

  // ---- Groups -----------------------------------------------------------------------------

  /**
   * Takes every stored group this broker coordinates and does not hold yet (ListGroups must
   * show them all). Kafka loads its offsets partitions when it becomes their leader; here the
   * store is shared, so groups are taken when asked for: after a restart or a failover alike.
   */
  private async adoptStoredGroups(): Promise<number | null> {
    let stored: string[];
    try {
      stored = await this.store.listGroups();
    } catch (error) {
      if (error instanceof KafkaError) return error.code;
      throw error;
    }
    const missing = stored.filter(
      (id) => !isPendingGroupId(id) && this.isCoordinatorFor(id) && !this.groups.has(id),
    );
    const adopt = (groupId: string) => this.adoptStoredGroup(groupId);
    const errors = await mapLimit(missing, STORE_READ_CONCURRENCY, adopt);
    return errors.find((e) => e !== null) ?? null;
  }

  /**
   * Brings a group with committed offsets into memory as an Empty group with its stored
   * protocol type, as the coordinator before showed it. Null when done or nothing is stored.
   */
  private async adoptStoredGroup(groupId: string): Promise<number | null> {
    const membershipError = await this.loadGroup(groupId);
    if (membershipError !== null) return membershipError;
    if (this.groups.has(groupId)) return null;
    let stored: StoredGroupMetadata | null;
    try {
      stored = await this.store.describeStoredGroup(groupId);
    } catch (error) {
      if (error instanceof KafkaError) return error.code;
      throw error;
    }
    if (stored === null || !this.active || !this.isCoordinatorFor(groupId)) return null;
    // A JoinGroup or commit may have created the group during the read.
    const group = this.groups.get(groupId) ?? this.createGroup(groupId);
    if (group === null) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    if (group.is(GroupState.Empty) && group.protocolType === null) {
      group.protocolType = stored.protocolType;
    }
    group.storedProtocolType = stored.protocolType;
    return null;
  }

  /**
   * Writes the group's protocol type before its first commit under it, so the group survives a
   * failover with it: what the store holds matters only for groups with offsets.
   */
  private async storeProtocolType(group: ClassicGroup): Promise<number | null> {
    const protocolType = group.protocolType;
    if (protocolType === null || protocolType === group.storedProtocolType) return null;
    try {
      await this.store.storeGroupMetadata(group.groupId, { protocolType });
      group.storedProtocolType = protocolType;
      return null;
    } catch (error) {
      if (error instanceof KafkaError) return error.code;
      throw error;
    }
  }

  /** Kafka's isValidGroupId plus the coordinator-active and coordinator-owner checks. */
  private validateGroupId(groupId: string, emptyAllowed: boolean): number | null {
    if (!emptyAllowed && groupId === "") return ErrorCode.INVALID_GROUP_ID;
    if (!this.active) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    if (!this.isCoordinatorFor(groupId)) return ErrorCode.NOT_COORDINATOR;
    return null;
  }

  /** A new Empty group, or null when groupsMax is reached even after dropping idle groups. */
  private createGroup(groupId: string): ClassicGroup | null {
    assert(!this.groups.has(groupId), `group ${groupId} already exists`);
    if (this.groups.size >= this.config.groupsMax) this.removeIdleGroups();
    if (this.groups.size >= this.config.groupsMax) return null;
    const group = new ClassicGroup(groupId);
    this.groups.set(groupId, group);
    return group;
  }

  /**
   * Forgets Empty groups that have no committed offsets (Kafka's offset-expiration task does the
   * same). Groups whose offsets were never loaded are kept: the store may hold offsets for them.
   */
  private removeIdleGroups(): void {
    for (const [groupId, group] of this.groups) {
      if (!group.is(GroupState.Empty) || group.pendingMembers.size > 0) continue;
      if (this.consumerGroups.hasMembers(groupId)) continue;
      // Groups whose offsets were never loaded may have some in the store: keep them.
      if (group.offsets === null || group.offsetsLoading !== null) continue;
      if (group.offsets.size > 0) continue;
      group.transitionTo(GroupState.Dead);
      this.groups.delete(groupId);
    }
    this.consumerGroups.removeEmpty();
  }

  /**
   * Stops the group's timers and removes its members and pending members, answering their
   * parked JoinGroup and SyncGroup requests with `errorCode` (a move, or an online upgrade).
   */
  private dismissMembers(group: ClassicGroup, errorCode: number): void {
    if (group.joinTimer !== null) clearTimeout(group.joinTimer);
    group.joinTimer = null;
    this.clearPendingSync(group);
    for (const memberId of [...group.pendingMembers.keys()]) group.removePendingMember(memberId);
    for (const m of group.allMembers()) {
      group.answerJoin(m, joinError(m.memberId, errorCode));
      group.answerSync(m, syncError(errorCode));
      this.dropMember(group, m);
    }
  }

  private unload(group: ClassicGroup): void {
    this.dismissMembers(group, ErrorCode.NOT_COORDINATOR);
    group.transitionTo(GroupState.Dead);
  }
}

/** A SyncGroup answer carrying the member's assignment of the current generation. */
function assigned(group: ClassicGroup, assignment: Uint8Array): SyncGroupResult {
  return {
    errorCode: ErrorCode.NONE,
    protocolType: group.protocolType,
    protocolName: group.protocolName,
    assignment,
  };
}

/** Share groups are bounded like the others: the classic groups' limit applies to them too. */
function shareSettings(config: GroupConfig): ShareGroupSettings {
  return {
    sessionTimeoutMs: config.shareSessionTimeoutMs,
    heartbeatIntervalMs: config.shareHeartbeatIntervalMs,
    maxSize: config.shareMaxSize,
    groupsMax: config.groupsMax,
  };
}
