import { type TopicPartitionKey, topicPartitionOf } from "../common/topic-partition.ts";
import type { Logger } from "../util/logger.ts";
import type { Partition } from "./partition.ts";

export interface LeaderLeaseOptions {
  /** How long ZooKeeper has not answered this broker (ZooKeeperClient.silentForMs). */
  readonly zooKeeperSilentMs: () => number;
  /** The ZooKeeper session timeout: silence this long means the session may be gone. */
  readonly sessionTimeoutMs: () => number;
  readonly partitions: () => Iterable<[TopicPartitionKey, Partition]>;
  /** Told of partitions whose lease just lapsed, so that waiting acks=-1 produces are answered. */
  readonly onLapsed: (keys: readonly TopicPartitionKey[]) => void;
  readonly log: Logger;
}

/** How often the lease is checked; also bounds how late a lapse is noticed. */
const CHECK_INTERVAL_MS = 250;

/**
 * A leader stops acting as one when it is cut off (docs/faults.md, "A leader cut off"): once
 * ZooKeeper has not answered it for a whole session timeout and no other ISR replica has
 * fetched from it for as long, its session has expired (or will within a tick) and the
 * controller may already have chosen another leader, which its followers now follow. It then
 * refuses produce requests (NOT_LEADER_OR_FOLLOWER), and answers waiting acks=-1 ones the same
 * way, so that clients look for the new leader at once rather than after their request timeout.
 *
 * This never makes a second leader acknowledge anything (it only refuses); it takes back the
 * acks=1 writes Kafka's deposed leader would take and then truncate. Both conditions are
 * needed: with ZooKeeper alone down, sessions survive (the ensemble restarts their clocks) and
 * the followers still fetch, so leaders go on; with followers alone gone, the leader shrinks
 * the ISR through the controller as usual. The lease returns when ZooKeeper answers again.
 */
export class LeaderLease {
  private readonly timer: ReturnType<typeof setInterval>;
  /** Led partitions whose lease lapsed; bounded by the partitions this broker holds. */
  private readonly lapsedKeys = new Set<TopicPartitionKey>();

  constructor(private readonly options: LeaderLeaseOptions) {
    this.timer = setInterval(() => this.check(Date.now()), CHECK_INTERVAL_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  lapsed(key: TopicPartitionKey): boolean {
    return this.lapsedKeys.size > 0 && this.lapsedKeys.has(key);
  }

  check(nowMs: number): void {
    const timeoutMs = this.options.sessionTimeoutMs();
    // 0 until a session was negotiated: nothing can be concluded yet.
    if (timeoutMs <= 0 || this.options.zooKeeperSilentMs() < timeoutMs) {
      if (this.lapsedKeys.size === 0) return;
      this.options.log.info(
        `ZooKeeper answers again: leading ${this.lapsedKeys.size} partitions again`,
      );
      this.lapsedKeys.clear();
      return;
    }
    const lapsedNow: TopicPartitionKey[] = [];
    for (const [key, p] of this.options.partitions()) {
      if (!p.isLeader || this.lapsedKeys.has(key)) continue;
      const others = p.maximalIsr.filter((id) => id !== p.leaderId);
      if (others.length === 0 || others.some((id) => heardFrom(p, id, nowMs, timeoutMs))) {
        continue;
      }
      this.lapsedKeys.add(key);
      lapsedNow.push(key);
    }
    if (lapsedNow.length === 0) return;
    const named = lapsedNow.slice(0, 5).map((key) => {
      const { topic, partition } = topicPartitionOf(key);
      return `${topic}-${partition}`;
    });
    this.options.log.warn(
      `neither ZooKeeper nor any follower heard for ${timeoutMs} ms: ` +
        `refusing produce requests to ${lapsedNow.length} partitions led here ` +
        `(${named.join(", ")}${lapsedNow.length > 5 ? ", ..." : ""})`,
    );
    this.options.onLapsed(lapsedNow);
  }
}

/** A follower fetched within `timeoutMs` (or became one that recently, as the ISR says). */
function heardFrom(p: Partition, id: number, nowMs: number, timeoutMs: number): boolean {
  const f = p.follower(id);
  if (f === undefined) return false;
  return nowMs - Math.max(f.lastFetchTimeMs, f.lastCaughtUpTimeMs) < timeoutMs;
}
