/**
 * A member of a classic consumer group, as Kafka's ConsumerCoordinator with the eager range
 * assignor: JoinGroup (with the member id the coordinator requires, KIP-394), the leader
 * assigns with `rangeAssign`, SyncGroup hands out the assignment, Heartbeat keeps the session
 * and learns of rebalances, OffsetCommit carries the generation, LeaveGroup ends membership.
 * A rebalance is reported through `onRebalance`; the owner commits, then calls `join()` again.
 */
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { ClusterError, check } from "./client-errors.ts";
import type { ClusterClient } from "./cluster-client.ts";
import { commitOffsets, findCoordinator } from "./group-offsets.ts";
import { topicsOf } from "./partition-offsets.ts";
import {
  type Assignment,
  decodeAssignment,
  decodeSubscription,
  encodeAssignment,
  encodeSubscription,
  RANGE_ASSIGNOR,
  rangeAssign,
} from "./range-assignor.ts";

/** Kafka consumer keys: session.timeout.ms, heartbeat.interval.ms, max.poll.interval.ms. */
export interface GroupMemberOptions {
  readonly sessionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  readonly rebalanceTimeoutMs: number;
}

export const DEFAULT_GROUP_MEMBER_OPTIONS: GroupMemberOptions = {
  sessionTimeoutMs: 45_000,
  heartbeatIntervalMs: 3_000,
  rebalanceTimeoutMs: 300_000,
};

/** Join attempts before giving up (each retriable error costs one, with a short backoff). */
const JOIN_ATTEMPTS_MAX = 50;
const RETRY_BACKOFF_MS = 200;

/** Errors after which joining again is the way on. */
const REJOIN_ERRORS: ReadonlySet<number> = new Set([
  ErrorCode.REBALANCE_IN_PROGRESS,
  ErrorCode.UNKNOWN_MEMBER_ID,
  ErrorCode.ILLEGAL_GENERATION,
  ErrorCode.NOT_COORDINATOR,
  ErrorCode.COORDINATOR_NOT_AVAILABLE,
  ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
  ErrorCode.MEMBER_ID_REQUIRED,
]);

export class GroupMember {
  memberId = "";
  generationId = -1;
  private coordinator = -1;
  private heartbeat: ReturnType<typeof setTimeout> | null = null;
  private rejoin = false;
  /** Called once when the coordinator asks for a rebalance (or the membership is lost). */
  onRebalance: () => void = () => {};

  constructor(
    private readonly client: ClusterClient,
    readonly groupId: string,
    private readonly topics: readonly string[],
    private readonly options: GroupMemberOptions = DEFAULT_GROUP_MEMBER_OPTIONS,
  ) {}

  /** True once a rebalance was announced: commit, then `join()` again. */
  get needsRejoin(): boolean {
    return this.rejoin;
  }

  /** Joins (or rejoins) the group and returns this member's partitions. */
  async join(): Promise<Assignment> {
    this.stopHeartbeat();
    for (let attempt = 1; attempt <= JOIN_ATTEMPTS_MAX; attempt++) {
      const assignment = await this.tryJoin();
      if (assignment !== null) {
        this.rejoin = false;
        this.scheduleHeartbeat();
        return assignment;
      }
      await Bun.sleep(RETRY_BACKOFF_MS);
    }
    throw new ClusterError(ErrorCode.REBALANCE_IN_PROGRESS, `joining group "${this.groupId}"`);
  }

