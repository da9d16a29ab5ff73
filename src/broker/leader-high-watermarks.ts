import type { BrokerServices } from "../api/broker-services.ts";
import {
  type TopicPartitionKey,
  topicPartitionKey,
  topicPartitionOf,
} from "../common/topic-partition.ts";
import { InterBrokerClient } from "../network/inter-broker-client.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import type { Logger } from "../util/logger.ts";

/** How often the leaders are asked, and how long an answer is shown after it stops coming. */
const REFRESH_MS = 10_000;
const STALE_MS = 3 * REFRESH_MS;
const REQUEST_TIMEOUT_MS = 5_000;
/** Partitions asked about per refresh, as the per-partition metric series are bounded. */
const PARTITIONS_MAX = 10_000;
/** ListOffsets v7 (flexible): every Quill and Kafka 2.8+ broker answers it. */
const LIST_OFFSETS_VERSION = 7;
/** ListOffsets' timestamp for "the latest offset": with READ_UNCOMMITTED, the high watermark. */
const LATEST_TIMESTAMP = -1n;

/**
 * The high watermark of partitions a group coordinated here has committed offsets for but no
 * replica on this broker holds, so their lag can be shown too. Scrapes and pages never wait
 * on the network: every REFRESH_MS one ListOffsets (latest, READ_UNCOMMITTED: what
 * kafka-consumer-groups.sh compares against) goes to each leader for its partitions, and the
 * answers are kept; one older than STALE_MS is not shown. One refresh at a time; a connection
 * per leader over the inter-broker listener, reopened when it fails.
 */
export class LeaderHighWatermarks {
  private readonly known = new Map<TopicPartitionKey, { offset: bigint; atMs: number }>();
  private readonly clients = new Map<number, InterBrokerClient>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private refreshing = false;

  constructor(private readonly log: Logger) {}

  start(services: BrokerServices): void {
    const refresh = () => {
      if (this.refreshing) return;
      this.refreshing = true;
      this.refresh(services)
        .catch((error) => this.log.debug(`leader high watermarks: ${String(error)}`))
        .finally(() => (this.refreshing = false));
    };
    refresh();
    this.timer = setInterval(refresh, REFRESH_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }

  /** The leader's high watermark as last answered, undefined if unknown or stale. */
  get(key: TopicPartitionKey): bigint | undefined {
    const entry = this.known.get(key);
    return entry !== undefined && Date.now() - entry.atMs <= STALE_MS ? entry.offset : undefined;
  }

  private async refresh(services: BrokerServices): Promise<void> {
    const byLeader = remotePartitionsByLeader(services);
    // Forget partitions no longer asked about (committed offsets expired, a replica came here).
    const asked = new Set([...byLeader.values()].flatMap((m) => [...m.keys()]));
    for (const key of this.known.keys()) if (!asked.has(key)) this.known.delete(key);
    await Promise.all(
      [...byLeader].map(([leader, parts]) => this.ask(services, leader, [...parts.values()])),
    );
  }

  private async ask(
    services: BrokerServices,
    leader: number,
    partitions: { topic: string; partition: number }[],
  ): Promise<void> {
    const byTopic = new Map<string, number[]>();
    for (const p of partitions)
      byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p.partition]);
    const topics = [...byTopic].map(([name, indexes]) => ({
      name,
      partitions: indexes.map((i) => ({
        partitionIndex: i,
        currentLeaderEpoch: -1,
        timestamp: LATEST_TIMESTAMP,
      })),
    }));
    try {
      const client = await this.client(services, leader);
      const body = { replicaId: -1, isolationLevel: 0, topics, timeoutMs: REQUEST_TIMEOUT_MS };
      const response = await client.request(
        ApiKey.ListOffsets,
        LIST_OFFSETS_VERSION,
        body,
        REQUEST_TIMEOUT_MS,
      );
      const atMs = Date.now();
      for (const t of response.topics) {
        for (const p of t.partitions) {
          if (p.errorCode !== ErrorCode.NONE || p.offset < 0n) continue;
          this.known.set(topicPartitionKey(t.name, p.partitionIndex), { offset: p.offset, atMs });
        }
      }
    } catch (error) {
      this.clients.get(leader)?.close();
      this.clients.delete(leader);
      this.log.debug(`ListOffsets to broker ${leader} for lag: ${String(error)}`);
    }
  }

  private async client(services: BrokerServices, brokerId: number): Promise<InterBrokerClient> {
    const existing = this.clients.get(brokerId);
    if (existing !== undefined && !existing.isClosed) return existing;
    const endpoint = services.metadataCache.broker(brokerId);
    if (endpoint === undefined) throw new Error(`broker ${brokerId} is not live`);
    const client = await InterBrokerClient.connect(endpoint.host, endpoint.port, {
      ...services.replicaManager.interBrokerSecurity,
      clientId: `quill-admin-lag-${services.brokerId}`,
      connectTimeoutMs: REQUEST_TIMEOUT_MS,
    });
    this.clients.set(brokerId, client);
    return client;
  }
}

/** Committed partitions of groups coordinated here with no open local replica, by leader. */
function remotePartitionsByLeader(
  services: BrokerServices,
): Map<number, Map<TopicPartitionKey, { topic: string; partition: number }>> {
  const local = new Set<string>();
  for (const p of services.replicaManager.hostedPartitions()) {
    if (!p.log.isClosed) local.add(topicPartitionKey(p.topic, p.partition));
  }
  const byLeader = new Map<number, Map<TopicPartitionKey, { topic: string; partition: number }>>();
  let count = 0;
  for (const g of services.groupCoordinator.groupViews()) {
    for (const key of g.offsets?.keys() ?? []) {
      if (local.has(key) || count >= PARTITIONS_MAX) continue;
      const { topic, partition } = topicPartitionOf(key);
      const leader = services.metadataCache
        .topic(topic)
        ?.partitions.find((p) => p.partition === partition)?.leaderId;
      if (leader === undefined || leader < 0 || leader === services.brokerId) continue;
      let m = byLeader.get(leader);
      if (m === undefined) byLeader.set(leader, (m = new Map()));
      if (!m.has(key)) count++;
      m.set(key, { topic, partition });
    }
  }
  return byLeader;
}
