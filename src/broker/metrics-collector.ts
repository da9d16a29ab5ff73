import type { BrokerServices } from "../api/broker-services.ts";
import { topicPartitionKey, topicPartitionOf } from "../common/topic-partition.ts";
import type { GroupView } from "../coordinator/group-coordinator.ts";
import { errorName } from "../protocol/errors.ts";
import { apiSpec } from "../protocol/generated/index.ts";
import type { BrokerMetrics } from "../server/broker-metrics.ts";
import type { Partition } from "../server/partition.ts";
import { logFlushSeconds } from "../storage/log-flush-stats.ts";
import type { EventLoopMonitor } from "../util/event-loop-monitor.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import type { LeaderHighWatermarks } from "./leader-high-watermarks.ts";
import { Exposition, type Labels, one } from "./metrics-text.ts";

/**
 * Per-partition series (log sizes, group lag) written per scrape at most: a broker with more
 * partitions reports the first ones and `quill_metrics_series_dropped` says how many were left
 * out, so a scrape stays a few MB and a few ms.
 */
export const PARTITION_SERIES_MAX = 10_000;

/** What /metrics reads at scrape time once the broker runs (null before: counters only). */
export interface MetricsSources {
  readonly services: BrokerServices;
  readonly connectionCounts: () => { listenerName: string; count: number }[];
  readonly zooKeeper: ZooKeeperClient | null;
  /** Leaders' high watermarks for committed partitions with no replica here (lag). */
  readonly leaderHighWatermarks?: LeaderHighWatermarks;
}

/**
 * The whole /metrics page. Counters kept on the request path (BrokerMetrics) are written as
 * they are; the rest (partition health, log sizes, group lag, connections, ZooKeeper, memory)
 * is computed now from the broker's state, with no request of its own.
 */
export function metricsText(
  metrics: BrokerMetrics,
  sources: MetricsSources | null,
  eventLoop: EventLoopMonitor | null,
): string {
  const out = new Exposition();
  requestFamilies(out, metrics);
  // A deleted topic's counters go with it, as Kafka removes its metrics.
  const cache = sources?.services.metadataCache;
  topicFamilies(out, metrics, (topic) => cache?.topic(topic) !== undefined);
  processFamilies(out, eventLoop);
  if (sources === null) return out.text();
  const dropped = { count: 0 };
  partitionFamilies(out, sources.services, dropped);
  groupFamilies(out, sources, dropped);
  out.gauge(
    "quill_connections",
    "Open client and broker connections per listener.",
    sources.connectionCounts().map((c) => [{ listener: c.listenerName }, c.count]),
  );
  if (sources.zooKeeper !== null) zooKeeperFamilies(out, sources.zooKeeper);
  quotaFamilies(out, sources.services, dropped);
  out.gauge(
    "quill_metrics_series_dropped",
    `Per-partition series left out of this scrape (over ${PARTITION_SERIES_MAX} each).`,
    one(dropped.count),
  );
  return out.text();
}

function apiName(apiKey: number): string {
  return apiSpec(apiKey)?.name ?? String(apiKey);
}

function requestFamilies(out: Exposition, metrics: BrokerMetrics): void {
  out.counter(
    "quill_requests_total",
    "Requests received, per Kafka API.",
    metrics.requestCounts().map(([apiKey, count]) => [{ api: apiName(apiKey) }, count]),
  );
  out.counter(
    "quill_request_versions_total",
    "Requests received, per Kafka API and version (which versions clients negotiated).",
    metrics
      .requestVersionCounts()
      .map(([apiKey, version, count]) => [{ api: apiName(apiKey), version: `${version}` }, count]),
  );
  out.counter(
    "quill_request_errors_total",
    "Error codes in responses (top level and per partition), per API and error.",
    metrics
      .errorCounts()
      .map(([apiKey, code, count]) => [{ api: apiName(apiKey), error: errorName(code) }, count]),
  );
  const times = metrics.requestTimes();
  out.histogram(
    "quill_request_duration_seconds",
    "Time from a request's dispatch to its response being ready, per API.",
    times.map(([apiKey, t]) => [{ api: apiName(apiKey) }, t.total]),
  );
  out.histogram(
    "quill_request_local_duration_seconds",
    "The synchronous part of handling a request (validation, append or read), per API.",
    times.map(([apiKey, t]) => [{ api: apiName(apiKey) }, t.local]),
  );
  out.histogram(
    "quill_request_remote_duration_seconds",
    "Time a request waited after its synchronous part: replicas (acks=all), a long poll, " +
      "ZooKeeper or the controller, per API.",
    times.map(([apiKey, t]) => [{ api: apiName(apiKey) }, t.remote]),
  );
  out.histogram(
    "quill_response_send_duration_seconds",
    "Time from a response being queued on its socket to its last byte taken by the kernel " +
      "(a slow reader's backpressure included), per API.",
    times.map(([apiKey, t]) => [{ api: apiName(apiKey) }, t.send]),
  );
}

