import type { TopicNames } from "../common/internal-topics.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { assert } from "../util/assert.ts";
import { compileRe2Pattern } from "../util/safe-pattern.ts";
import { joinError, syncError } from "./classic-group.ts";
import {
  type ClassicMemberInfo,
  ConsumerGroup,
  type ConsumerMember,
  newMember,
  STATIC_LEFT_EPOCH,
} from "./consumer-group.ts";
import { ASSIGNORS, type Assignment } from "./consumer-group-assignors.ts";
import {
  type ClassicHeartbeatRequest,
  type ClassicJoinRequest,
  type ClassicSyncRequest,
  classicJoinAnswer,
  classicMember,
  classicSyncAnswer,
  mustRejoin,
  requiresKnownMemberId,
  syncCheck,
} from "./consumer-group-classic.ts";
import { decodeSubscription } from "./consumer-protocol.ts";
import {
  brokerWideTimings,
  downgradeEnabled,
  type GroupConfig,
  type PerGroupTimings,
} from "./group-config.ts";
import { restoreConsumerGroup } from "./group-membership.ts";
import type { ConsumerMembershipRecord } from "./group-membership-record.ts";
import type { JoinGroupResult, LeavingMember, SyncGroupResult } from "./group-operations.ts";
import { sameProtocols } from "./member-metadata.ts";

/**
 * The KIP-848 side of the group coordinator (Kafka's GroupMetadataManager.consumerGroupHeartbeat):
 * ConsumerGroupHeartbeat joins, leaves and reconciles members, and each member's session and
 * rebalance timers fence it when it goes quiet. Every change is reported to `onChange`, which
 * stores the group's membership record beside its offsets, so that a coordinator taking the
 * group over (`restore`) carries on with the members' epochs and assignments.
 */

export interface HeartbeatRequest {
  readonly groupId: string;
  readonly memberId: string;
  readonly memberEpoch: number;
  readonly instanceId: string | null;
  readonly rackId: string | null;
  readonly rebalanceTimeoutMs: number;
  readonly subscribedTopicNames: readonly string[] | null;
  /** A regex subscription (RE2 syntax; null: unchanged, empty: none). */
  readonly subscribedTopicRegex: string | null;
  readonly serverAssignor: string | null;
  /** Partitions the member owns, by topic name (null: unchanged). */
  readonly owned: Assignment | null;
  readonly clientId: string;
  readonly clientHost: string;
}

export interface HeartbeatResult {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly memberId: string;
  readonly memberEpoch: number;
  readonly heartbeatIntervalMs: number;
  /** The member's assignment when the member must hear it, else null. */
  readonly assignment: Assignment | null;
}

/** Partition counts of the named topics that exist. */
export type PartitionCounts = (topics: ReadonlySet<string>) => Map<string, number>;

const NO_TOPICS: TopicNames = { version: 0, names: [] };

/** Epoch -1 leaves the group; -2 leaves for now, as a static member that will be back. */
const LEAVE_EPOCH = -1;
const STATIC_LEAVE_EPOCH = STATIC_LEFT_EPOCH;

export class ConsumerGroupManager {
  private readonly groups = new Map<string, ConsumerGroup>();
  /**
   * Set by the coordinator: makes a classic group of the group's members but `leavingMemberId`
   * (an online downgrade). The group is no longer here when it is called.
   */
  onDowngrade:
    | ((group: ConsumerGroup, leavingMemberId: string | null, rebalance: boolean) => void)
    | null = null;

  /** `onChange` hears of every change a membership record must cover (to store it). */
  constructor(
    private readonly config: GroupConfig,
    private readonly partitionCounts: PartitionCounts,
    private readonly onChange: (groupId: string) => void = () => {},
    private readonly topicNames: () => TopicNames = () => NO_TOPICS,
    private readonly timings: PerGroupTimings = brokerWideTimings(config),
  ) {}

