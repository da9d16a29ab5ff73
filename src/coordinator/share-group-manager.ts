import { ErrorCode } from "../protocol/errors.ts";
import { assert } from "../util/assert.ts";
import type { Assignment } from "./consumer-group-assignors.ts";
import type { PartitionCounts } from "./consumer-group-manager.ts";
import type { PerGroupTimings } from "./group-config.ts";
import { ShareGroup, type ShareMember } from "./share-group.ts";

/**
 * The share-group side of the group coordinator (Kafka's GroupMetadataManager
 * .shareGroupHeartbeat): ShareGroupHeartbeat joins, leaves and updates members; a member silent
 * for the session timeout is removed. Membership lives in memory, as KIP-848 groups' does:
 * after a restart members are told UNKNOWN_MEMBER_ID and rejoin with epoch 0. What matters
 * across restarts, which records were delivered and acknowledged, is the share-partition state
 * kept by the partition leader (server/share-partition-manager.ts).
 */

export interface ShareGroupSettings {
  /** `group.share.session.timeout.ms`. */
  readonly sessionTimeoutMs: number;
  /** `group.share.heartbeat.interval.ms`. */
  readonly heartbeatIntervalMs: number;
  /** `group.share.max.size`: members per group; more get GROUP_MAX_SIZE_REACHED. */
  readonly maxSize: number;
  /** Share groups this coordinator keeps; a new one beyond it is refused. */
  readonly groupsMax: number;
}

export interface ShareHeartbeatRequest {
  readonly groupId: string;
  readonly memberId: string;
  readonly memberEpoch: number;
  readonly rackId: string | null;
  readonly subscribedTopicNames: readonly string[] | null;
  readonly clientId: string;
  readonly clientHost: string;
}

export interface ShareHeartbeatResult {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly memberId: string;
  readonly memberEpoch: number;
  readonly heartbeatIntervalMs: number;
  /** The member's assignment when it changed (or the member just joined), else null. */
  readonly assignment: Assignment | null;
}

const LEAVE_EPOCH = -1;

export class ShareGroupManager {
  private readonly groups = new Map<string, ShareGroup>();

  constructor(
    private readonly settings: ShareGroupSettings,
    private readonly partitionCounts: PartitionCounts,
    /** Group configs' share.session.timeout.ms and share.heartbeat.interval.ms, if any. */
    private readonly timings: PerGroupTimings | null = null,
  ) {}

  get(groupId: string): ShareGroup | undefined {
    return this.groups.get(groupId);
  }

  all(): IterableIterator<ShareGroup> {
    return this.groups.values();
  }

  heartbeat(req: ShareHeartbeatRequest): ShareHeartbeatResult {
    const invalid = validate(req);
    if (invalid !== null) return this.error(req, invalid[0], invalid[1]);
    let group = this.groups.get(req.groupId);
    if (group === undefined) {
      if (req.memberEpoch !== 0) return this.error(req, ErrorCode.UNKNOWN_MEMBER_ID, null);
      if (this.groups.size >= this.settings.groupsMax) {
        return this.error(req, ErrorCode.COORDINATOR_NOT_AVAILABLE, "Too many share groups.");
      }
      group = new ShareGroup(req.groupId);
      this.groups.set(req.groupId, group);
    }
    if (req.memberEpoch === LEAVE_EPOCH) {
      this.fence(group, req.memberId);
      return this.answer(req.groupId, req.memberId, LEAVE_EPOCH, null);
    }
    const member = this.memberFor(group, req);
    if (typeof member === "number") return this.error(req, member, null);
    if (req.rackId !== null) member.rackId = req.rackId;
    const topics = req.subscribedTopicNames;
    if (topics !== null && !sameTopics(topics, member.subscribedTopicNames)) {
      member.subscribedTopicNames = [...new Set(topics)].sort();
      group.groupEpoch++;
    }
    group.updatePartitionCounts(this.partitionCounts(group.subscribedTopics()));
    group.maybeComputeAssignment();
    member.memberEpoch = group.assignmentEpoch;
    this.armSessionTimer(group, member);
    // A member hears its assignment when it joins and whenever the assignment epoch moved.
    const full = req.memberEpoch !== member.memberEpoch;
    const assignment = full ? member.assigned : null;
    return this.answer(req.groupId, member.memberId, member.memberEpoch, assignment);
  }