function topicFamilies(
  out: Exposition,
  metrics: BrokerMetrics,
  topicExists: (topic: string) => boolean,
): void {
  const traffic = metrics.topicTraffic(topicExists);
  out.counter(
    "quill_topic_bytes_in_total",
    "Record batch bytes produced to the topic (as leader).",
    traffic.map(([topic, t]) => [{ topic }, t.bytesIn]),
  );
  out.counter(
    "quill_topic_records_in_total",
    "Records produced to the topic (as leader), from the batch headers.",
    traffic.map(([topic, t]) => [{ topic }, t.recordsIn]),
  );
  out.counter(
    "quill_topic_bytes_out_total",
    "Record batch bytes fetched from the topic by consumers.",
    traffic.map(([topic, t]) => [{ topic }, t.bytesOut]),
  );
}

/** Throttle time per quota type and the (user, client-id) sharing the quota, as Kafka's. */
function quotaFamilies(out: Exposition, services: BrokerServices, dropped: { count: number }) {
  const times = services.clientQuotas.throttleTimes();
  dropped.count += Math.max(0, times.length - PARTITION_SERIES_MAX);
  out.counter(
    "quill_client_quota_throttle_time_ms_total",
    "Throttle time given to clients over a quota, per quota type and the user and client-id " +
      "that share it (empty: the quota is not per that part).",
    times
      .slice(0, PARTITION_SERIES_MAX)
      .map((t) => [{ quota: t.type, user: t.user, client_id: t.clientId }, t.ms]),
  );
}

function processFamilies(out: Exposition, eventLoop: EventLoopMonitor | null): void {
  if (eventLoop !== null) {
    out.histogram(
      "quill_event_loop_delay_seconds",
      "How late a 100 ms timer fired: time the event loop was busy (includes GC pauses).",
      [[{}, eventLoop.delaySeconds]],
    );
  }
  out.histogram(
    "quill_log_flush_duration_seconds",
    "fdatasync time of segment log files (process-wide).",
    [[{}, logFlushSeconds]],
  );
  const memory = process.memoryUsage();
  out.gauge("process_resident_memory_bytes", "Resident set size.", one(memory.rss));
  out.gauge("quill_heap_used_bytes", "JavaScript heap in use.", one(memory.heapUsed));
  out.gauge("quill_heap_total_bytes", "JavaScript heap capacity.", one(memory.heapTotal));
}

function zooKeeperFamilies(out: Exposition, zk: ZooKeeperClient): void {
  const current = zk.sessionState;
  out.gauge(
    "quill_zookeeper_session_state",
    "1 for the ZooKeeper session's current state, 0 for the others.",
    (["connected", "disconnected", "expired", "closed"] as const).map((state) => [
      { state },
      state === current ? 1 : 0,
    ]),
  );
  out.histogram(
    "quill_zookeeper_request_duration_seconds",
    "Round trip of each ZooKeeper request.",
    [[{}, zk.requestSeconds]],
  );
}

interface PartitionCounts {
  partitions: number;
  leaders: number;
  underReplicated: number;
  underMinIsr: number;
}

/** Partition health (Kafka's ReplicaManager and controller gauges) and log sizes. */
function partitionFamilies(
  out: Exposition,
  services: BrokerServices,
  dropped: { count: number },
): void {
  const rm = services.replicaManager;
  const counts: PartitionCounts = { partitions: 0, leaders: 0, underReplicated: 0, underMinIsr: 0 };
  const logs: { labels: Labels; size: number; segments: number; start: bigint; end: bigint }[] = [];
  for (const p of rm.hostedPartitions()) {
    counts.partitions++;
    if (p.isLeader) {
      counts.leaders++;
      if (p.isr.length < p.replicas.length) counts.underReplicated++;
      if (p.isr.length < rm.minInsyncReplicas(p.topic)) counts.underMinIsr++;
    }
    if (logs.length >= PARTITION_SERIES_MAX) {
      dropped.count++;
      continue;
    }
    const log = p.log;
    if (log.isClosed) continue;
    const labels = { topic: p.topic, partition: p.partition };
    const entry = { labels, size: log.sizeBytes, segments: log.segmentCount };
    logs.push({ ...entry, start: log.logStartOffset, end: log.logEndOffset });
  }
  healthFamilies(out, services, counts);
  out.gauge(
    "quill_log_size_bytes",
    "Bytes of a partition's log segments on this broker.",
    logs.map((l) => [l.labels, l.size]),
  );
  out.gauge(
    "quill_log_segments",
    "Segments of a partition's log on this broker.",
    logs.map((l) => [l.labels, l.segments]),
  );
  out.gauge(
    "quill_log_start_offset",
    "First offset of a partition's log on this broker.",
    logs.map((l) => [l.labels, Number(l.start)]),
  );
  out.gauge(
    "quill_log_end_offset",
    "Next offset to be written to a partition's log on this broker.",
    logs.map((l) => [l.labels, Number(l.end)]),
  );
}