  /** Takes over a stored group, arming each member's timers as a heartbeat would. */
  restore(groupId: string, record: ConsumerMembershipRecord): ConsumerGroup {
    assert(!this.groups.has(groupId), `consumer group ${groupId} is already loaded`);
    const group = new ConsumerGroup(groupId, this.config.consumerAssignors);
    restoreConsumerGroup(group, record);
    this.groups.set(groupId, group);
    for (const member of group.members.values()) this.armTimers(group, member);
    return group;
  }

  get(groupId: string): ConsumerGroup | undefined {
    return this.groups.get(groupId);
  }

  all(): IterableIterator<ConsumerGroup> {
    return this.groups.values();
  }

  /** Whether the group has KIP-848 members (a classic JoinGroup must not mix in). */
  hasMembers(groupId: string): boolean {
    return (this.groups.get(groupId)?.members.size ?? 0) > 0;
  }

  heartbeat(req: HeartbeatRequest): HeartbeatResult {
    const invalid = this.validate(req);
    if (invalid !== null) return this.error(req, invalid[0], invalid[1]);
    let group = this.groups.get(req.groupId);
    if (group === undefined) {
      if (req.memberEpoch !== 0) return this.error(req, ErrorCode.UNKNOWN_MEMBER_ID, null);
      group = new ConsumerGroup(req.groupId, this.config.consumerAssignors);
      this.groups.set(req.groupId, group);
    }
    if (req.memberEpoch === STATIC_LEAVE_EPOCH && this.staticLeave(group, req)) {
      return this.answer(req.groupId, req.memberId, req.memberEpoch, null);
    }
    if (req.memberEpoch === LEAVE_EPOCH || req.memberEpoch === STATIC_LEAVE_EPOCH) {
      this.leave(group, req.memberId);
      return this.answer(req.groupId, req.memberId, req.memberEpoch, null);
    }
    const stateBefore = fingerprint(group, req.memberId);
    const member = this.memberFor(group, req);
    if (typeof member === "number") return this.error(req, member, null);
    const before = { epoch: member.memberEpoch, assigned: member.assigned };
    this.update(group, member, req);
    this.refresh(group);
    group.reconcile(member, req.owned);
    this.armTimers(group, member);
    if (!sameFingerprint(fingerprint(group, member.memberId), stateBefore)) {
      this.onChange(group.groupId);
    }
    const changed = before.epoch !== member.memberEpoch || before.assigned !== member.assigned;
    const full = changed || req.memberEpoch === 0 || req.owned !== null;
    const assignment = full ? member.assigned : null;
    return this.answer(req.groupId, member.memberId, member.memberEpoch, assignment);
  }

  /** Brings the group's topics and target up to date with its members (a new epoch if any). */
  private refresh(group: ConsumerGroup): void {
    group.resolveRegexes(this.topicNames());
    group.updatePartitionCounts(this.partitionCounts(group.subscribedTopics()));
    group.maybeComputeTarget();
  }

  // ---- Classic members (online upgrade and downgrade) --------------------------------------

  /**
   * Online upgrade: the members of a classic group become members of a new consumer group as
   * they are (Kafka's ConsumerGroup.fromClassicGroup): the generation becomes the group epoch
   * and each member's epoch, its assignment its partitions and target.
   */
  adoptClassic(groupId: string, generationId: number, members: ConsumerMember[]): void {
    assert(!this.hasMembers(groupId), `${groupId} is upgraded with consumer members`);
    const group = new ConsumerGroup(groupId, this.config.consumerAssignors);
    const target = new Map(members.map((m) => [m.memberId, m.assigned]));
    const topics = new Set(members.flatMap((m) => m.subscribedTopicNames));
    const epochs = {
      groupEpoch: generationId,
      targetEpoch: generationId,
      assignorName: group.assignorName,
      bump: false,
    };
    group.restore(epochs, target, this.partitionCounts(topics), members);
    this.groups.set(groupId, group);
    for (const m of members) this.armTimers(group, m);
  }