  private memberFor(group: ShareGroup, req: ShareHeartbeatRequest): ShareMember | number {
    const existing = group.members.get(req.memberId);
    if (req.memberEpoch === 0) {
      if (existing !== undefined) return existing;
      if (group.members.size >= this.settings.maxSize) return ErrorCode.GROUP_MAX_SIZE_REACHED;
      const member: ShareMember = {
        memberId: req.memberId,
        memberEpoch: 0,
        rackId: req.rackId,
        clientId: req.clientId,
        clientHost: req.clientHost,
        subscribedTopicNames: [],
        assigned: new Map(),
        sessionTimer: null,
      };
      group.members.set(member.memberId, member);
      group.groupEpoch++;
      return member;
    }
    if (existing === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
    // A member may be behind by the epochs of changes it has not heard of yet.
    if (req.memberEpoch > existing.memberEpoch) return ErrorCode.FENCED_MEMBER_EPOCH;
    return existing;
  }

  private armSessionTimer(group: ShareGroup, member: ShareMember): void {
    if (member.sessionTimer !== null) clearTimeout(member.sessionTimer);
    const fence = () => this.fence(group, member.memberId);
    const timeoutMs = this.timings?.shareSessionTimeoutMs(group.groupId);
    member.sessionTimer = setTimeout(fence, timeoutMs ?? this.settings.sessionTimeoutMs);
    member.sessionTimer.unref();
  }

  /** Removes a member (left or timed out): the others are reassigned without it. */
  fence(group: ShareGroup, memberId: string): void {
    const member = group.members.get(memberId);
    if (member === undefined) return;
    if (member.sessionTimer !== null) clearTimeout(member.sessionTimer);
    group.members.delete(memberId);
    group.groupEpoch++;
    group.maybeComputeAssignment();
  }

  /** Whether the group exists here with members (DeleteGroups and offset resets need none). */
  hasMembers(groupId: string): boolean {
    return (this.groups.get(groupId)?.members.size ?? 0) > 0;
  }

  /** Drops a group (deleted, or no longer coordinated here), stopping its timers. */
  unload(groupId: string): void {
    const group = this.groups.get(groupId);
    if (group === undefined) return;
    for (const m of group.members.values())
      if (m.sessionTimer !== null) clearTimeout(m.sessionTimer);
    this.groups.delete(groupId);
  }

  close(): void {
    for (const groupId of [...this.groups.keys()]) this.unload(groupId);
  }

  private answer(
    groupId: string,
    memberId: string,
    memberEpoch: number,
    assignment: Assignment | null,
  ) {
    const intervalMs = this.timings?.shareHeartbeatIntervalMs(groupId);
    return {
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      memberId,
      memberEpoch,
      heartbeatIntervalMs: intervalMs ?? this.settings.heartbeatIntervalMs,
      assignment,
    };
  }

  private error(req: ShareHeartbeatRequest, errorCode: number, errorMessage: string | null) {
    assert(errorCode !== ErrorCode.NONE, "an error answer needs an error");
    const answer = this.answer(req.groupId, req.memberId, req.memberEpoch, null);
    return { ...answer, errorCode, errorMessage };
  }
}

function validate(req: ShareHeartbeatRequest): [number, string] | null {
  const bad = (message: string): [number, string] => [ErrorCode.INVALID_REQUEST, message];
  if (req.groupId === "") return [ErrorCode.INVALID_GROUP_ID, "GroupId can't be empty."];
  if (req.memberId === "") return bad("MemberId can't be empty.");
  if (req.memberEpoch < LEAVE_EPOCH) return bad(`MemberEpoch ${req.memberEpoch} is invalid.`);
  if (req.memberEpoch === 0 && req.subscribedTopicNames === null) {
    return bad("SubscribedTopicNames must be set in first request.");
  }
  return null;
}

function sameTopics(a: readonly string[], b: readonly string[]): boolean {
  const sa = [...new Set(a)].sort();
  return sa.length === b.length && sa.every((t, i) => t === b[i]);
}
