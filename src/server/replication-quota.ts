/**
 * Replication throttling (Kafka's ReplicationQuotaManager, one per side, as
 * `kafka-reassign-partitions.sh --throttle` configures both):
 *
 * - leader side: a partition listed for this broker in the topic's
 *   `leader.replication.throttled.replicas` (or `*`) sends nothing to a follower that is not in
 *   its ISR while the bytes sent for throttled partitions over the last `WINDOW_SECONDS` exceed
 *   `leader.replication.throttled.rate`;
 * - follower side: a partition listed for this broker in `follower.replication.throttled.replicas`
 *   is left out of this broker's fetches while it is not caught up and the bytes fetched for
 *   throttled partitions exceed `follower.replication.throttled.rate`.
 *
 * Caught-up replicas are never held back, so a throttle slows a move, never the ISR.
 */
import type { TopicConfigOverrides } from "../config/topic-config.ts";

/** Kafka's default quota window: 11 one-second samples (quota.window.num). */
const WINDOW_SECONDS = 11;

export class ReplicationQuota {
  /** Bytes per whole second, newest last; at most WINDOW_SECONDS entries. */
  private readonly samples: { second: number; bytes: number }[] = [];

  constructor(
    private readonly localBrokerId: number,
    private readonly rateBytesPerSec: () => number,
    private readonly topicConfigs: (topic: string) => TopicConfigOverrides | undefined,
    private readonly side: "leader" | "follower" = "leader",
  ) {}

  /** Whether this broker's replica of the partition is listed as throttled on this side. */
  isThrottled(topic: string, partition: number): boolean {
    const listed = this.topicConfigs(topic)?.[`${this.side}.replication.throttled.replicas`];
    if (listed === undefined || listed.length === 0) return false;
    if (listed.length === 1 && listed[0] === "*") return true;
    return listed.includes(`${partition}:${this.localBrokerId}`);
  }

  /** True while the window's rate is above the configured one. */
  isExceeded(nowMs: number): boolean {
    const limit = this.rateBytesPerSec();
    if (!Number.isFinite(limit) || limit >= Number.MAX_SAFE_INTEGER) return false;
    this.prune(nowMs);
    if (this.samples.length === 0) return false;
    const total = this.samples.reduce((n, s) => n + s.bytes, 0);
    const first = this.samples[0]!.second;
    // Kafka's rate divides by the window actually covered, at least one sample long.
    const elapsedSeconds = Math.max(1, nowMs / 1000 - first);
    return total / elapsedSeconds > limit;
  }

  /** Counts bytes sent for throttled partitions. */
  record(bytes: number, nowMs: number): void {
    if (bytes <= 0) return;
    const second = Math.floor(nowMs / 1000);
    const last = this.samples.at(-1);
    if (last !== undefined && last.second === second) last.bytes += bytes;
    else this.samples.push({ second, bytes });
    this.prune(nowMs);
  }

  private prune(nowMs: number): void {
    const oldest = Math.floor(nowMs / 1000) - WINDOW_SECONDS + 1;
    while (this.samples.length > 0 && this.samples[0]!.second < oldest) this.samples.shift();
  }
}
