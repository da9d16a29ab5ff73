import type { BrokerServices } from "../api/broker-services.ts";
import type { BrokerMetrics } from "../server/broker-metrics.ts";
import type { LeaderHighWatermarks } from "./leader-high-watermarks.ts";
import { groupLags } from "./metrics-collector.ts";

/** One sample every 10 s for an hour: the console's "over the last hour". */
const SAMPLE_INTERVAL_MS = 10_000;
export const SAMPLES_MAX = 360;
/** Groups whose total lag each sample keeps (the first ones by id); the rest are not charted. */
const GROUPS_PER_SAMPLE_MAX = 100;

export interface Sample {
  readonly atMs: number;
  /** Totals since start over every topic: rates are the differences of two samples. */
  readonly bytesIn: number;
  readonly bytesOut: number;
  readonly recordsIn: number;
  /** Total lag per group coordinated here. */
  readonly groupLag: ReadonlyMap<string, number>;
}

/**
 * The console's memory of the last hour: a ring of SAMPLES_MAX samples taken every 10 s, never
 * more (about 360 small objects), so a broker that runs for months holds the same.
 */
export class ConsoleHistory {
  private readonly ring: Sample[] = [];
  private timer: ReturnType<typeof setInterval> | null = null;
  private take: (() => Sample) | null = null;

  start(services: BrokerServices, metrics: BrokerMetrics, leaders?: LeaderHighWatermarks): void {
    this.take = () => sample(services, metrics, leaders);
    this.record();
    this.timer = setInterval(() => this.record(), SAMPLE_INTERVAL_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.take = null;
  }

  /** The samples kept, oldest first, and one taken now (so a chart always reaches the present). */
  samples(): Sample[] {
    return this.take === null ? [...this.ring] : [...this.ring, this.take()];
  }

  private record(): void {
    if (this.take === null) return;
    this.ring.push(this.take());
    if (this.ring.length > SAMPLES_MAX) this.ring.shift();
  }
}

function sample(
  services: BrokerServices,
  metrics: BrokerMetrics,
  leaders: LeaderHighWatermarks | undefined,
): Sample {
  let bytesIn = 0;
  let bytesOut = 0;
  let recordsIn = 0;
  const cache = services.metadataCache;
  for (const [, t] of metrics.topicTraffic((topic) => cache.topic(topic) !== undefined)) {
    bytesIn += t.bytesIn;
    bytesOut += t.bytesOut;
    recordsIn += t.recordsIn;
  }
  const groups = services.groupCoordinator
    .groupViews()
    .sort((a, b) => (a.groupId < b.groupId ? -1 : 1))
    .slice(0, GROUPS_PER_SAMPLE_MAX);
  const groupLag = new Map<string, number>(groups.map((g) => [g.groupId, 0]));
  for (const l of groupLags(services, groups, { count: 0 }, leaders)) {
    groupLag.set(l.labels.group, (groupLag.get(l.labels.group) ?? 0) + l.lag);
  }
  return { atMs: Date.now(), bytesIn, bytesOut, recordsIn, groupLag };
}