  /** One JoinGroup and SyncGroup; null when a retriable error means trying again. */
  private async tryJoin(): Promise<Assignment | null> {
    this.coordinator = await findCoordinator(this.client, this.groupId);
    const joined = await this.client.request(
      ApiKey.JoinGroup,
      {
        groupId: this.groupId,
        sessionTimeoutMs: this.options.sessionTimeoutMs,
        rebalanceTimeoutMs: this.options.rebalanceTimeoutMs,
        memberId: this.memberId,
        protocolType: "consumer",
        protocols: [{ name: RANGE_ASSIGNOR, metadata: encodeSubscription(this.topics) }],
      },
      this.coordinator,
      // The coordinator holds a join until every member rejoined, up to the rebalance timeout.
      this.options.rebalanceTimeoutMs + this.client.config.requestTimeoutMs,
    );
    if (joined.errorCode === ErrorCode.MEMBER_ID_REQUIRED) this.memberId = joined.memberId;
    if (joined.errorCode === ErrorCode.UNKNOWN_MEMBER_ID) this.memberId = "";
    if (REJOIN_ERRORS.has(joined.errorCode)) return null;
    check(joined.errorCode, `joining group "${this.groupId}"`);
    this.memberId = joined.memberId;
    this.generationId = joined.generationId;
    const assignments =
      joined.leader === this.memberId ? await this.assign(joined.members) : new Map();
    const synced = await this.client.request(
      ApiKey.SyncGroup,
      {
        groupId: this.groupId,
        generationId: this.generationId,
        memberId: this.memberId,
        protocolType: "consumer",
        protocolName: RANGE_ASSIGNOR,
        assignments: [...assignments].map(([memberId, a]) => ({
          memberId,
          assignment: encodeAssignment(a),
        })),
      },
      this.coordinator,
      this.options.rebalanceTimeoutMs + this.client.config.requestTimeoutMs,
    );
    if (synced.errorCode === ErrorCode.UNKNOWN_MEMBER_ID) this.memberId = "";
    if (REJOIN_ERRORS.has(synced.errorCode)) return null;
    check(synced.errorCode, `syncing group "${this.groupId}"`);
    return decodeAssignment(synced.assignment);
  }

  /** The leader's job: range-assign every member's subscribed topics. */
  private async assign(members: readonly { memberId: string; metadata: Uint8Array }[]) {
    const subscriptions = new Map(members.map((m) => [m.memberId, decodeSubscription(m.metadata)]));
    const topics = [...new Set([...subscriptions.values()].flat())];
    const metadata = topicsOf(await this.client.metadata(topics));
    const counts = new Map(metadata.map((t) => [t.name, t.partitions.length]));
    return rangeAssign(subscriptions, counts);
  }

  private scheduleHeartbeat(): void {
    this.heartbeat = setTimeout(() => void this.sendHeartbeat(), this.options.heartbeatIntervalMs);
  }

  private stopHeartbeat(): void {
    if (this.heartbeat !== null) clearTimeout(this.heartbeat);
    this.heartbeat = null;
  }

  private async sendHeartbeat(): Promise<void> {
    let errorCode: number;
    try {
      const answer = await this.client.request(
        ApiKey.Heartbeat,
        { groupId: this.groupId, generationId: this.generationId, memberId: this.memberId },
        this.coordinator,
      );
      errorCode = answer.errorCode;
    } catch {
      // The coordinator is unreachable: find it again through a rejoin.
      errorCode = ErrorCode.COORDINATOR_NOT_AVAILABLE;
    }
    if (this.heartbeat === null) return;
    if (errorCode === ErrorCode.NONE) return this.scheduleHeartbeat();
    if (errorCode === ErrorCode.UNKNOWN_MEMBER_ID) this.memberId = "";
    this.heartbeat = null;
    this.rejoin = true;
    this.onRebalance();
  }

  /** Commits with this member's generation (accepted while the group prepares a rebalance). */
  commit(offsets: ReadonlyMap<string, bigint>): Promise<void> {
    return commitOffsets(this.client, this.groupId, offsets, "", {
      generationId: this.generationId,
      memberId: this.memberId,
    });
  }

  /** Leaves the group so the others rebalance at once rather than after the session timeout. */
  async leave(): Promise<void> {
    this.stopHeartbeat();
    if (this.memberId === "" || this.coordinator < 0) return;
    const memberId = this.memberId;
    this.memberId = "";
    // v3+ carry a list of members (KIP-345), v5+ a reason; v0-2 one member id.
    const version = this.client.version(ApiKey.LeaveGroup);
    const reason = version >= 5 ? "the quill consumer stopped" : null;
    const answer = await this.client.request(
      ApiKey.LeaveGroup,
      version >= 3
        ? { groupId: this.groupId, members: [{ memberId, reason }] }
        : { groupId: this.groupId, memberId },
      this.coordinator,
    );
    if (answer.errorCode !== ErrorCode.UNKNOWN_MEMBER_ID) {
      check(answer.errorCode, `leaving group "${this.groupId}"`);
    }
  }
}
