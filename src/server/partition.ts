/**
 * The replica state of one partition on this broker (Kafka's Partition): who leads and in which
 * leader epoch, the replicas and the in-sync replicas (ISR), and, while this broker leads, each
 * follower's log end offset (LEO) as its fetches report it.
 *
 * The high watermark (HW) is the smallest LEO over the ISR: every record below it is on every
 * in-sync replica, so it survives the loss of any of them. Consumers read only below it (the
 * read bound in ReplicaManager), and it never moves backwards while this broker leads, since a
 * consumer may already have seen everything below it.
 *
 * An ISR change is proposed to the controller (AlterIsr) and applies only once committed. While
 * one is in flight the HW and acks=-1 use the "maximal ISR" (the current ISR plus any replica
 * being added, as Kafka does), so a shrink cannot advance the HW before it is committed.
 *
 * Not thread-safe: one event loop.
 */
import type { BrokerId, LeaderEpoch, Offset, PartitionIndex } from "../common/branded.ts";
import { ErrorCode } from "../protocol/errors.ts";
import type { UnifiedLog } from "../storage/unified-log.ts";
import { assert } from "../util/assert.ts";

/** What the controller decided for a partition (LeaderAndIsr), and what A's handler passes. */
export interface PartitionLeadership {
  readonly topic: string;
  readonly partition: PartitionIndex;
  readonly topicId: Uint8Array;
  readonly leader: BrokerId;
  readonly leaderEpoch: LeaderEpoch;
  /** The znode version of the partition's state: every committed ISR change bumps it. */
  readonly partitionEpoch: number;
  readonly isr: readonly BrokerId[];
  readonly replicas: readonly BrokerId[];
  /**
   * The controller creates this replica now (a new partition or a replica being added): only
   * then may its log be created while a log dir is offline. Absent means true (embedded mode).
   */
  readonly isNew?: boolean;
}

/** AlterPartition errors that say the controller did not apply the change (Kafka's list). */
const NOT_APPLIED_ERRORS: ReadonlySet<number> = new Set([
  ErrorCode.OPERATION_NOT_ATTEMPTED,
  ErrorCode.INELIGIBLE_REPLICA,
]);

export interface AlterIsrResult {
  readonly errorCode: number;
  readonly leaderEpoch: LeaderEpoch;
  readonly partitionEpoch: number;
  readonly isr: readonly BrokerId[];
}

/** Proposes a new ISR to the controller; resolves with the committed state or an error. */
export type AlterIsr = (
  topic: string,
  partition: PartitionIndex,
  leaderEpoch: LeaderEpoch,
  partitionEpoch: number,
  newIsr: readonly BrokerId[],
) => Promise<AlterIsrResult>;

/** Kafka's LEO of a follower that has not fetched since this broker became leader. */
export const UNKNOWN_OFFSET: Offset = -1n;

/** A follower as its leader sees it (Kafka's Replica state). */
export interface FollowerState {
  logEndOffset: Offset;
  /** The last time the follower had fetched up to the leader's LEO of that moment. */
  lastCaughtUpTimeMs: number;
  lastFetchLeaderLogEndOffset: Offset;
  lastFetchTimeMs: number;
  /** The follower's log start offset as its last fetch reported it (for DeleteRecords). */
  logStartOffset: Offset;
}

export type AcksOutcome = "waiting" | "done";

export class Partition {
  // Set by applyState(), which the constructor calls.
  private leaderIdValue!: BrokerId;
  private leaderEpochValue!: LeaderEpoch;
  private partitionEpochValue!: number;
  private replicasValue!: readonly BrokerId[];
  private isrValue!: readonly BrokerId[];
  /** The ISR proposed to the controller and not yet answered; null when none is in flight. */
  private pendingIsrValue: readonly BrokerId[] | null = null;
  /** The LEO when this broker began leading this epoch (Kafka's leaderEpochStartOffset). */
  private leaderEpochStartOffsetValue: Offset;
  private readonly followers = new Map<BrokerId, FollowerState>();
  /** False for the sole-replica default, which any controller decision replaces. */
  private controllerStatedValue = false;
  topicId!: Uint8Array;

