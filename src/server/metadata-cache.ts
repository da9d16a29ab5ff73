import type { BrokerId, LeaderEpoch, PartitionIndex } from "../common/branded.ts";
import {
  GROUP_METADATA_TOPIC,
  INTERNAL_TOPICS,
  type TopicNames,
} from "../common/internal-topics.ts";
import type { BrokerConfig } from "../config/broker-config.ts";
import type { Listener } from "../config/listeners.ts";
import { parseTopicConfigs, type TopicConfigOverrides } from "../config/topic-config.ts";
import type { MetadataStore, TopicRecord } from "../metadata/metadata-store.ts";
import { assert } from "../util/assert.ts";

/** One partition as Metadata describes it. */
export interface PartitionState {
  readonly partition: PartitionIndex;
  readonly leaderId: BrokerId;
  readonly leaderEpoch: LeaderEpoch;
  /** The version of the partition's state znode (0 until the controller first changes it). */
  readonly partitionEpoch: number;
  readonly replicas: readonly BrokerId[];
  readonly isr: readonly BrokerId[];
  /** Replicas the controller stated offline (dead broker or failed log dir, KIP-112). */
  readonly offlineReplicas: readonly BrokerId[];
}

/** A partition's leadership as the controller states it (LeaderAndIsr, UpdateMetadata). */
export interface PartitionLeaderState {
  readonly topic: string;
  /** The topic's id, or all zeros when the request did not carry it. */
  readonly topicId: Uint8Array;
  readonly partition: PartitionIndex;
  readonly leader: BrokerId;
  readonly leaderEpoch: LeaderEpoch;
  readonly partitionEpoch: number;
  readonly isr: readonly BrokerId[];
  readonly replicas: readonly BrokerId[];
  /**
   * UpdateMetadata's offline replicas; absent from LeaderAndIsr, which then keeps those stated
   * for the same epochs.
   */
  readonly offlineReplicas?: readonly BrokerId[];
}

export interface TopicMetadata {
  readonly name: string;
  readonly topicId: Uint8Array;
  readonly partitions: readonly PartitionState[];
  readonly configs: TopicConfigOverrides;
}

/** A broker as other brokers reach it (host, port: its inter-broker listener). */
export interface BrokerEndpoint {
  readonly nodeId: BrokerId;
  readonly host: string;
  readonly port: number;
  readonly rack: string | null;
  /** Every advertised listener; absent (an old UpdateMetadata) means host:port for all. */
  readonly listeners?: readonly Listener[];
}

/** Where clients of one listener reach a broker; undefined when it lacks that listener. */
export function endpointOn(
  broker: BrokerEndpoint,
  listenerName: string,
): { host: string; port: number } | undefined {
  if (broker.listeners === undefined) return broker;
  return broker.listeners.find((l) => l.listenerName === listenerName);
}

/** Partition states one broker keeps from the controller; a cluster's partitions are bounded by it. */
export const PARTITION_STATES_MAX = 1_000_000;
/** Live brokers one cache tracks. */
export const LIVE_BROKERS_MAX = 10_000;

/**
 * What Metadata, Produce and Fetch consult about topics: names, ids, partitions, leaders, and
 * each topic's config overrides, rebuilt from the MetadataStore whenever a topic changes. In the
 * embedded default this broker leads every partition with an ISR of itself. In cluster mode the
 * controller's UpdateMetadata and LeaderAndIsr requests say which brokers live, who controls the
 * cluster, and each partition's leader, epochs and ISR; those states overlay the assignment the
 * store holds (which only knows each partition's replicas). A cluster partition no state has
 * reached yet has no leader here, as in Kafka's cache: its first replica leads only once the
 * controller's LeaderAndIsr has told it so.
 */
