/**
 * The transaction coordinator's durable state (Kafka's TransactionStateManager): every
 * transactional id's TransactionMetadata in memory, each change first written to its partition
 * of the internal compacted topic `__transaction_state` (transaction-log.ts) with acks=all, and
 * read back from there when this broker becomes the partition's leader (start-up, failover).
 *
 * Why the topic: it is what Kafka does, so the state is replicated like any partition and a
 * new coordinator takes over by reading the log; it survives kill -9 because the record is in
 * the log (page cache, and the replicas) before the client hears back.
 */

import type { BrokerConfig } from "../config/broker-config.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import type { AdminManager } from "../server/admin-manager.ts";
import type { MetadataCache } from "../server/metadata-cache.ts";
import type { ReplicaManager } from "../server/replica-manager.ts";
import type { Logger } from "../util/logger.ts";
import { appendInternal, InternalTopic, readInternalPartition } from "./internal-topics.ts";
import {
  decodeTxnKey,
  decodeTxnValue,
  encodeTxnKey,
  encodeTxnValue,
  partitionForKey,
  TRANSACTION_STATE_TOPIC,
} from "./transaction-log.ts";
import {
  splitTxnPartitionKey,
  TransactionMetadata,
  TransactionState,
  type TxnPartitionKey,
  txnPartitionKey,
} from "./transaction-metadata.ts";

/** Transactional ids one coordinator holds; beyond it InitProducerId is refused. */
export const TRANSACTIONAL_IDS_MAX = 1_000_000;

/** The values a state change writes; the metadata takes them once the write succeeded. */
export interface TxnTransition {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly lastProducerId: bigint;
  readonly lastProducerEpoch: number;
  readonly txnTimeoutMs: number;
  readonly state: TransactionState;
  readonly partitions: ReadonlySet<TxnPartitionKey>;
  readonly txnStartTimestampMs: number;
  readonly txnLastUpdateTimestampMs: number;
}

export class TransactionStateManager {
  private readonly txns = new Map<string, TransactionMetadata>();
  private readonly loaded = new Set<number>();
  private readonly topic: InternalTopic;

  constructor(
    private readonly config: BrokerConfig,
    private readonly replicaManager: ReplicaManager,
    adminManager: AdminManager,
    private readonly cache: MetadataCache,
    private readonly logger: Logger,
  ) {
    this.topic = new InternalTopic(adminManager, cache, {
      name: TRANSACTION_STATE_TOPIC,
      numPartitions: config["transaction.state.log.num.partitions"],
      replicationFactor: config["transaction.state.log.replication.factor"],
      replicationFactorKey: "transaction.state.log.replication.factor",
      minIsr: config["transaction.state.log.min.isr"],
      segmentBytes: config["transaction.state.log.segment.bytes"],
    });
  }

  get partitionCount(): number {
    return this.topic.partitionCount;
  }

  partitionFor(transactionalId: string): number {
    return partitionForKey(transactionalId, this.partitionCount);
  }

  /** Creates __transaction_state on first use (as Kafka's FindCoordinator does). */
  async ensureTopic(): Promise<void> {
    const created = await this.topic.ensure();
    // A new topic is empty: every partition this broker leads is loaded as it is.
    if (created && this.config["zookeeper.connect"] === null) {
      for (let p = 0; p < this.partitionCount; p++) this.loaded.add(p);
    }
  }

  /** Null when this broker may answer for the id now, else the error to return. */
  readiness(transactionalId: string): number | null {
    const partition = this.partitionFor(transactionalId);
    const p = this.replicaManager.partitionState(TRANSACTION_STATE_TOPIC, partition);
    if (this.cache.topic(TRANSACTION_STATE_TOPIC) === undefined) {
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    }
    if (p !== undefined && !p.isLeader) return ErrorCode.NOT_COORDINATOR;
    if (!this.loaded.has(partition)) return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS;
    return null;
  }

  /** The coordinator epoch markers carry: the state partition's leader epoch. */
  coordinatorEpoch(transactionalId: string): number {
    const p = this.replicaManager.partitionState(
      TRANSACTION_STATE_TOPIC,
      this.partitionFor(transactionalId),
    );
    return Math.max(0, p?.leaderEpoch ?? 0);
  }

  get(transactionalId: string): TransactionMetadata | undefined {
    return this.txns.get(transactionalId);
  }

  add(metadata: TransactionMetadata): void {
    if (this.txns.size >= TRANSACTIONAL_IDS_MAX) {
      throw new KafkaError(
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        `this coordinator holds ${TRANSACTIONAL_IDS_MAX} transactional ids, its limit`,
      );
    }
    this.txns.set(metadata.transactionalId, metadata);
  }