  private constructor(
    readonly topic: string,
    readonly partition: PartitionIndex,
    private logValue: UnifiedLog,
    readonly localBrokerId: BrokerId,
    state: PartitionLeadership,
  ) {
    this.applyState(state);
    this.leaderEpochStartOffsetValue = logValue.logEndOffset;
  }

  get log(): UnifiedLog {
    return this.logValue;
  }

  /**
   * A move between log dirs finished (AlterReplicaLogDirs): the new log, a copy of the old one
   * to the last offset, epoch and producer, serves from now on.
   */
  replaceLog(log: UnifiedLog): void {
    assert(log.logEndOffset === this.logValue.logEndOffset, "a replacing log must be as long");
    this.logValue = log;
  }

  /**
   * The embedded default and any partition no controller has spoken about yet: this broker
   * leads in epoch 0 and is its own ISR, so the HW follows the LEO after every append.
   */
  static soleReplica(log: UnifiedLog, localBrokerId: BrokerId, topicId: Uint8Array): Partition {
    const p = new Partition(log.topic, log.partition, log, localBrokerId, {
      topic: log.topic,
      partition: log.partition,
      topicId,
      leader: localBrokerId,
      leaderEpoch: 0,
      partitionEpoch: 0,
      isr: [localBrokerId],
      replicas: [localBrokerId],
    });
    p.maybeIncrementHighWatermark();
    return p;
  }

  /** A partition as the controller described it; call makeLeader or makeFollower next. */
  static fromLeadership(
    log: UnifiedLog,
    localBrokerId: BrokerId,
    state: PartitionLeadership,
  ): Partition {
    const p = new Partition(state.topic, state.partition, log, localBrokerId, state);
    p.leaderIdValue = -1;
    p.leaderEpochValue = -1;
    p.partitionEpochValue = -1;
    p.controllerStatedValue = true;
    return p;
  }

  get leaderId(): BrokerId {
    return this.leaderIdValue;
  }

  get leaderEpoch(): LeaderEpoch {
    return this.leaderEpochValue;
  }

  get partitionEpoch(): number {
    return this.partitionEpochValue;
  }

  get replicas(): readonly BrokerId[] {
    return this.replicasValue;
  }

  get isr(): readonly BrokerId[] {
    return this.isrValue;
  }

  get pendingIsr(): readonly BrokerId[] | null {
    return this.pendingIsrValue;
  }

  get isControllerStated(): boolean {
    return this.controllerStatedValue;
  }

  get isLeader(): boolean {
    return this.leaderIdValue === this.localBrokerId;
  }

  get leaderEpochStartOffset(): Offset {
    return this.leaderEpochStartOffsetValue;
  }

  /** The ISR the HW and acks=-1 count: the committed one plus replicas being added. */
  get maximalIsr(): readonly BrokerId[] {
    const pending = this.pendingIsrValue;
    if (pending === null) return this.isrValue;
    return [...new Set([...this.isrValue, ...pending])];
  }

  follower(brokerId: BrokerId): Readonly<FollowerState> | undefined {
    return this.followers.get(brokerId);
  }

  /**
   * Kafka's rule for accepting a controller decision: a newer leader epoch always wins; the same
   * epoch only with a newer partition epoch (an ISR change); anything older is fenced.
   */
  isNewerThanCurrent(state: PartitionLeadership): boolean {
    const epoch = this.leaderEpochValue;
    if (state.leaderEpoch !== epoch) return state.leaderEpoch > epoch;
    return state.partitionEpoch > this.partitionEpochValue;
  }