export class MetadataCache {
  private byName = new Map<string, TopicMetadata>();
  private byIdHex = new Map<string, TopicMetadata>();
  private readonly reloadListeners = new Set<() => void>();
  /** The non-internal topic names, rebuilt on demand after the set of names changed. */
  private topicNameList: TopicNames = { version: 0, names: [] };
  private topicNamesStale = false;
  /** Controller-stated partition states by topic name, each with the topic id it was stated for. */
  private readonly leaderStates = new Map<string, Map<number, PartitionLeaderState>>();
  private leaderStateCount = 0;
  private live = new Map<number, BrokerEndpoint>();
  private controller = { id: -1, epoch: -1 };
  private ownBrokerEpoch = -1n;
  /** Requests waiting for this broker's first registration (bounded by requests in flight). */
  private readonly brokerEpochWaiters = new Set<() => void>();

  /** ZooKeeper mode: leaders, ISRs and live brokers come from the controller. */
  private readonly clusterMode: boolean;

  constructor(
    private readonly store: MetadataStore,
    private readonly self: BrokerEndpoint,
    private config: BrokerConfig,
  ) {
    this.clusterMode = config["zookeeper.connect"] !== null;
    // The embedded broker is its own controller; a cluster broker learns the controller's id.
    if (!this.clusterMode) this.controller = { id: self.nodeId, epoch: 0 };
    this.reload();
  }

  get clusterId(): string {
    return this.store.clusterId;
  }

  /** Live brokers by id; this broker is always among them (it answers, so it lives). */
  get brokers(): readonly BrokerEndpoint[] {
    const all = new Map(this.live);
    all.set(this.self.nodeId, this.self);
    return [...all.values()].sort((a, b) => a.nodeId - b.nodeId);
  }

  /**
   * The live brokers clients of one listener can reach, each at that listener's address, as
   * Kafka's MetadataCache.getAliveBrokerNodes(listenerName): brokers without it are left out.
   */
  brokersOn(
    listenerName: string,
  ): { nodeId: number; host: string; port: number; rack: string | null }[] {
    return this.brokers.flatMap((b) => {
      const e = endpointOn(b, listenerName);
      return e === undefined
        ? []
        : [{ nodeId: b.nodeId, host: e.host, port: e.port, rack: b.rack }];
    });
  }

  /**
   * Whether this broker has caught up on metadata: in a cluster, once the controller's
   * UpdateMetadata listed it among the live brokers (with the partition states sent before
   * it); the embedded broker is its own source of metadata.
   */
  get isCaughtUp(): boolean {
    return !this.clusterMode || this.live.has(this.self.nodeId);
  }

  /** A live broker's endpoint (followers fetch from it, requests to the controller go there). */
  broker(id: number): BrokerEndpoint | undefined {
    return id === this.self.nodeId ? this.self : this.live.get(id);
  }

  /** The active controller, or -1 while none is known. */
  get controllerId(): BrokerId {
    return this.controller.id;
  }

  /** The epoch of the newest controller heard from; older controllers' requests are stale. */
  get controllerEpoch(): number {
    return this.controller.epoch;
  }

  /** Records the controller, unless a newer one was heard from already; returns whether it did. */
  setController(id: number, epoch: number): boolean {
    if (epoch < this.controller.epoch) return false;
    this.controller = { id, epoch };
    return true;
  }

  /**
   * This broker's epoch (KIP-380): its registration's czxid, new with every registration; -1
   * until registered and in the embedded default. ControlledShutdown and AlterPartition carry
   * it, and controller requests meant for an older one are refused (STALE_BROKER_EPOCH).
   */
  get brokerEpoch(): bigint {
    return this.ownBrokerEpoch;
  }

  setBrokerEpoch(epoch: bigint): void {
    assert(epoch >= this.ownBrokerEpoch, `broker epoch ${epoch} after ${this.ownBrokerEpoch}`);
    this.ownBrokerEpoch = epoch;
    for (const wake of [...this.brokerEpochWaiters]) wake();
  }