  /**
   * A classic member's JoinGroup into a consumer group with members (Kafka's
   * classicGroupJoinToConsumerGroup): joins or updates the member from its subscription,
   * reconciles it with the partitions it says it owns, and answers at once with its epoch as
   * the generation and no leader. It then has its rebalance timeout to send SyncGroup.
   */
  classicJoin(req: ClassicJoinRequest): JoinGroupResult {
    const group = this.groups.get(req.groupId);
    assert(group !== undefined && !group.isEmpty, `${req.groupId} has no consumer members`);
    const memberId = req.memberId === "" ? crypto.randomUUID() : req.memberId;
    const fail = (errorCode: number) => joinError(memberId, errorCode);
    if (group.members.size >= this.config.maxSize && !group.members.has(memberId)) {
      return fail(ErrorCode.GROUP_MAX_SIZE_REACHED);
    }
    const names = req.protocols.map((p) => p.name);
    if (!group.supportsClassicProtocols(memberId, req.protocolType, names)) {
      return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    }
    if (requiresKnownMemberId(req)) return fail(ErrorCode.MEMBER_ID_REQUIRED);
    const subscription = decodeSubscription(req.protocols[0]!.metadata);
    if (subscription === null) return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    const stateBefore = fingerprint(group, memberId);
    const holder =
      req.groupInstanceId === null ? undefined : group.staticMember(req.groupInstanceId);
    const replacesConsumer =
      holder !== undefined && holder.memberId !== memberId && !holder.classic;
    const member = this.classicMemberFor(group, memberId, req, holder);
    // Kept when equal: the change check compares it by identity, and a rejoin that changes
    // nothing must not rewrite the stored membership.
    if (!sameClassicInfo(member.classic, req)) {
      member.classic = {
        sessionTimeoutMs: req.sessionTimeoutMs,
        protocols: req.protocols.map((p) => ({ name: p.name, metadata: p.metadata.slice() })),
      };
    }
    if (subscription.rackId !== null) member.rackId = subscription.rackId;
    if (req.rebalanceTimeoutMs >= 0) member.rebalanceTimeoutMs = req.rebalanceTimeoutMs;
    const topicsChanged = !sameTopics(subscription.topics, member.subscribedTopicNames);
    if (topicsChanged) {
      member.subscribedTopicNames = [...new Set(subscription.topics)].sort();
      group.bumpEpoch();
    }
    this.refresh(group);
    group.reconcile(member, subscription.owned);
    // The last KIP-848 member replaced by a classic one under its instance id: a classic group
    // again, rebalancing only if the subscription changed (Kafka's convertToClassicGroup).
    if (replacesConsumer && this.mayDowngrade(group, null)) {
      this.downgrade(group, null, topicsChanged);
      return classicJoinAnswer(member);
    }
    clearTimer(member, "joinTimer");
    clearTimer(member, "rebalanceTimer");
    this.armSessionTimer(group, member);
    clearTimer(member, "syncTimer");
    member.syncTimer = setTimeout(() => this.leave(group, memberId), member.rebalanceTimeoutMs);
    member.syncTimer.unref();
    if (!sameFingerprint(fingerprint(group, memberId), stateBefore)) this.onChange(group.groupId);
    return classicJoinAnswer(member);
  }

  /**
   * The member a classic JoinGroup speaks for: a new one, itself, or a static replacement of
   * `holder`, the member of the request's instance id.
   */
  private classicMemberFor(
    group: ConsumerGroup,
    memberId: string,
    req: ClassicJoinRequest,
    holder: ConsumerMember | undefined,
  ): ConsumerMember {
    if (holder !== undefined && holder.memberId !== memberId) {
      // Kafka replaces the instance's member whatever its protocol, under the new id, epoch 0.
      if (group.members.has(memberId)) this.fence(group, memberId);
      clearTimers(holder);
      const member = group.replaceStaticMember(holder, memberId);
      member.memberEpoch = 0;
      member.previousMemberEpoch = 0;
      return member;
    }
    const existing = group.members.get(memberId);
    if (existing !== undefined) return existing;
    const member = newMember(memberId, req.clientId, req.clientHost);
    member.instanceId = req.groupInstanceId;
    group.add(member);
    return member;
  }