  /**
   * Becomes (or stays) leader. Followers' positions are forgotten on a new epoch: each must
   * fetch again before it counts towards the HW, and ISR members are treated as caught up now,
   * so none is dropped before it had `replica.lag.time.max.ms` to fetch.
   */
  makeLeader(state: PartitionLeadership, nowMs: number): void {
    assert(state.leader === this.localBrokerId, `makeLeader for leader ${state.leader}`);
    assert(state.replicas.includes(this.localBrokerId), `leader ${state.leader} not a replica`);
    const newEpoch = state.leaderEpoch !== this.leaderEpochValue || !this.isLeader;
    this.applyState(state);
    if (newEpoch) {
      this.leaderEpochStartOffsetValue = this.log.logEndOffset;
      this.followers.clear();
    }
    for (const id of this.replicasValue) {
      if (id === this.localBrokerId || this.followers.has(id)) continue;
      this.followers.set(id, {
        logEndOffset: UNKNOWN_OFFSET,
        lastCaughtUpTimeMs: this.isrValue.includes(id) ? nowMs : 0,
        lastFetchLeaderLogEndOffset: UNKNOWN_OFFSET,
        lastFetchTimeMs: 0,
        logStartOffset: UNKNOWN_OFFSET,
      });
    }
    for (const id of [...this.followers.keys()]) {
      if (!this.replicasValue.includes(id)) this.followers.delete(id);
    }
    this.maybeIncrementHighWatermark();
  }

  /** Follows `state.leader`: the fetcher copies its log; the HW comes from its responses. */
  makeFollower(state: PartitionLeadership): void {
    assert(state.leader !== this.localBrokerId, "makeFollower for this broker");
    this.applyState(state);
    this.followers.clear();
  }

  private applyState(state: PartitionLeadership): void {
    this.topicId = state.topicId;
    this.leaderIdValue = state.leader;
    this.leaderEpochValue = state.leaderEpoch;
    this.partitionEpochValue = state.partitionEpoch;
    this.replicasValue = [...state.replicas];
    this.isrValue = [...state.isr];
    this.pendingIsrValue = null;
  }

  /**
   * Records a follower's fetch at `fetchOffset` (its LEO, since it asks for the next offset it
   * lacks). The follower was caught up at this fetch if it asked for the leader's LEO, or at its
   * previous fetch if it has now reached what the leader had then (Kafka's rule: a follower that
   * keeps up with a busy leader is never exactly at the LEO). False for an unknown replica.
   */
  updateFollowerFetchState(
    brokerId: BrokerId,
    fetchOffset: Offset,
    nowMs: number,
    logStartOffset = UNKNOWN_OFFSET,
  ): boolean {
    assert(this.isLeader, `${this.topic}-${this.partition}: follower fetch on a non-leader`);
    const f = this.followers.get(brokerId);
    if (f === undefined) return false;
    const leaderEnd = this.log.logEndOffset;
    if (fetchOffset >= leaderEnd) f.lastCaughtUpTimeMs = Math.max(f.lastCaughtUpTimeMs, nowMs);
    else if (fetchOffset >= f.lastFetchLeaderLogEndOffset && f.lastFetchLeaderLogEndOffset >= 0n) {
      f.lastCaughtUpTimeMs = Math.max(f.lastCaughtUpTimeMs, f.lastFetchTimeMs);
    }
    f.logEndOffset = fetchOffset;
    f.lastFetchLeaderLogEndOffset = leaderEnd;
    f.lastFetchTimeMs = nowMs;
    f.logStartOffset = logStartOffset;
    return true;
  }

  /**
   * Kafka's low watermark: the smallest log start offset over this leader and the followers on
   * live brokers (`isAlive`). DeleteRecords is done once it reaches the requested offset, i.e.
   * every live replica has dropped the records. A follower that has not fetched in this epoch
   * counts as -1, so the request waits for it.
   */
  lowWatermark(isAlive: (brokerId: BrokerId) => boolean): Offset {
    assert(this.isLeader, `${this.topic}-${this.partition}: low watermark on a non-leader`);
    let low = this.log.logStartOffset;
    for (const [id, f] of this.followers) {
      if (f.logStartOffset < low && isAlive(id)) low = f.logStartOffset;
    }
    return low;
  }

  /**
   * HW := min LEO over the maximal ISR, if that is higher than now. A follower that has not
   * fetched in this epoch (LEO unknown) holds it where it is. True when it moved.
   */
  maybeIncrementHighWatermark(): boolean {
    if (!this.isLeader) return false;
    let candidate = this.log.logEndOffset;
    for (const id of this.maximalIsr) {
      if (id === this.localBrokerId) continue;
      const f = this.followers.get(id);
      const end = f === undefined ? UNKNOWN_OFFSET : f.logEndOffset;
      if (end < candidate) candidate = end;
    }
    if (candidate <= this.log.highWatermark) return false;
    this.log.highWatermark = candidate;
    return true;
  }