  /** Resolves once this broker's epoch is known, or after `timeoutMs`. */
  whenBrokerEpochKnown(timeoutMs: number): Promise<void> {
    if (this.ownBrokerEpoch !== -1n) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.brokerEpochWaiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, timeoutMs);
      this.brokerEpochWaiters.add(wake);
    });
  }

  /**
   * Kafka's isBrokerEpochStale: a controller request for an older registration of this broker.
   * -1 (a controller that sends no epoch) is never stale; any other epoch is while this broker
   * has no registration of its own (the request was meant for its predecessor).
   */
  isStaleBrokerEpoch(epochInRequest: bigint): boolean {
    if (epochInRequest === -1n) return false;
    return this.ownBrokerEpoch === -1n || epochInRequest < this.ownBrokerEpoch;
  }

  /** Replaces the live brokers (UpdateMetadata lists them all). */
  setLiveBrokers(brokers: readonly BrokerEndpoint[]): void {
    assert(brokers.length <= LIVE_BROKERS_MAX, `${brokers.length} live brokers`);
    this.live = new Map(brokers.map((b) => [b.nodeId, b]));
  }

  /**
   * The broker coordinating a consumer group, as in Kafka: in a cluster, the leader of the
   * group's partition of __consumer_offsets (the Java hash of its id modulo the topic's
   * partition count), which the controller moves only when that leader dies or a preferred
   * election moves it; undefined while this cache knows no such topic or no live leader
   * (clients are told COORDINATOR_NOT_AVAILABLE and ask again). So every broker with the same
   * metadata names the same broker, and never one it does not list. Embedded: this broker.
   */
  groupCoordinator(groupId: string): BrokerEndpoint | undefined {
    if (!this.clusterMode) return this.self;
    const partitions = this.byName.get(GROUP_METADATA_TOPIC)?.partitions ?? [];
    if (partitions.length === 0) return undefined;
    const leaderId = partitions[Math.abs(javaStringHash(groupId)) % partitions.length]!.leaderId;
    return leaderId < 0 ? undefined : this.broker(leaderId);
  }

  /**
   * Applies controller-stated partition states; a state older than the one held (lower leader
   * epoch, or the same leader epoch and a lower partition epoch) is ignored. Returns the states
   * applied.
   */
  applyLeaderStates(states: readonly PartitionLeaderState[]): PartitionLeaderState[] {
    const applied: PartitionLeaderState[] = [];
    for (const state of states) {
      let byPartition = this.leaderStates.get(state.topic);
      const held = byPartition?.get(state.partition);
      if (held !== undefined && sameTopicId(held.topicId, state.topicId) && isOlder(state, held)) {
        continue;
      }
      if (byPartition === undefined) {
        byPartition = new Map();
        this.leaderStates.set(state.topic, byPartition);
      }
      const kept =
        state.offlineReplicas === undefined &&
        held !== undefined &&
        sameTopicId(held.topicId, state.topicId) &&
        !isOlder(held, state)
          ? { ...state, offlineReplicas: held.offlineReplicas }
          : state;
      if (held === undefined) {
        assert(
          this.leaderStateCount < PARTITION_STATES_MAX,
          `more than ${PARTITION_STATES_MAX} partition states`,
        );
        this.leaderStateCount++;
      }
      byPartition.set(state.partition, kept);
      applied.push(kept);
    }
    if (applied.length > 0) this.reload();
    return applied;
  }

  /** Forgets the stated leadership of a topic's partitions (StopReplica with deletion). */
  forgetLeaderStates(topic: string): void {
    const byPartition = this.leaderStates.get(topic);
    if (byPartition === undefined) return;
    this.leaderStateCount -= byPartition.size;
    this.leaderStates.delete(topic);
    this.reload();
  }

  /** One partition's state, or undefined for an unknown topic or partition. */
  partitionState(topic: string, partition: number): PartitionState | undefined {
    return this.byName.get(topic)?.partitions[partition];
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

  /** The broker config now, for topic defaults (DescribeConfigs, log settings). */
  get brokerConfig(): BrokerConfig {
    return this.config;
  }

  /** A dynamic broker config change (DynamicBrokerConfig); the broker's identity stays. */
  updateBrokerConfig(config: BrokerConfig): void {
    assert(config["broker.id"] === this.config["broker.id"], "broker.id cannot change");
    this.config = config;
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
    const namesChanged =
      byName.size !== this.byName.size || [...byName.keys()].some((n) => !this.byName.has(n));
    this.byName = byName;
    this.byIdHex = byIdHex;
    if (namesChanged) this.topicNamesStale = true;
    for (const listener of this.reloadListeners) listener();
  }

  /** The cluster's topic names without internal topics, versioned by changes of the set. */
  topicNames(): TopicNames {
    if (this.topicNamesStale) {
      const names = [...this.byName.keys()].filter((n) => !INTERNAL_TOPICS.has(n)).sort();
      this.topicNameList = { version: this.topicNameList.version + 1, names };
      this.topicNamesStale = false;
    }
    return this.topicNameList;
  }

  /** Calls `listener` after every reload (topics created, deleted or changed); returns an unsubscribe. */
  onReload(listener: () => void): () => void {
    this.reloadListeners.add(listener);
    return () => this.reloadListeners.delete(listener);
  }

  private toMetadata(record: TopicRecord): TopicMetadata {
    const topicId = Buffer.from(record.topicIdHex, "hex");
    const stated = this.leaderStates.get(record.name);
    const partitions = record.assignment.map((replicas, partition) => {
      const s = stated?.get(partition);
      if (s !== undefined && sameTopicId(s.topicId, topicId)) {
        return {
          partition,
          leaderId: s.leader,
          leaderEpoch: s.leaderEpoch,
          partitionEpoch: s.partitionEpoch,
          replicas: s.replicas,
          isr: s.isr,
          offlineReplicas: s.offlineReplicas ?? [],
        };
      }
      // Embedded, this broker leads as the assignment says. In a cluster the first replica
      // leads only once the controller's LeaderAndIsr reaches it; until a state arrives here,
      // naming it would send producers to a broker that still answers NOT_LEADER_OR_FOLLOWER,
      // and their retried first batches would land after later ones. Kafka's cache has no
      // leader for such a partition either, so Metadata says LEADER_NOT_AVAILABLE for now.
      const leaderId = this.clusterMode ? -1 : (replicas[0] ?? -1);
      return {
        partition,
        leaderId,
        leaderEpoch: 0,
        partitionEpoch: 0,
        replicas,
        isr: replicas,
        offlineReplicas: [],
      };
    });
    const configs = parseTopicConfigs(
      Object.entries(record.configs).map(([name, value]) => ({ name, value })),
    );
    return { name: record.name, topicId, partitions, configs };
  }
}

const ZERO_ID = new Uint8Array(16);
/** Java's String.hashCode over UTF-16 code units, as Kafka hashes group ids. */
function javaStringHash(text: string): number {
  let hash = 0;
  for (let i = 0; i < text.length; i++) hash = (Math.imul(hash, 31) + text.charCodeAt(i)) | 0;
  // Kafka's Utils.abs maps Integer.MIN_VALUE to 0 rather than overflowing.
  return hash === -2147483648 ? 0 : hash;
}

/** A state stated without a topic id applies to whatever topic has the name. */
function sameTopicId(stated: Uint8Array, topicId: Uint8Array): boolean {
  return Buffer.compare(stated, ZERO_ID) === 0 || Buffer.compare(stated, topicId) === 0;
}

function isOlder(state: PartitionLeaderState, held: PartitionLeaderState): boolean {
  if (state.leaderEpoch !== held.leaderEpoch) return state.leaderEpoch < held.leaderEpoch;
  return state.partitionEpoch < held.partitionEpoch;
}