  /** A classic member's SyncGroup: its assignment, as the assignor and reconciliation made it. */
  classicSync(req: ClassicSyncRequest): SyncGroupResult {
    const group = this.groups.get(req.groupId);
    assert(group !== undefined, `${req.groupId} is not a consumer group`);
    const member = classicMember(group, req.memberId, req.groupInstanceId);
    if (typeof member === "number") return syncError(member);
    const invalid = syncCheck(group, member, req);
    if (invalid === ErrorCode.REBALANCE_IN_PROGRESS) this.armJoinTimer(group, member);
    if (invalid !== null) return syncError(invalid);
    clearTimer(member, "syncTimer");
    this.armSessionTimer(group, member);
    return classicSyncAnswer(member);
  }

  /**
   * A classic member's Heartbeat: keeps its session, and answers REBALANCE_IN_PROGRESS when it
   * must rejoin; it then has its rebalance timeout to do so.
   */
  classicHeartbeat(req: ClassicHeartbeatRequest): number {
    const group = this.groups.get(req.groupId);
    assert(group !== undefined, `${req.groupId} is not a consumer group`);
    const member = classicMember(group, req.memberId, req.groupInstanceId);
    if (typeof member === "number") return member;
    if (req.generationId !== member.memberEpoch) return ErrorCode.ILLEGAL_GENERATION;
    this.armSessionTimer(group, member);
    if (!mustRejoin(group, member)) return ErrorCode.NONE;
    this.armJoinTimer(group, member);
    return ErrorCode.REBALANCE_IN_PROGRESS;
  }

  /** Classic LeaveGroup: only classic members leave this way (Kafka's checks, per member). */
  classicLeave(groupId: string, leaving: readonly LeavingMember[]) {
    const group = this.groups.get(groupId);
    assert(group !== undefined, `${groupId} is not a consumer group`);
    return leaving.map((l) => {
      const byInstance =
        l.groupInstanceId === null ? undefined : group.staticMember(l.groupInstanceId);
      // Admin removal names the instance only (an empty member id).
      const memberId =
        l.memberId === "" && byInstance !== undefined ? byInstance.memberId : l.memberId;
      const member = classicMember(group, memberId, l.groupInstanceId);
      const answer = { memberId, groupInstanceId: l.groupInstanceId };
      if (typeof member === "number") return { ...answer, errorCode: member };
      this.fence(group, member.memberId);
      return { ...answer, errorCode: ErrorCode.NONE };
    });
  }

  /** Kafka's scheduleConsumerGroupJoinTimeoutIfAbsent: a told member must rejoin in time. */
  private armJoinTimer(group: ConsumerGroup, member: ConsumerMember): void {
    if (member.joinTimer !== null) return;
    member.joinTimer = setTimeout(
      () => this.leave(group, member.memberId),
      member.rebalanceTimeoutMs,
    );
    member.joinTimer.unref();
  }

  /**
   * A member leaves or is fenced. When only classic members would remain and the policy allows
   * downgrades, the group becomes a classic group of them instead (Kafka's
   * validateOnlineDowngradeWithFencedMembers and convertToClassicGroup).
   */
  private leave(group: ConsumerGroup, memberId: string): void {
    if (!group.members.has(memberId) || !this.mayDowngrade(group, memberId)) {
      return this.fence(group, memberId);
    }
    this.downgrade(group, memberId, true);
  }

  /** Whether the group may become a classic group of its members but `leaving`. */
  private mayDowngrade(group: ConsumerGroup, leaving: string | null): boolean {
    const remaining = group.members.size - (leaving === null ? 0 : 1);
    return (
      remaining > 0 &&
      group.allClassicExcept(leaving) &&
      downgradeEnabled(this.config.consumerMigrationPolicy) &&
      remaining <= this.config.maxSize &&
      this.onDowngrade !== null
    );
  }

  private downgrade(group: ConsumerGroup, leaving: string | null, rebalance: boolean): void {
    for (const m of group.members.values()) clearTimers(m);
    this.groups.delete(group.groupId);
    this.onDowngrade!(group, leaving, rebalance);
  }