function healthFamilies(out: Exposition, services: BrokerServices, c: PartitionCounts): void {
  const cache = services.metadataCache;
  const isController = cache.controllerId === services.brokerId;
  out.gauge("quill_partitions", "Partitions with a replica on this broker.", one(c.partitions));
  out.gauge("quill_leader_partitions", "Partitions this broker leads.", one(c.leaders));
  out.gauge(
    "quill_under_replicated_partitions",
    "Partitions led here whose ISR is smaller than their replica set.",
    one(c.underReplicated),
  );
  out.gauge(
    "quill_under_min_isr_partitions",
    "Partitions led here whose ISR is below min.insync.replicas (acks=all fails).",
    one(c.underMinIsr),
  );
  out.gauge(
    "quill_active_controller",
    "1 on the broker that is the active controller (the embedded broker always is).",
    one(isController ? 1 : 0),
  );
  out.gauge(
    "quill_offline_partitions",
    "Partitions without a live leader; reported by the active controller only, as Kafka does.",
    one(isController ? offlinePartitions(services) : 0),
  );
  out.gauge("quill_brokers", "Live brokers this broker knows of.", one(cache.brokers.length));
  const isr = services.replicaManager.isrChangeCounts();
  out.counter("quill_isr_shrinks_total", "Committed ISR shrinks of partitions led here.", [
    [{}, isr.shrinks],
  ]);
  out.counter("quill_isr_expands_total", "Committed ISR expands of partitions led here.", [
    [{}, isr.expands],
  ]);
}

function offlinePartitions(services: BrokerServices): number {
  const cache = services.metadataCache;
  const live = new Set(cache.brokers.map((b) => b.nodeId));
  let offline = 0;
  for (const topic of cache.topics()) {
    for (const p of topic.partitions) if (!live.has(p.leaderId)) offline++;
  }
  return offline;
}

/**
 * Consumer groups this broker coordinates: count per state, members, and each committed
 * partition's lag against the high watermark of the local replica (exact where this broker
 * leads the partition; a follower knows the leader's high watermark as of its last fetch), and
 * for partitions with no replica here, the leader's as its last ListOffsets answer said
 * (leader-high-watermarks.ts, at most 30 s old).
 */
function groupFamilies(out: Exposition, sources: MetricsSources, dropped: { count: number }) {
  const services = sources.services;
  const groups = services.groupCoordinator.groupViews();
  const byState = new Map<string, number>();
  for (const g of groups) byState.set(g.state, (byState.get(g.state) ?? 0) + 1);
  out.gauge(
    "quill_consumer_groups",
    "Consumer groups coordinated here, per state.",
    [...byState].map(([state, n]) => [{ state }, n]),
  );
  out.gauge(
    "quill_consumer_group_members",
    "Members of each group coordinated here.",
    groups.map((g) => [{ group: g.groupId, state: g.state }, g.members.length]),
  );
  const lags = groupLags(services, groups, dropped, sources.leaderHighWatermarks);
  out.gauge(
    "quill_consumer_group_lag",
    "High watermark minus the committed offset, per group and partition.",
    lags.map((l) => [l.labels, l.lag]),
  );
  out.gauge(
    "quill_consumer_group_committed_offset",
    "The group's committed offset, per partition.",
    lags.map((l) => [l.labels, l.committed]),
  );
}

export interface PartitionLag {
  readonly labels: { group: string; topic: string; partition: number };
  readonly committed: number;
  readonly highWatermark: number;
  readonly lag: number;
}

/**
 * Lag per group and partition (bounded): against the local replica's high watermark, else the
 * leader's as `leaders` last heard it; a partition neither knows is left out.
 */
export function groupLags(
  services: BrokerServices,
  groups: readonly GroupView[],
  dropped: { count: number },
  leaders?: LeaderHighWatermarks,
): PartitionLag[] {
  const lags: PartitionLag[] = [];
  const hosted = new Map<string, Partition>();
  for (const p of services.replicaManager.hostedPartitions()) {
    hosted.set(topicPartitionKey(p.topic, p.partition), p);
  }
  for (const g of groups) {
    for (const [key, committed] of g.offsets ?? []) {
      const p = hosted.get(key);
      const local = p !== undefined && !p.log.isClosed ? p.log.highWatermark : undefined;
      const known = local ?? leaders?.get(key);
      if (known === undefined) continue;
      const { topic, partition } = topicPartitionOf(key);
      if (lags.length >= PARTITION_SERIES_MAX) {
        dropped.count++;
        continue;
      }
      const highWatermark = Number(known);
      const offset = Number(committed.offset);
      const lag = Math.max(0, highWatermark - offset);
      const labels = { group: g.groupId, topic, partition };
      lags.push({ labels, committed: offset, highWatermark, lag });
    }
  }
  return lags;
}
