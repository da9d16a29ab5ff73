import { type TopicPartitionKey, topicPartitionKey } from "../common/topic-partition.ts";
import { assert } from "../util/assert.ts";
import type { Partition } from "./partition.ts";
import {
  ReplicaFetcher,
  type ReplicaFetcherHost,
  type ReplicaFetcherSettings,
} from "./replica-fetcher.ts";

/** Leaders one broker fetches from at once: one fetcher (and connection) per leader broker. */
export const FETCHERS_MAX = 10_000;

/**
 * The follower side of a broker (Kafka's ReplicaFetcherManager): one ReplicaFetcher per leader
 * broker, each followed partition in exactly one of them. A fetcher left with no partitions is
 * stopped, so a broker that leads nothing for us holds no connection.
 */
export class ReplicaFetcherManager {
  private readonly fetchers = new Map<number, ReplicaFetcher>();
  /** Which fetcher (leader broker) follows each partition. */
  private readonly sourceOf = new Map<TopicPartitionKey, number>();

  constructor(
    private readonly settings: ReplicaFetcherSettings,
    private readonly host: ReplicaFetcherHost,
  ) {}

  /** Follows `partition` from its current leader, leaving any fetcher it was in before. */
  addPartition(partition: Partition): void {
    assert(!partition.isLeader, `${partition.topic}-${partition.partition} is led here`);
    this.removePartition(partition.topic, partition.partition);
    // No leader: nothing to copy until the controller names one.
    if (partition.leaderId < 0) return;
    let fetcher = this.fetchers.get(partition.leaderId);
    if (fetcher === undefined) {
      assert(this.fetchers.size < FETCHERS_MAX, `${this.fetchers.size} replica fetchers`);
      fetcher = new ReplicaFetcher(partition.leaderId, this.settings, this.host);
      this.fetchers.set(partition.leaderId, fetcher);
    }
    fetcher.addPartition(partition);
    this.sourceOf.set(topicPartitionKey(partition.topic, partition.partition), partition.leaderId);
  }

  removePartition(topic: string, partition: number): void {
    const key = topicPartitionKey(topic, partition);
    const source = this.sourceOf.get(key);
    if (source === undefined) return;
    this.sourceOf.delete(key);
    const fetcher = this.fetchers.get(source);
    if (fetcher === undefined) return;
    fetcher.removePartition(topic, partition);
    if (fetcher.partitionCount === 0) {
      this.fetchers.delete(source);
      void fetcher.stop();
    }
  }

  /** The leader a partition is being fetched from, if any (for tests and tools). */
  sourceBroker(topic: string, partition: number): number | undefined {
    return this.sourceOf.get(topicPartitionKey(topic, partition));
  }

  async shutdown(): Promise<void> {
    const all = [...this.fetchers.values()];
    this.fetchers.clear();
    this.sourceOf.clear();
    await Promise.all(all.map((f) => f.stop()));
  }
}