  private validate(req: HeartbeatRequest): [number, string] | null {
    const bad = (message: string): [number, string] => [ErrorCode.INVALID_REQUEST, message];
    if (req.groupId === "") return [ErrorCode.INVALID_GROUP_ID, "GroupId can't be empty."];
    if (req.memberEpoch === 0) {
      if (req.rebalanceTimeoutMs < 0) return bad("RebalanceTimeoutMs must be provided.");
      if (req.subscribedTopicNames === null && req.subscribedTopicRegex === null) {
        return bad("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.");
      }
    } else if (req.memberId === "") {
      return bad("MemberId can't be empty.");
    } else if (req.memberEpoch < STATIC_LEAVE_EPOCH) {
      return bad(`MemberEpoch ${req.memberEpoch} is invalid.`);
    }
    if (req.subscribedTopicRegex !== null && req.subscribedTopicRegex !== "") {
      const pattern = compileRe2Pattern(req.subscribedTopicRegex);
      if (typeof pattern === "string") {
        return [
          ErrorCode.INVALID_REGULAR_EXPRESSION,
          `SubscribedTopicRegex \`${req.subscribedTopicRegex}\` is not a valid regular ` +
            `expression: ${pattern}.`,
        ];
      }
    }
    if (
      req.serverAssignor !== null &&
      !this.config.consumerAssignors.includes(req.serverAssignor)
    ) {
      const known = ASSIGNORS.has(req.serverAssignor) ? " (not enabled)" : "";
      return [
        ErrorCode.UNSUPPORTED_ASSIGNOR,
        `Assignor ${req.serverAssignor}${known} is not supported.`,
      ];
    }
    return null;
  }

  /**
   * A static member leaving for now (epoch -2) stays, at epoch -2 with its partitions, until
   * its instance id rejoins or its session timeout ends (Kafka's static member leave).
   */
  private staticLeave(group: ConsumerGroup, req: HeartbeatRequest): boolean {
    const member = group.members.get(req.memberId);
    if (member === undefined || member.instanceId === null) return false;
    if (member.memberEpoch !== STATIC_LEAVE_EPOCH) member.previousMemberEpoch = member.memberEpoch;
    member.memberEpoch = STATIC_LEAVE_EPOCH;
    if (member.rebalanceTimer !== null) clearTimeout(member.rebalanceTimer);
    member.rebalanceTimer = null;
    this.armSessionTimer(group, member);
    this.onChange(group.groupId);
    return true;
  }

  /**
   * A joining member with an instance id whose holder left for now takes the holder's place;
   * while the holder is still in the group the instance id is UNRELEASED_INSTANCE_ID.
   */
  private staticJoin(group: ConsumerGroup, req: HeartbeatRequest): ConsumerMember | number | null {
    if (req.instanceId === null) return null;
    const holder = group.staticMember(req.instanceId);
    if (holder === undefined || holder.memberId === req.memberId) return null;
    // A classic holder is replaced at once (it never says it left), as Kafka does.
    const classic = holder.classic !== null;
    if (holder.memberEpoch !== STATIC_LEAVE_EPOCH && !classic) {
      return ErrorCode.UNRELEASED_INSTANCE_ID;
    }
    clearTimers(holder);
    const memberId = req.memberId === "" ? crypto.randomUUID() : req.memberId;
    const member = group.replaceStaticMember(holder, memberId);
    if (classic) Object.assign(member, { classic: null, memberEpoch: 0, previousMemberEpoch: 0 });
    return member;
  }