  /** A follower's view of the HW: the leader's, capped at what this replica holds. */
  updateFollowerHighWatermark(leaderHighWatermark: Offset): void {
    assert(!this.isLeader, "updateFollowerHighWatermark on the leader");
    const end = this.log.logEndOffset;
    this.log.highWatermark = leaderHighWatermark < end ? leaderHighWatermark : end;
  }

  /**
   * ISR members (other than this leader) that have not been caught up for more than
   * `lagTimeMaxMs`: Kafka's replica.lag.time.max.ms rule, covering both stuck and slow ones.
   */
  outOfSyncReplicas(nowMs: number, lagTimeMaxMs: number): BrokerId[] {
    if (!this.isLeader) return [];
    return this.isrValue.filter((id) => {
      if (id === this.localBrokerId) return false;
      const f = this.followers.get(id);
      return f === undefined || nowMs - f.lastCaughtUpTimeMs > lagTimeMaxMs;
    });
  }

  /**
   * Replicas outside the ISR that may join it: they hold everything below the HW and have
   * reached this epoch's start, so they cannot be missing a committed record.
   */
  catchingUpReplicas(): BrokerId[] {
    if (!this.isLeader) return [];
    return this.replicasValue.filter((id) => {
      if (id === this.localBrokerId || this.isrValue.includes(id)) return false;
      const f = this.followers.get(id);
      if (f === undefined || f.logEndOffset === UNKNOWN_OFFSET) return false;
      return (
        f.logEndOffset >= this.log.highWatermark &&
        f.logEndOffset >= this.leaderEpochStartOffsetValue
      );
    });
  }

  /** Marks an ISR change as sent to the controller; only one may be in flight. */
  beginIsrChange(newIsr: readonly BrokerId[]): void {
    assert(this.pendingIsrValue === null, "an ISR change is already in flight");
    assert(newIsr.includes(this.localBrokerId), "the leader must stay in its ISR");
    this.pendingIsrValue = [...newIsr];
  }

  /**
   * The controller's answer. A success installs the committed ISR and partition epoch (only if
   * this broker still leads the same epoch) and ends the in-flight change, as do the two errors
   * by which the controller says it did not apply it (OPERATION_NOT_ATTEMPTED,
   * INELIGIBLE_REPLICA). Any other error leaves the change pending, as Kafka's Partition does:
   * a request that timed out or lost its connection may have been applied, and a fenced one
   * may follow an earlier attempt that was, so the HW keeps counting the replicas it would add
   * (an expansion applied in ZooKeeper but dropped here let the HW pass records a replica of
   * the committed ISR lacked, which a new leader then did not have). The change is sent again
   * (IsrManager), or replaced by the controller's next LeaderAndIsr.
   */
  completeIsrChange(result: AlterIsrResult): boolean {
    if (result.errorCode !== ErrorCode.NONE) {
      if (NOT_APPLIED_ERRORS.has(result.errorCode)) this.pendingIsrValue = null;
      return false;
    }
    this.pendingIsrValue = null;
    if (!this.isLeader || result.leaderEpoch !== this.leaderEpochValue) return false;
    if (result.partitionEpoch <= this.partitionEpochValue) return false;
    this.isrValue = [...result.isr];
    this.partitionEpochValue = result.partitionEpoch;
    return true;
  }

  /**
   * acks=-1: done once the HW passes `requiredOffset` (one past the batch's last offset). Kafka
   * still answers NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min.insync.replicas
   * meanwhile, since the record is then not as durable as the producer asked.
   */
  checkEnoughReplicasReachOffset(
    requiredOffset: Offset,
    minInsyncReplicas: number,
  ): { readonly outcome: AcksOutcome; readonly errorCode: number } {
    if (!this.isLeader) return { outcome: "done", errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER };
    if (this.log.highWatermark < requiredOffset) {
      return { outcome: "waiting", errorCode: ErrorCode.NONE };
    }
    const errorCode =
      this.isrValue.length < minInsyncReplicas
        ? ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        : ErrorCode.NONE;
    return { outcome: "done", errorCode };
  }
}
