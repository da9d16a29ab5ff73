/**
 * Leader-side replication throttling (Kafka's ReplicationQuotaManager for LeaderReplication, as
 * `kafka-reassign-partitions.sh --throttle` configures it): a partition listed for this broker in
 * the topic's `leader.replication.throttled.replicas` (or `*`) sends nothing to a follower that
 * is not in its ISR while the bytes sent for throttled partitions over the last
 * `WINDOW_SECONDS` exceed `leader.replication.throttled.rate`. In-sync followers are never held
 * back, so a throttle slows a move, never the ISR.
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
  ) {}

  /** Whether this broker's replica of the partition is listed as leader-throttled. */
  isThrottled(topic: string, partition: number): boolean {
    const listed = this.topicConfigs(topic)?.["leader.replication.throttled.replicas"];
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