  all(): IterableIterator<TransactionMetadata> {
    return this.txns.values();
  }

  /**
   * Writes a transition of `m` to the log and applies it; m.pendingState guards the id while
   * the write is in flight. Throws KafkaError (NOT_COORDINATOR etc.) when the write failed.
   */
  async write(m: TransactionMetadata, t: TxnTransition): Promise<void> {
    m.pendingState = t.state;
    try {
      await this.append(
        m.transactionalId,
        encodeTxnValue({
          producerId: t.producerId,
          producerEpoch: t.producerEpoch,
          txnTimeoutMs: t.txnTimeoutMs,
          state: t.state,
          partitions: groupByTopic(t.partitions),
          txnLastUpdateTimestampMs: t.txnLastUpdateTimestampMs,
          txnStartTimestampMs: t.txnStartTimestampMs,
        }),
      );
    } finally {
      m.pendingState = null;
    }
    m.producerId = t.producerId;
    m.producerEpoch = t.producerEpoch;
    m.lastProducerId = t.lastProducerId;
    m.lastProducerEpoch = t.lastProducerEpoch;
    m.txnTimeoutMs = t.txnTimeoutMs;
    m.state = t.state;
    m.partitions = new Set(t.partitions);
    m.txnStartTimestampMs = t.txnStartTimestampMs;
    m.txnLastUpdateTimestampMs = t.txnLastUpdateTimestampMs;
  }

  /** Forgets an expired id: a tombstone, so compaction drops its records. */
  async remove(m: TransactionMetadata): Promise<void> {
    m.pendingState = TransactionState.Dead;
    try {
      await this.append(m.transactionalId, null);
    } finally {
      m.pendingState = null;
    }
    m.state = TransactionState.Dead;
    this.txns.delete(m.transactionalId);
  }

  private async append(transactionalId: string, value: Uint8Array | null): Promise<void> {
    await appendInternal(
      this.replicaManager,
      this.config["replica.socket.timeout.ms"],
      { topic: TRANSACTION_STATE_TOPIC, partition: this.partitionFor(transactionalId) },
      encodeTxnKey(transactionalId),
      value,
      transactionalId,
    );
  }

  /**
   * Reads a state partition this broker now leads from its start and replaces the ids hashed
   * to it with what the log says (last record wins, tombstones forget). Returns the ids loaded.
   */
  async loadPartition(partition: number): Promise<TransactionMetadata[]> {
    this.loaded.delete(partition);
    for (const [id] of this.txns) if (this.partitionFor(id) === partition) this.txns.delete(id);
    const latest = new Map<string, TransactionMetadata | null>();
    await readInternalPartition(
      this.replicaManager,
      TRANSACTION_STATE_TOPIC,
      partition,
      (key, value) => {
        const id = key === null ? null : decodeTxnKey(key);
        if (id !== null) latest.set(id, value === null ? null : metadataOf(id, value));
      },
    );
    const loaded: TransactionMetadata[] = [];
    for (const m of latest.values()) {
      if (m === null) continue;
      this.txns.set(m.transactionalId, m);
      loaded.push(m);
    }
    this.loaded.add(partition);
    this.logger.info(
      `loaded ${loaded.length} transactional ids from ` + `${TRANSACTION_STATE_TOPIC}-${partition}`,
    );
    return loaded;
  }

  /** This broker no longer leads the partition: its ids are someone else's now. */
  unloadPartition(partition: number): void {
    this.loaded.delete(partition);
    for (const [id] of this.txns) if (this.partitionFor(id) === partition) this.txns.delete(id);
  }
}

function groupByTopic(keys: ReadonlySet<TxnPartitionKey>): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const key of keys) {
    const { topic, partition } = splitTxnPartitionKey(key);
    const list = out.get(topic) ?? [];
    list.push(partition);
    out.set(topic, list);
  }
  return out;
}

function metadataOf(id: string, value: Uint8Array): TransactionMetadata {
  const v = decodeTxnValue(value);
  const m = new TransactionMetadata(
    id,
    v.producerId,
    v.producerEpoch,
    v.txnTimeoutMs,
    v.state,
    v.txnLastUpdateTimestampMs,
  );
  m.txnStartTimestampMs = v.txnStartTimestampMs;
  for (const [topic, ids] of v.partitions) {
    for (const p of ids) m.partitions.add(txnPartitionKey(topic, p));
  }
  return m;
}