  /** The member the request speaks for, new on epoch 0, else an error code. */
  private memberFor(group: ConsumerGroup, req: HeartbeatRequest): ConsumerMember | number {
    const existing = group.members.get(req.memberId);
    if (req.memberEpoch === 0) {
      const replaced = this.staticJoin(group, req);
      if (replaced !== null) return replaced;
      if (existing !== undefined) this.fence(group, existing.memberId);
      if (group.members.size >= this.config.maxSize) return ErrorCode.GROUP_MAX_SIZE_REACHED;
      const memberId = req.memberId === "" ? crypto.randomUUID() : req.memberId;
      const member = newMember(memberId, req.clientId, req.clientHost);
      group.add(member);
      return member;
    }
    if (existing === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
    if (req.memberEpoch === existing.memberEpoch) return existing;
    // A member that missed the answer moving it to a new epoch may repeat the previous one.
    const ownsOnlyAssigned = req.owned === null || ownedWithin(req.owned, existing.assigned);
    if (req.memberEpoch === existing.previousMemberEpoch && ownsOnlyAssigned) return existing;
    return ErrorCode.FENCED_MEMBER_EPOCH;
  }

  private update(group: ConsumerGroup, member: ConsumerMember, req: HeartbeatRequest): void {
    if (req.instanceId !== null) member.instanceId = req.instanceId;
    if (req.rackId !== null) member.rackId = req.rackId;
    if (req.rebalanceTimeoutMs >= 0) member.rebalanceTimeoutMs = req.rebalanceTimeoutMs;
    const topics = req.subscribedTopicNames;
    if (topics !== null && !sameTopics(topics, member.subscribedTopicNames)) {
      member.subscribedTopicNames = [...new Set(topics)].sort();
      group.bumpEpoch();
    }
    const regex = req.subscribedTopicRegex === "" ? null : req.subscribedTopicRegex;
    if (req.subscribedTopicRegex !== null && regex !== member.subscribedTopicRegex) {
      member.subscribedTopicRegex = regex;
      group.bumpEpoch();
    }
    if (req.serverAssignor !== null && req.serverAssignor !== member.serverAssignor) {
      member.serverAssignor = req.serverAssignor;
      group.bumpEpoch();
    }
  }

  /** Session timer from this heartbeat; a rebalance timer while partitions await revocation. */
  private armTimers(group: ConsumerGroup, member: ConsumerMember): void {
    this.armSessionTimer(group, member);
    if (member.classic !== null) return; // classic members have join and sync timers instead
    const fence = () => this.leave(group, member.memberId);
    const revoking = member.state === "unrevoked_partitions";
    if (!revoking && member.rebalanceTimer !== null) {
      clearTimeout(member.rebalanceTimer);
      member.rebalanceTimer = null;
    } else if (revoking && member.rebalanceTimer === null) {
      member.rebalanceTimer = setTimeout(fence, member.rebalanceTimeoutMs);
      member.rebalanceTimer.unref();
    }
  }

  private armSessionTimer(group: ConsumerGroup, member: ConsumerMember): void {
    if (member.sessionTimer !== null) clearTimeout(member.sessionTimer);
    const fence = () => this.leave(group, member.memberId);
    // A classic member keeps the session timeout of its JoinGroup.
    const sessionTimeoutMs =
      member.classic?.sessionTimeoutMs ?? this.timings.consumerSessionTimeoutMs(group.groupId);
    member.sessionTimer = setTimeout(fence, sessionTimeoutMs);
    member.sessionTimer.unref();
  }

  /** Removes a member (left, timed out, or replaced): the others rebalance without it. */
  fence(group: ConsumerGroup, memberId: string, stored = true): void {
    const member = group.remove(memberId);
    if (member === undefined) return;
    clearTimers(member);
    if (group.isEmpty) group.maybeComputeTarget();
    if (stored) this.onChange(group.groupId);
  }

  /**
   * KIP-848 OffsetCommit checks: a member commits with its current epoch (an older one is
   * STALE_MEMBER_EPOCH); without a member id and epoch only while the group has no members.
   */
  validateCommit(groupId: string, memberId: string, memberEpoch: number): number | null {
    const group = this.groups.get(groupId);
    if (group === undefined) return null;
    if (memberId === "" && memberEpoch < 0) {
      return group.isEmpty ? null : ErrorCode.UNKNOWN_MEMBER_ID;
    }
    return memberEpochError(group, memberId, memberEpoch);
  }

  /**
   * OffsetFetch v9+ checks (Kafka's ConsumerGroup.validateOffsetFetch): a member fetches with
   * its current epoch; a request without member id and epoch (an admin client) is not checked.
   * Groups not here (classic ones) are not checked either, as in Kafka.
   */
  validateFetch(groupId: string, memberId: string | null, memberEpoch: number): number | null {
    const group = this.groups.get(groupId);
    if (group === undefined || (memberId === null && memberEpoch < 0)) return null;
    return memberEpochError(group, memberId ?? "", memberEpoch);
  }

  /** Drops the group (deleted, or no longer coordinated here), stopping its timers. */
  unload(groupId: string): void {
    const group = this.groups.get(groupId);
    if (group === undefined) return;
    // Whoever coordinates the group next takes it over as stored: nothing is written here.
    for (const memberId of [...group.members.keys()]) this.fence(group, memberId, false);
    this.groups.delete(groupId);
  }

  /** Forgets groups without members; their offsets stay with the coordinator's group. */
  removeEmpty(): void {
    for (const [groupId, group] of this.groups) if (group.isEmpty) this.groups.delete(groupId);
  }

  private answer(
    groupId: string,
    memberId: string,
    memberEpoch: number,
    assignment: Assignment | null,
  ) {
    const heartbeatIntervalMs = this.timings.consumerHeartbeatIntervalMs(groupId);
    return {
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      memberId,
      memberEpoch,
      heartbeatIntervalMs,
      assignment,
    };
  }

  private error(req: HeartbeatRequest, errorCode: number, errorMessage: string | null) {
    assert(errorCode !== ErrorCode.NONE, "an error answer needs an error");
    const answer = this.answer(req.groupId, req.memberId, req.memberEpoch, null);
    return { ...answer, errorCode, errorMessage };
  }
}

/** A member's commit or fetch with an epoch: UNKNOWN_MEMBER_ID, or a stale epoch's error. */
function memberEpochError(group: ConsumerGroup, memberId: string, memberEpoch: number) {
  const member = group.members.get(memberId);
  if (member === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
  if (memberEpoch === member.memberEpoch) return null;
  // Classic members commit with their generation, and know no member epochs.
  return member.classic !== null ? ErrorCode.ILLEGAL_GENERATION : ErrorCode.STALE_MEMBER_EPOCH;
}

/**
 * What a heartbeat may change that the membership record holds: the group's epochs and size,
 * and the member's epoch, subscription and partitions (assignments are replaced, never
 * mutated, so identity tells a change).
 */
function fingerprint(group: ConsumerGroup, memberId: string): unknown[] {
  const m = group.members.get(memberId);
  return [
    group.groupEpoch,
    group.targetEpoch,
    group.members.size,
    m,
    m?.memberEpoch,
    m?.state,
    m?.assigned,
    m?.revoking,
    m?.subscribedTopicNames,
    m?.subscribedTopicRegex,
    m?.serverAssignor,
    m?.instanceId,
    m?.rackId,
    m?.rebalanceTimeoutMs,
    m?.classic,
  ];
}

type TimerField = "sessionTimer" | "rebalanceTimer" | "joinTimer" | "syncTimer";

function clearTimer(member: ConsumerMember, field: TimerField): void {
  const timer = member[field];
  if (timer !== null) clearTimeout(timer);
  member[field] = null;
}

function clearTimers(member: ConsumerMember): void {
  for (const f of ["sessionTimer", "rebalanceTimer", "joinTimer", "syncTimer"] as const) {
    clearTimer(member, f);
  }
}
/** Whether a JoinGroup repeats the session timeout and protocols a classic member has. */
function sameClassicInfo(info: ClassicMemberInfo | null, req: ClassicJoinRequest): boolean {
  return (
    info !== null &&
    info.sessionTimeoutMs === req.sessionTimeoutMs &&
    sameProtocols(info.protocols, req.protocols)
  );
}

function sameFingerprint(a: unknown[], b: unknown[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

function sameTopics(a: readonly string[], b: readonly string[]): boolean {
  const sa = [...new Set(a)].sort();
  return sa.length === b.length && sa.every((t, i) => t === b[i]);
}

function ownedWithin(owned: Assignment, assigned: Assignment): boolean {
  for (const [topic, partitions] of owned) {
    for (const p of partitions) if (assigned.get(topic)?.has(p) !== true) return false;
  }
  return true;
}
