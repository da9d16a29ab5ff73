import type { MetadataStore, TopicRecord } from "../cluster/metadata-store.ts";
import type { BrokerConfig } from "../config/broker-config.ts";
import { parseTopicConfigs, type TopicConfigOverrides } from "../config/topic-config.ts";

/** One partition as Metadata describes it. */
export interface PartitionState {
  readonly partition: number;
  readonly leaderId: number;
  readonly leaderEpoch: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
}

export interface TopicMetadata {
  readonly name: string;
  readonly topicId: Uint8Array;
  readonly partitions: readonly PartitionState[];
  readonly configs: TopicConfigOverrides;
}

export interface BrokerEndpoint {
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
  readonly rack: string | null;
}

/**
 * What Metadata, Produce and Fetch consult about topics: names, ids, partitions, leaders, and
 * each topic's config overrides, rebuilt from the MetadataStore whenever a topic changes. In the
 * embedded default this broker leads every partition with an ISR of itself; in cluster mode the
 * controller's LeaderAndIsr/UpdateMetadata requests will feed the same cache.
 */
export class MetadataCache {
  private byName = new Map<string, TopicMetadata>();
  private byIdHex = new Map<string, TopicMetadata>();
  private readonly reloadListeners = new Set<() => void>();

  constructor(
    private readonly store: MetadataStore,
    private readonly self: BrokerEndpoint,
    private readonly config: BrokerConfig,
  ) {
    this.reload();
  }

  get clusterId(): string {
    return this.store.clusterId;
  }

  get brokers(): readonly BrokerEndpoint[] {
    return [this.self];
  }

  /** The controller is this broker in the embedded default. */
  get controllerId(): number {
    return this.self.nodeId;
  }

  topics(): IterableIterator<TopicMetadata> {
    return this.byName.values();
  }

  topic(name: string): TopicMetadata | undefined {
    return this.byName.get(name);
  }

  topicById(topicId: Uint8Array): TopicMetadata | undefined {
    return this.byIdHex.get(Buffer.from(topicId.buffer, topicId.byteOffset, 16).toString("hex"));
  }

  /** The broker config, for topic defaults (DescribeConfigs, log settings). */
  get brokerConfig(): BrokerConfig {
    return this.config;
  }

  /** Rebuilds from the store; called after every topic change. */
  reload(): void {
    const byName = new Map<string, TopicMetadata>();
    const byIdHex = new Map<string, TopicMetadata>();
    for (const record of this.store.topics()) {
      const t = this.toMetadata(record);
      byName.set(t.name, t);
      byIdHex.set(record.topicIdHex, t);
    }
    this.byName = byName;
    this.byIdHex = byIdHex;
    for (const listener of this.reloadListeners) listener();
  }

  /** Calls `listener` after every reload (topics created, deleted or changed); returns an unsubscribe. */
  onReload(listener: () => void): () => void {
    this.reloadListeners.add(listener);
    return () => this.reloadListeners.delete(listener);
  }

  private toMetadata(record: TopicRecord): TopicMetadata {
    const partitions = record.assignment.map((replicas, partition) => ({
      partition,
      leaderId: replicas[0] ?? -1,
      leaderEpoch: 0,
      replicas,
      isr: replicas,
    }));
    const configs = parseTopicConfigs(
      Object.entries(record.configs).map(([name, value]) => ({ name, value })),
    );
    return { name: record.name, topicId: Buffer.from(record.topicIdHex, "hex"), partitions, configs };
  }
}
