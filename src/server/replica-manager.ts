import { statfsSync } from "node:fs";
import type { BrokerId, LeaderEpoch, Offset, PartitionIndex } from "../common/branded.ts";
import {
  type TopicPartitionKey,
  topicPartitionKey,
  topicPartitionOf,
} from "../common/topic-partition.ts";
import { TopicPartitionTable } from "../common/topic-partition-table.ts";
import { RACK_AWARE_REPLICA_SELECTOR } from "../config/broker-config.ts";
import { type InterBrokerSecurity, PLAINTEXT_SECURITY } from "../network/inter-broker-client.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import type { FileRange } from "../protocol/records.ts";
import type { LogManager } from "../storage/log-manager.ts";
import type { ProducerStateEntry } from "../storage/producer-state-entry.ts";
import type { AppendOrigin } from "../storage/producer-state-manager.ts";
import type { AbortedTxn } from "../storage/transaction-index.ts";
import { LATEST_TIMESTAMP, type UnifiedLog } from "../storage/unified-log.ts";
import { AssertionError, assert } from "../util/assert.ts";
import { type Logger, SILENT_LOGGER } from "../util/logger.ts";
import type { MaybePromise } from "../util/maybe-promise.ts";
import { type DelayedFetch, DelayedFetchPurgatory } from "./delayed-fetch-purgatory.ts";
import { DelayedProducePurgatory, type ProduceWait } from "./delayed-produce-purgatory.ts";
import { FetchManager } from "./fetch-manager.ts";
import { FetchSessionCache } from "./fetch-session-cache.ts";
import { truncateToLeader } from "./follower-truncation.ts";
import { IsrManager } from "./isr-manager.ts";
import { LeaderLease } from "./leader-lease.ts";
import { logConfigFor } from "./log-config-for-topic.ts";
import type { BrokerEndpoint, MetadataCache } from "./metadata-cache.ts";
import { type AlterIsr, Partition, type PartitionLeadership } from "./partition.ts";
import { ReplicaAlterLogDirsManager } from "./replica-alter-log-dirs-manager.ts";
import type { ReplicaFetcherHost } from "./replica-fetcher.ts";
import { ReplicaFetcherManager } from "./replica-fetcher-manager.ts";
import { ReplicationQuota } from "./replication-quota.ts";

/** Long-poll fetches parked at once, across all connections. */
export const PARKED_FETCHES_MAX = 10_000;
/** acks=-1 produces waiting for their ISR at once, across all connections. */
export const PARKED_PRODUCES_MAX = 10_000;
/** DeleteRecords requests waiting for their replicas at once, across all connections. */
export const PARKED_DELETE_RECORDS_MAX = 10_000;
/** Kafka's replica.fetch.response.max.bytes default: the most one follower fetch brings back. */
const REPLICA_FETCH_RESPONSE_MAX_BYTES = 10 * 1024 * 1024;

/** The transaction coordinator's internal topic (coordinator/transaction-log.ts). */
const TRANSACTION_STATE_TOPIC = "__transaction_state";

/** Told when this broker starts (true) or stops (false) leading a partition. */
export type LeadershipListener = (topic: string, partition: number, isLeader: boolean) => void;
/** Leadership listeners per replica manager; one per interested component. */
const LEADERSHIP_LISTENERS_MAX = 16;

export interface ReplicaManagerOptions {
  /** Proposes ISR changes to the controller; without it (embedded default) none are made. */
  readonly alterIsr?: AlterIsr;
  /** A live broker's endpoint, for follower fetches; defaults to the metadata cache's brokers. */
  readonly brokerEndpoint?: (brokerId: BrokerId) => BrokerEndpoint | undefined;
  readonly logger?: Logger;
  /** How connections to other brokers are secured (the inter-broker listener's protocol). */
  readonly interBrokerSecurity?: InterBrokerSecurity;
  /**
   * Told after a log dir failed and its partitions went offline here (the broker tells the
   * controller); `allOffline` when no log dir is left.
   */
  readonly onLogDirFailure?: (logDir: string, allOffline: boolean) => void;
  /**
   * ZooKeeper mode: how long ZooKeeper has not answered, and the session timeout; with them a
   * leader cut off from ZooKeeper and its followers stops taking produce requests (LeaderLease).
   */
  readonly zooKeeperSilence?: { readonly silentMs: () => number; readonly timeoutMs: () => number };
}

export interface AppendEntry {
  readonly topic: string;
  readonly partition: PartitionIndex;
  /** One batch the produce handler validated, or batches the broker built itself. */
  readonly records: Uint8Array;
  /** "coordinator" for the transaction coordinator's markers; producers by default. */
  readonly origin?: AppendOrigin;
  /** True for the coordinator's own writes to its internal topic (clients may not write it). */
  readonly internal?: boolean;
}

/** The partition an append goes to, without its records. */
export type AppendTarget = Pick<AppendEntry, "topic" | "partition" | "internal">;

export interface AppendOutcome {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly baseOffset: Offset;
  readonly logAppendTimeMs: bigint;
  readonly logStartOffset: Offset;
}

export interface FetchEntry {
  readonly topic: string;
  readonly partition: PartitionIndex;
  readonly fetchOffset: Offset;
  readonly partitionMaxBytes: number;
  /** The leader epoch the client believes in (v9+), or -1 to skip the check. */
  readonly currentLeaderEpoch?: LeaderEpoch;
  /** A follower's log start offset (v5+), which DeleteRecords waits on; -1 from consumers. */
  readonly logStartOffset?: Offset;
}

export interface FetchOutcome {
  readonly errorCode: number;
  readonly highWatermark: Offset;
  readonly lastStableOffset: Offset;
  readonly logStartOffset: Offset;
  /** read_committed: the aborted transactions in what may be read; null otherwise. */
  readonly abortedTransactions: readonly AbortedTxn[] | null;
  /** Whole batches as file ranges; the network layer sends and releases them. */
  readonly records: FileRange[];
  /** KIP-392: the broker the consumer should read this partition from instead (no records). */
  readonly preferredReadReplica?: BrokerId;
}

export interface FetchParams {
  readonly maxWaitMs: number;
  readonly minBytes: number;
  readonly maxBytes: number;
  readonly entries: readonly FetchEntry[];
  /** Resolves when the requesting connection closes, so a parked fetch can give up. */
  readonly onCancel: (listener: () => void) => () => void;
  /** The follower's broker id for a replica fetch; -1 (the default) for a consumer. */
  readonly replicaId?: BrokerId;
  /** 0 read_uncommitted (the default), 1 read_committed: stop at the last stable offset. */
  readonly isolationLevel?: number;
  /**
   * A consumer's rack (Fetch v11+, KIP-392), or null from older versions: with a rack (even
   * empty) the consumer may read from a follower, up to the follower's high watermark.
   */
  readonly clientRack?: string | null;
  /**
   * Read to the log end, not the high watermark (Kafka's FetchIsolation.LOG_END), for a
   * coordinator loading its state as a new leader: the high watermark a new leader starts with
   * can lag records the previous leader had acknowledged, and this log is now the truth.
   */
  readonly toLogEnd?: boolean;
}

export const IsolationLevel = { READ_UNCOMMITTED: 0, READ_COMMITTED: 1 } as const;
/** Aborted transactions one fetch of one partition returns at most. */
const ABORTED_TXNS_PER_FETCH_MAX = 100_000;

export interface OffsetLookup {
  readonly errorCode: number;
  readonly timestamp: bigint;
  readonly offset: Offset;
  /** The leader epoch of the offset found (what KIP-320 clients validate positions with). */
  readonly leaderEpoch: LeaderEpoch;
}

export interface EpochEndLookup {
  readonly errorCode: number;
  readonly leaderEpoch: LeaderEpoch;
  readonly endOffset: Offset;
}

export interface DeleteRecordsEntry {
  readonly topic: string;
  readonly partition: PartitionIndex;
  /** Records below it go; -1 means the high watermark (Kafka's HIGH_WATERMARK). */
  readonly offset: Offset;
}

export interface DeleteRecordsOutcome {
  readonly errorCode: number;
  /** The low watermark reached (the smallest log start offset of the replicas), -1 on error. */
  readonly lowWatermark: Offset;
}

/** The idempotent producers a partition remembers (DescribeProducers). */
export interface ActiveProducers {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly producers: readonly ProducerStateEntry[];
}

interface AppendedOne {
  readonly outcome: AppendOutcome;
  /** One past the last offset written, which the HW must reach for acks=-1; null on error. */
  readonly requiredOffset: Offset | null;
}

/**
 * Reads and writes partitions on behalf of clients and followers (Kafka's ReplicaManager):
 * checks that this broker leads the partition (in the leader epoch the client expects), appends
 * stamped with the leader epoch, serves consumers below the high watermark and followers up to
 * the log end, and parks fetches that found too little and acks=-1 produces until the ISR has
 * their batches.
 *
 * Roles come from the controller (becomeLeaderOrFollower, stopReplicas); a partition it has not
 * spoken about, and every partition of the embedded default, is led here with an ISR of this
 * broker alone, so its high watermark is the log end offset after each append.
 */
export class ReplicaManager {
  private readonly purgatory = new DelayedFetchPurgatory(PARKED_FETCHES_MAX);
  /** Follower fetches wait for appends; consumer fetches (above) for the high watermark. */
  private readonly followerFetches = new DelayedFetchPurgatory(PARKED_FETCHES_MAX);
  private readonly produces = new DelayedProducePurgatory(PARKED_PRODUCES_MAX);
  /**
   * Kafka's DelayedDeleteRecords: a wait has the same shape as an acks=-1 produce's (a check
   * re-run when a partition changes), with the low watermark in place of the HW.
   */
  private readonly deleteRecordsWaits = new DelayedProducePurgatory(PARKED_DELETE_RECORDS_MAX);
  /**
   * Bounded by the logs this broker holds (LogManager's limit); pruned on topic deletion in
   * the embedded default, by StopReplica in a cluster.
   */
  private readonly partitions = new Map<TopicPartitionKey, Partition>();
  /** `partitions` by topic and partition, for `partitionOf` on the request paths. */
  private readonly partitionIndex = new TopicPartitionTable<Partition>();
  private readonly leadershipListeners = new Set<LeadershipListener>();
  private readonly fetchers: ReplicaFetcherManager;
  /** Replicas moving between this broker's log dirs (AlterReplicaLogDirs). */
  private readonly logDirMoves: ReplicaAlterLogDirsManager;
  /** Incremental fetch sessions (KIP-227) of the consumers and followers fetching here. */
  readonly fetchManager: FetchManager;
  private readonly isrManager: IsrManager | null;
  private readonly lease: LeaderLease | null;
  private readonly leaderQuota: ReplicationQuota;
  private readonly followerQuota: ReplicationQuota;
  private readonly localBrokerId: number;
  private readonly brokerEndpoint: (brokerId: number) => BrokerEndpoint | undefined;
  private readonly log: Logger;
  private controllerEpoch = -1;
  /** ZooKeeper mode: roles come only from the controller. */
  private readonly clusterMode: boolean;

  /** How this broker's connections to other brokers are secured (fetchers, markers, lag). */
  readonly interBrokerSecurity: InterBrokerSecurity;

  constructor(
    private readonly logs: LogManager,
    private readonly cache: MetadataCache,
    options: ReplicaManagerOptions = {},
  ) {
    const config = cache.brokerConfig;
    this.localBrokerId = config["broker.id"];
    this.interBrokerSecurity = options.interBrokerSecurity ?? PLAINTEXT_SECURITY;
    this.leaderQuota = replicationQuota(cache, "leader");
    this.followerQuota = replicationQuota(cache, "follower");
    this.clusterMode = config["zookeeper.connect"] !== null;
    this.log = options.logger ?? SILENT_LOGGER;
    const slots = config["max.incremental.fetch.session.cache.slots"];
    this.fetchManager = new FetchManager(new FetchSessionCache(slots));
    this.brokerEndpoint =
      options.brokerEndpoint ?? ((id) => cache.brokers.find((b) => b.nodeId === id));
    for (const log of logs.allLogs()) {
      // A lone replica has everything it wrote; in a cluster the HW was what the ISR had then.
      const checkpointed = logs.checkpointedHighWatermark(log.topic, log.partition) ?? 0n;
      const end = log.logEndOffset;
      log.highWatermark = !this.clusterMode ? end : checkpointed < end ? checkpointed : end;
    }
    this.fetchers = new ReplicaFetcherManager(
      {
        localBrokerId: this.localBrokerId,
        maxWaitMs: config["replica.fetch.wait.max.ms"],
        minBytes: config["replica.fetch.min.bytes"],
        maxBytes: REPLICA_FETCH_RESPONSE_MAX_BYTES,
        partitionMaxBytes: config["replica.fetch.max.bytes"],
        backoffMs: config["replica.fetch.backoff.ms"],
        socketTimeoutMs: config["replica.socket.timeout.ms"],
        security: this.interBrokerSecurity,
      },
      this.fetcherHost(),
    );
    this.logDirMoves = this.newLogDirMoves();
    this.isrManager =
      options.alterIsr === undefined
        ? null
        : new IsrManager({
            alterIsr: options.alterIsr,
            lagTimeMaxMs: config["replica.lag.time.max.ms"],
            partitions: () => this.partitions.values(),
            // A broker the controller no longer lists would be refused (INELIGIBLE_REPLICA).
            isReplicaIsrEligible: (id) => this.brokerEndpoint(id) !== undefined,
            onIsrChanged: (p) => this.afterLeaderStateChange(p),
            log: this.log.child("IsrManager"),
          });
    const silence = options.zooKeeperSilence;
    this.lease = silence === undefined ? null : this.startLease(silence);
    logs.onLogDirFailure((logDir, partitions, allOffline) => {
      for (const { topic, partition } of partitions) this.forgetPartition(topic, partition);
      options.onLogDirFailure?.(logDir, allOffline);
    });
    // A fetch parked on a partition that stops existing can be answered (with an error) now.
    cache.onReload(() => {
      this.purgatory.wakeWhere((key) => !this.isHosted(key));
      this.followerFetches.wakeWhere((key) => !this.isHosted(key));
      // In a cluster only StopReplica ends a role: a cache may briefly lack a topic that the
      // controller has already assigned (its UpdateMetadata can run ahead of the store).
      if (this.clusterMode) return;
      for (const [key, p] of this.partitions) {
        if (this.isHosted(key)) continue;
        this.fetchers.removePartition(p.topic, p.partition);
        this.partitions.delete(key);
        this.partitionIndex.delete(p.topic, p.partition);
      }
    });
  }

  private startLease(silence: NonNullable<ReplicaManagerOptions["zooKeeperSilence"]>) {
    return new LeaderLease({
      zooKeeperSilentMs: silence.silentMs,
      sessionTimeoutMs: silence.timeoutMs,
      partitions: () => this.partitions.entries(),
      // Waiting acks=-1 produces on a lapsed partition are answered now, not at their timeout.
      onLapsed: (keys) => {
        for (const key of keys) this.produces.checkAndComplete(key);
      },
      log: this.log.child("LeaderLease"),
    });
  }

  private isHosted(key: TopicPartitionKey): boolean {
    const { topic: name, partition } = topicPartitionOf(key);
    const topic = this.cache.topic(name);
    return topic !== undefined && partition < topic.partitions.length;
  }

  /**
   * Appends without waiting for replication (acks 0 and 1; acks=-1 callers that wait use
   * produceRecords). Client records arrive validated by the produce handler (api/).
   */
  appendRecords(acks: number, entries: readonly AppendEntry[]): AppendOutcome[] {
    return entries.map((e) => this.appendOne(acks, e).outcome);
  }

  /**
   * Produce: appends every partition, then for acks=-1 waits until the high watermark passes
   * each batch (the whole ISR has it) or `timeoutMs` passes (REQUEST_TIMED_OUT).
   */
  produceRecords(
    acks: number,
    timeoutMs: number,
    entries: readonly AppendEntry[],
  ): MaybePromise<AppendOutcome[]> {
    const appended = entries.map((e) => this.appendOne(acks, e));
    const outcomes = appended.map((a) => a.outcome);
    // acks 0 and 1 are answered now: no promise, no microtask (the produce handler's fast path).
    if (acks !== -1) return outcomes;
    return this.awaitReplication(timeoutMs, entries, appended, outcomes);
  }

  /** acks=-1: parks the appended batches until the ISR holds them or `timeoutMs` passes. */
  private async awaitReplication(
    timeoutMs: number,
    entries: readonly AppendEntry[],
    appended: readonly AppendedOne[],
    outcomes: AppendOutcome[],
  ): Promise<AppendOutcome[]> {
    const waiting: { index: number; wait: ProduceWait }[] = [];
    appended.forEach((a, index) => {
      if (a.requiredOffset === null) return;
      waiting.push({ index, wait: this.produceWait(entries[index]!, a.requiredOffset) });
    });
    if (waiting.length === 0) return outcomes;
    const codes = await this.produces.park(
      waiting.map((w) => w.wait),
      timeoutMs,
    );
    waiting.forEach((w, i) => {
      if (codes[i] === ErrorCode.NONE) return;
      outcomes[w.index] = { ...outcomes[w.index]!, errorCode: codes[i]!, errorMessage: null };
    });
    return outcomes;
  }

  private produceWait(entry: AppendEntry, requiredOffset: bigint): ProduceWait {
    const key = topicPartitionKey(entry.topic, entry.partition);
    const minIsr = this.minInsyncReplicas(entry.topic);
    return {
      partitionKey: key,
      check: () => {
        const p = this.partitions.get(key);
        if (p === undefined || this.lease?.lapsed(key)) {
          return { outcome: "done", errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER };
        }
        return p.checkEnoughReplicasReachOffset(requiredOffset, minIsr);
      },
    };
  }

  /**
   * Why this broker would refuse to append to the partition whatever the records hold, or null.
   * The produce handler asks before answering a partition's invalid records: these refusals
   * come first, as they do in appendOne.
   */
  appendRefusal(acks: number, entry: AppendTarget): KafkaError | null {
    try {
      this.appendablePartition(acks, entry);
      return null;
    } catch (e) {
      return asKafkaError(e, this.log);
    }
  }

  private appendablePartition(acks: number, entry: AppendTarget): Partition {
    if (entry.topic === TRANSACTION_STATE_TOPIC && entry.internal !== true) {
      // Kafka's "Cannot append to internal topic": only the coordinator writes its state.
      throw new KafkaError(
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        `Cannot append to internal topic ${entry.topic}`,
      );
    }
    const partition = this.leaderPartition(entry.topic, entry.partition, -1);
    if (this.lease?.lapsed(topicPartitionKey(entry.topic, entry.partition))) {
      throw new KafkaError(
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        `${entry.topic}-${entry.partition}: cut off from ZooKeeper and its followers ` +
          "for a session timeout, this broker may no longer lead it",
      );
    }
    if (acks === -1) this.checkMinInsyncReplicas(entry.topic, partition);
    return partition;
  }

  private appendOne(acks: number, entry: AppendEntry): AppendedOne {
    let partition: Partition | null = null;
    try {
      partition = this.appendablePartition(acks, entry);
      const result = partition.log.appendAsLeader(entry.records, partition.leaderEpoch, {
        origin: entry.origin,
      });
      const key = topicPartitionKey(entry.topic, entry.partition);
      this.followerFetches.onAppend(key, entry.records.length);
      if (partition.maybeIncrementHighWatermark()) {
        this.onHighWatermarkAdvanced(key, entry.records.length);
      }
      const outcome = {
        errorCode: ErrorCode.NONE,
        errorMessage: null,
        baseOffset: result.baseOffset,
        logAppendTimeMs: BigInt(result.logAppendTimeMs),
        logStartOffset: result.logStartOffset,
      };
      return { outcome, requiredOffset: result.lastOffset < 0n ? null : result.lastOffset + 1n };
    } catch (e) {
      const error = this.storageFailure(partition, e) ?? asKafkaError(e, this.log);
      const outcome = {
        errorCode: error.code,
        errorMessage: error.message,
        baseOffset: -1n,
        logAppendTimeMs: -1n,
        logStartOffset: -1n,
      };
      return { outcome, requiredOffset: null };
    }
  }

  minInsyncReplicas(topic: string): number {
    const t = this.cache.topic(topic);
    return t?.configs["min.insync.replicas"] ?? this.cache.brokerConfig["min.insync.replicas"];
  }

  /** acks=-1 is refused before anything is written when the ISR is below min.insync.replicas. */
  private checkMinInsyncReplicas(topic: string, partition: Partition): void {
    const required = this.minInsyncReplicas(topic);
    const isrSize = partition.isr.length;
    if (isrSize < required) {
      throw new KafkaError(
        ErrorCode.NOT_ENOUGH_REPLICAS,
        `The size of the current ISR ${isrSize} is insufficient to satisfy the min.isr ` +
          `requirement of ${required}`,
      );
    }
  }

  /** The HW moved: consumers may now read more, and acks=-1 produces may be done. */
  private onHighWatermarkAdvanced(key: TopicPartitionKey, appendedBytes: number): void {
    this.purgatory.onAppend(key, appendedBytes);
    this.produces.checkAndComplete(key);
  }

  /**
   * Reads every partition within the byte budgets; if fewer than minBytes came back and the
   * client is willing to wait, parks until appends bring enough, the wait ends, or the client
   * goes away, then reads once more.
   */
  async fetchMessages(params: FetchParams): Promise<FetchOutcome[]> {
    const first = this.readAll(params);
    const sizeBytes = first.reduce((n, o) => n + rangesBytes(o.records), 0);
    const anyError = first.some((o) => o.errorCode !== ErrorCode.NONE);
    const noWait = params.maxWaitMs <= 0 || params.entries.length === 0;
    if (sizeBytes >= params.minBytes || noWait || anyError) {
      return first;
    }
    for (const o of first) releaseAll(o.records);
    const keys = params.entries.map((e) => topicPartitionKey(e.topic, e.partition));
    const purgatory = (params.replicaId ?? -1) >= 0 ? this.followerFetches : this.purgatory;
    const op = purgatory.park(keys, params.minBytes - sizeBytes, params.maxWaitMs);
    const unsubscribe = params.onCancel(() => op.complete("cancelled"));
    const outcome = await op.done;
    unsubscribe();
    if (outcome === "cancelled") return params.entries.map(() => EMPTY_OUTCOME);
    return this.readAll(params);
  }

  /**
   * Parks a share fetch (server/share-partition-manager.ts) until an append to one of the
   * partitions, the wait's end, or whoever holds the returned operation completes it.
   */
  parkShareFetch(keys: readonly TopicPartitionKey[], maxWaitMs: number): DelayedFetch {
    return this.purgatory.park(keys, 1, maxWaitMs);
  }

  /** The partition this broker leads, else NOT_LEADER_OR_FOLLOWER or UNKNOWN_TOPIC_OR_PARTITION. */
  leaderFor(topic: string, partition: number): Partition {
    return this.leaderPartition(topic, partition, -1);
  }

  private readAll(params: FetchParams): FetchOutcome[] {
    let budgetBytes = params.maxBytes;
    let haveData = false;
    const replicaId = params.replicaId ?? -1;
    const committed = replicaId < 0 && params.isolationLevel === IsolationLevel.READ_COMMITTED;
    return params.entries.map((entry) => {
      const maxBytes = Math.min(budgetBytes, entry.partitionMaxBytes);
      const outcome = this.readOne(entry, maxBytes, !haveData, replicaId, committed, params);
      const readBytes = rangesBytes(outcome.records);
      budgetBytes = Math.max(0, budgetBytes - readBytes);
      if (readBytes > 0) haveData = true;
      return outcome;
    });
  }

  /**
   * Consumers read below the HW (read_committed: below the LSO, with the aborted transactions
   * there); a follower reads to the log end and reports its LEO.
   */
  private readOne(
    entry: FetchEntry,
    maxBytes: number,
    minOneMessage: boolean,
    replicaId: number,
    committed: boolean,
    params: FetchParams,
  ): FetchOutcome {
    let partition: Partition;
    try {
      partition = this.readablePartition(entry, replicaId, params);
      if (replicaId >= 0) this.recordFollowerFetch(partition, replicaId, entry);
    } catch (e) {
      return { ...EMPTY_OUTCOME, errorCode: asKafkaError(e, this.log).code };
    }
    const log = partition.log;
    const lastStableOffset = log.lastStableOffset;
    const base = {
      highWatermark: log.highWatermark,
      lastStableOffset,
      logStartOffset: log.logStartOffset,
      abortedTransactions: null,
    };
    // A follower catching up on a throttled partition gets nothing while the rate is spent.
    const throttled =
      replicaId >= 0 &&
      !partition.isr.includes(replicaId) &&
      this.leaderQuota.isThrottled(entry.topic, entry.partition);
    if (throttled && this.leaderQuota.isExceeded(Date.now())) {
      return { ...base, errorCode: ErrorCode.NONE, records: [] };
    }
    const preferred = this.preferredReadReplica(partition, entry.fetchOffset, params);
    if (preferred !== null) {
      return { ...base, errorCode: ErrorCode.NONE, records: [], preferredReadReplica: preferred };
    }
    const toLogEnd = replicaId >= 0 || params.toLogEnd === true;
    const maxOffset = toLogEnd
      ? log.logEndOffset
      : committed
        ? lastStableOffset
        : log.highWatermark;
    try {
      const partialLastBatch = replicaId < 0;
      const read = log.read(entry.fetchOffset, maxBytes, {
        maxOffset,
        minOneMessage,
        partialLastBatch,
      });
      const abortedTransactions =
        !committed || read.sizeBytes === 0
          ? base.abortedTransactions
          : log.collectAbortedTransactions(
              entry.fetchOffset,
              maxOffset,
              ABORTED_TXNS_PER_FETCH_MAX,
            );
      if (throttled) this.leaderQuota.record(read.sizeBytes, Date.now());
      return { ...base, abortedTransactions, errorCode: ErrorCode.NONE, records: read.ranges };
    } catch (e) {
      const error = this.storageFailure(partition, e) ?? asKafkaError(e, this.log);
      return { ...base, errorCode: error.code, records: [] };
    }
  }

  /**
   * An I/O error on a partition's log fails its log dir (the partitions there go offline, the
   * controller is told) and is answered KAFKA_STORAGE_ERROR; null for any other error.
   */
  private storageFailure(partition: Partition | null, error: unknown): KafkaError | null {
    if (partition === null || !this.logs.maybeFailLogDirOf(partition.log, error)) return null;
    return new KafkaError(
      ErrorCode.KAFKA_STORAGE_ERROR,
      `${partition.topic}-${partition.partition}: its log dir failed`,
    );
  }

  /**
   * DescribeLogDirs (Kafka's ReplicaManager.describeLogDirs): every log dir with the partitions
   * it holds (only those `wanted` names, all when null), their bytes and the offset lag (the
   * high watermark's lead over the log end, 0 for a replica that has everything; for a future
   * log, isFutureKey, how far it is behind the current log's end), and the volume's total and
   * usable bytes (-1 when the file system does not say).
   */
  describeLogDirs(wanted: ((topic: string, partition: number) => boolean) | null) {
    const byDir = new Map(this.logs.logDirs.map((d) => [d, new Map<string, UnifiedLog[]>()]));
    const futures = new Set(this.logs.allFutureLogs());
    for (const log of [...this.logs.allLogs(), ...futures]) {
      if (wanted !== null && !wanted(log.topic, log.partition)) continue;
      const topics = byDir.get(this.logs.logDirOf(log) ?? "");
      if (topics === undefined) continue;
      const list = topics.get(log.topic) ?? [];
      list.push(log);
      topics.set(log.topic, list);
    }
    const lagOf = (log: UnifiedLog) => {
      const ahead = futures.has(log)
        ? (this.logs.getLog(log.topic, log.partition)?.logEndOffset ?? 0n)
        : log.highWatermark;
      return ahead > log.logEndOffset ? ahead - log.logEndOffset : 0n;
    };
    return [...byDir].map(([logDir, topics]) => ({
      // Kafka answers a failed dir with KAFKA_STORAGE_ERROR and nothing in it.
      errorCode: this.logs.isLogDirOffline(logDir) ? ErrorCode.KAFKA_STORAGE_ERROR : ErrorCode.NONE,
      logDir,
      ...(this.logs.isLogDirOffline(logDir)
        ? { totalBytes: -1n, usableBytes: -1n }
        : volumeBytes(logDir)),
      topics: [...topics].map(([name, logs]) => ({
        name,
        partitions: logs.map((log) => ({
          partitionIndex: log.partition,
          partitionSize: BigInt(log.sizeBytes),
          offsetLag: lagOf(log),
          isFutureKey: futures.has(log),
        })),
      })),
    }));
  }

  /**
   * The partition a fetch reads: the leader's, or (KIP-392) a follower's for a consumer whose
   * request carries a rack (v11+), as Kafka lets such consumers read from followers.
   */
  private readablePartition(entry: FetchEntry, replicaId: number, params: FetchParams) {
    const epoch = entry.currentLeaderEpoch ?? -1;
    const fromFollowerAllowed = replicaId < 0 && params.clientRack != null;
    if (!fromFollowerAllowed) return this.leaderPartition(entry.topic, entry.partition, epoch);
    const p = this.partitionOf(entry.topic, entry.partition);
    if (p.isLeader || (epoch >= 0 && epoch !== p.leaderEpoch)) {
      return this.leaderPartition(entry.topic, entry.partition, epoch);
    }
    return p;
  }

  /**
   * Kafka's RackAwareReplicaSelector, on the leader, for a consumer that names its rack: among
   * the replicas in that rack that are in sync and hold `fetchOffset`, the leader if it is one,
   * else the one with the highest LEO (then the most recently caught up). Null: read here.
   */
  private preferredReadReplica(p: Partition, fetchOffset: bigint, params: FetchParams) {
    const rack = params.clientRack;
    const config = this.cache.brokerConfig;
    if (!p.isLeader || rack == null || rack === "") return null;
    if (config["replica.selector.class"] !== RACK_AWARE_REPLICA_SELECTOR) return null;
    const rackOf = (id: number) => this.brokerEndpoint(id)?.rack ?? null;
    if (rackOf(this.localBrokerId) === rack) return null;
    const nowMs = Date.now();
    let best: { id: BrokerId; leo: bigint; sinceCaughtUpMs: number } | null = null;
    for (const id of p.isr) {
      const f = id === this.localBrokerId ? undefined : p.follower(id);
      if (f === undefined || rackOf(id) !== rack) continue;
      if (f.logEndOffset < fetchOffset || f.logStartOffset > fetchOffset) continue;
      const candidate = { id, leo: f.logEndOffset, sinceCaughtUpMs: nowMs - f.lastCaughtUpTimeMs };
      const better =
        best === null ||
        candidate.leo > best.leo ||
        (candidate.leo === best.leo && candidate.sinceCaughtUpMs < best.sinceCaughtUpMs);
      if (better) best = candidate;
    }
    return best?.id ?? null;
  }

  /**
   * A follower asks for the first offset it lacks, so its fetch offset is its LEO. One above the
   * leader's LEO means diverging logs; the read then answers OFFSET_OUT_OF_RANGE and nothing is
   * recorded.
   */
  private recordFollowerFetch(partition: Partition, replicaId: number, entry: FetchEntry): void {
    const fetchOffset = entry.fetchOffset;
    if (fetchOffset > partition.log.logEndOffset) return;
    const startOffset = entry.logStartOffset ?? -1n;
    if (!partition.updateFollowerFetchState(replicaId, fetchOffset, Date.now(), startOffset)) {
      throw new KafkaError(
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        `broker ${replicaId} is not a replica of ${partition.topic}-${partition.partition}`,
      );
    }
    const key = topicPartitionKey(partition.topic, partition.partition);
    if (partition.maybeIncrementHighWatermark()) {
      this.onHighWatermarkAdvanced(key, Number.MAX_SAFE_INTEGER);
    }
    this.deleteRecordsWaits.checkAndComplete(key);
    this.isrManager?.maybeExpand(partition);
  }

  /**
   * ListOffsets for a consumer: earliest, latest (the high watermark, or for read_committed the
   * last stable offset, since nothing above it may be read), max timestamp, or the first offset
   * at or after a timestamp (none when it is not readable yet at that isolation level).
   */
  listOffset(
    topic: string,
    partition: PartitionIndex,
    timestamp: bigint,
    isolationLevel = 0,
  ): OffsetLookup {
    try {
      const log = this.leaderPartition(topic, partition, -1).log;
      const epochs = log.leaderEpochCache;
      const readable =
        isolationLevel === IsolationLevel.READ_COMMITTED ? log.lastStableOffset : log.highWatermark;
      if (timestamp === LATEST_TIMESTAMP) {
        const leaderEpoch = epochs.latestEpoch;
        return { errorCode: ErrorCode.NONE, timestamp: -1n, offset: readable, leaderEpoch };
      }
      const found = log.offsetForTimestamp(timestamp);
      if (found === null || (timestamp >= 0n && found.offset >= readable)) {
        return { ...NOT_FOUND, errorCode: ErrorCode.NONE };
      }
      return {
        errorCode: ErrorCode.NONE,
        timestamp: found.timestamp,
        offset: found.offset,
        leaderEpoch: epochs.epochForOffset(found.offset),
      };
    } catch (e) {
      return { ...NOT_FOUND, errorCode: asKafkaError(e, this.log).code };
    }
  }

  /**
   * DeleteRecords (Kafka's ReplicaManager.deleteRecords): on each partition this broker leads,
   * moves the log start offset to the requested offset (the HW for -1), which deletes the
   * segments below it, and checkpoints it; then waits until every live replica has it too (the
   * low watermark reaches it; followers learn it from fetch responses) or `timeoutMs` passes
   * (REQUEST_TIMED_OUT). An offset above the HW, or below 0 other than -1, is
   * OFFSET_OUT_OF_RANGE; a topic whose cleanup.policy lacks `delete` is POLICY_VIOLATION.
   */
  async deleteRecords(
    timeoutMs: number,
    entries: readonly DeleteRecordsEntry[],
  ): Promise<DeleteRecordsOutcome[]> {
    const outcomes: DeleteRecordsOutcome[] = [];
    const waiting: { index: number; wait: ProduceWait }[] = [];
    const moved: UnifiedLog[] = [];
    entries.forEach((entry, index) => {
      try {
        const required = this.deleteRecordsOnLocalLog(entry, moved);
        const p = this.partitions.get(topicPartitionKey(entry.topic, entry.partition))!;
        outcomes.push({ errorCode: ErrorCode.NONE, lowWatermark: this.lowWatermarkOf(p) });
        waiting.push({ index, wait: this.deleteRecordsWait(entry, required) });
      } catch (e) {
        outcomes.push({ errorCode: asKafkaError(e, this.log).code, lowWatermark: -1n });
      }
    });
    // One checkpoint write per log dir for the whole request (Streams purges many partitions).
    if (moved.length > 0 && !this.checkpointLogStartOffsets(moved)) {
      return outcomes.map((o) =>
        o.errorCode === ErrorCode.NONE
          ? { errorCode: ErrorCode.KAFKA_STORAGE_ERROR, lowWatermark: -1n }
          : o,
      );
    }
    if (waiting.length === 0) return outcomes;
    const codes = await this.deleteRecordsWaits.park(
      waiting.map((w) => w.wait),
      timeoutMs,
    );
    waiting.forEach((w, i) => {
      const p = this.partitions.get(
        topicPartitionKey(entries[w.index]!.topic, entries[w.index]!.partition),
      );
      const lowWatermark =
        codes[i] === ErrorCode.NONE && p !== undefined && p.isLeader
          ? this.lowWatermarkOf(p)
          : outcomes[w.index]!.lowWatermark;
      outcomes[w.index] = { errorCode: codes[i]!, lowWatermark };
    });
    return outcomes;
  }

  /** False (and logged) when the disk refused: the client must not think the move durable. */
  private checkpointLogStartOffsets(moved: readonly UnifiedLog[]): boolean {
    try {
      this.logs.checkpointLogStartOffsetsOf(moved);
      return true;
    } catch (error) {
      this.log.error(`log-start-offset checkpoint after DeleteRecords: ${error}`);
      return false;
    }
  }

  /**
   * Moves the leader's log start offset (adding the log to `moved` if it did); returns the
   * offset the replicas must reach.
   */
  private deleteRecordsOnLocalLog(entry: DeleteRecordsEntry, moved: UnifiedLog[]): bigint {
    if (INTERNAL_TOPICS.has(entry.topic)) {
      throw new KafkaError(
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        `Cannot delete records of internal topic ${entry.topic}`,
      );
    }
    const p = this.leaderPartition(entry.topic, entry.partition, -1);
    const log = p.log;
    if (!log.config.cleanupPolicy.split(",").includes("delete")) {
      throw new KafkaError(
        ErrorCode.POLICY_VIOLATION,
        `Records of partition ` +
          `${p.topic}-${p.partition} can not be deleted due to the configured policy`,
      );
    }
    const offset = entry.offset === HIGH_WATERMARK ? log.highWatermark : entry.offset;
    if (offset < 0n || offset > log.highWatermark) {
      throw new KafkaError(
        ErrorCode.OFFSET_OUT_OF_RANGE,
        `Cannot increment the log start ` +
          `offset to ${offset} of ${p.topic}-${p.partition}: the high watermark is ` +
          `${log.highWatermark}`,
      );
    }
    if (log.maybeIncrementLogStartOffset(offset, "DeleteRecords")) moved.push(log);
    return offset;
  }

  private deleteRecordsWait(entry: DeleteRecordsEntry, requiredOffset: bigint): ProduceWait {
    const key = topicPartitionKey(entry.topic, entry.partition);
    return {
      partitionKey: key,
      check: () => {
        const p = this.partitions.get(key);
        if (p === undefined || !p.isLeader) {
          return { outcome: "done", errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER };
        }
        const reached = this.lowWatermarkOf(p) >= requiredOffset;
        return { outcome: reached ? "done" : "waiting", errorCode: ErrorCode.NONE };
      },
    };
  }

  private lowWatermarkOf(p: Partition): bigint {
    return p.lowWatermark((id) => this.cache.brokers.some((b) => b.nodeId === id));
  }

  /**
   * OffsetForLeaderEpoch: where `leaderEpoch` ends in this leader's log, with the largest epoch
   * at or below it that the log knows (UNDEFINED, -1, for an epoch above all it knows).
   */
  lastOffsetForLeaderEpoch(
    topic: string,
    partition: PartitionIndex,
    currentLeaderEpoch: LeaderEpoch,
    leaderEpoch: LeaderEpoch,
  ): EpochEndLookup {
    try {
      const log = this.leaderPartition(topic, partition, currentLeaderEpoch).log;
      const found = log.leaderEpochCache.endOffsetFor(leaderEpoch, log.logEndOffset);
      return { errorCode: ErrorCode.NONE, leaderEpoch: found.epoch, endOffset: found.endOffset };
    } catch (e) {
      return { errorCode: asKafkaError(e, this.log).code, leaderEpoch: -1, endOffset: -1n };
    }
  }

  /**
   * Whether this broker leads the partition and the producer has a transaction open in it at this
   * epoch (Kafka's UnifiedLog.hasOngoingTransaction): a transactional produce needs no adding.
   */
  hasOngoingTransaction(topic: string, partition: number, producerId: bigint, epoch: number) {
    const p = this.partitionIndex.get(topic, partition);
    if (p === undefined || !p.isLeader) return false;
    const entry = p.log.producerState.entry(producerId);
    return (
      entry !== undefined && entry.currentTxnFirstOffset >= 0n && entry.producerEpoch === epoch
    );
  }

  /** The producer state of a partition this broker leads. */
  activeProducers(topic: string, partition: number): ActiveProducers {
    try {
      const log = this.partitionOf(topic, partition).log;
      const producers = [...log.producerState.activeProducers()];
      return { errorCode: ErrorCode.NONE, errorMessage: null, producers };
    } catch (e) {
      const error = asKafkaError(e, this.log);
      return { errorCode: error.code, errorMessage: error.message, producers: [] };
    }
  }

  /**
   * Before becomeLeaderOrFollower: makes the logs of the new partitions (isNew) this broker is
   * a replica of and has no log for yet on the thread pool, as CreateTopics does
   * (LogManager.createLogs), so a LeaderAndIsr with thousands of new partitions does not hold
   * the event loop for one file-system operation after another. A failure here is left to the
   * synchronous path, which answers it per partition.
   */
  async createNewLogs(states: readonly PartitionLeadership[]): Promise<void> {
    const byTopic = new Map<string, number[]>();
    for (const s of states) {
      if (!s.isNew || !s.replicas.includes(this.localBrokerId)) continue;
      if (this.logs.getLog(s.topic, s.partition) !== undefined) continue;
      const partitions = byTopic.get(s.topic) ?? [];
      partitions.push(s.partition);
      byTopic.set(s.topic, partitions);
    }
    for (const [topic, partitions] of byTopic) {
      const configs = this.cache.topic(topic)?.configs ?? {};
      try {
        await this.logs.createLogs(
          topic,
          partitions,
          logConfigFor(configs, this.cache.brokerConfig),
        );
      } catch (e) {
        if (!(e instanceof KafkaError)) throw e;
      }
      // The topic's configs may have reached the cache from ZooKeeper while the logs were being
      // made; that change found no log to update then, so the new logs take them now.
      const latest = this.cache.topic(topic)?.configs;
      if (latest === undefined || latest === configs) continue;
      const logConfig = logConfigFor(latest, this.cache.brokerConfig);
      for (const partition of partitions)
        this.logs.getLog(topic, partition)?.updateConfig(logConfig);
    }
  }

  /**
   * LeaderAndIsr (called by its handler after the metadata cache took the states): becomes
   * leader or follower of each partition, creating its log if needed. Per partition: NONE, or
   * FENCED_LEADER_EPOCH for a state older than the one held, or UNKNOWN_TOPIC_OR_PARTITION when
   * this broker is not among the replicas; every partition gets STALE_CONTROLLER_EPOCH when the
   * request comes from an older controller than one already heard from.
   */
  becomeLeaderOrFollower(
    controllerEpoch: number,
    states: readonly PartitionLeadership[],
  ): Map<TopicPartitionKey, number> {
    const result = new Map<TopicPartitionKey, number>();
    if (controllerEpoch < this.controllerEpoch) {
      const stale = ErrorCode.STALE_CONTROLLER_EPOCH;
      for (const s of states) result.set(topicPartitionKey(s.topic, s.partition), stale);
      return result;
    }
    this.controllerEpoch = controllerEpoch;
    const nowMs = Date.now();
    for (const state of states) {
      const key = topicPartitionKey(state.topic, state.partition);
      try {
        result.set(key, this.applyLeadership(state, nowMs));
      } catch (e) {
        // A partition of a failed log dir (or one that cannot be created while a dir is offline)
        // is KAFKA_STORAGE_ERROR: the controller then elects a leader elsewhere.
        const error = asKafkaError(e, this.log);
        if (error.code !== ErrorCode.KAFKA_STORAGE_ERROR) throw e;
        this.log.warn(`cannot host ${state.topic}-${state.partition}: ${error.message}`);
        result.set(key, error.code);
      }
    }
    return result;
  }

  private applyLeadership(state: PartitionLeadership, nowMs: number): number {
    if (!state.replicas.includes(this.localBrokerId)) return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
    const key = topicPartitionKey(state.topic, state.partition);
    const configs = this.cache.topic(state.topic)?.configs ?? {};
    const logConfig = logConfigFor(configs, this.cache.brokerConfig);
    const log = this.logs.getOrCreateLog(state.topic, state.partition, logConfig, state.isNew);
    let p = this.partitions.get(key);
    if (p !== undefined && p.log === log && p.isControllerStated && !p.isNewerThanCurrent(state)) {
      const same = state.leaderEpoch === p.leaderEpoch && state.partitionEpoch === p.partitionEpoch;
      return same ? ErrorCode.NONE : ErrorCode.FENCED_LEADER_EPOCH;
    }
    if (p === undefined || p.log !== log || !p.isControllerStated) {
      p = Partition.fromLeadership(log, this.localBrokerId, state);
      this.partitions.set(key, p);
      this.partitionIndex.set(state.topic, state.partition, p);
    }
    if (state.leader === this.localBrokerId) {
      this.fetchers.removePartition(state.topic, state.partition);
      p.makeLeader(state, nowMs);
      // The new epoch starts at this LEO even before anything is appended in it, so a follower
      // asking where its older epoch ends is told this leader's end of it.
      log.leaderEpochCache.assign(state.leaderEpoch, log.logEndOffset);
    } else {
      const sameSource =
        !p.isLeader && p.leaderId === state.leader && p.leaderEpoch === state.leaderEpoch;
      p.makeFollower(state);
      if (!sameSource) this.fetchers.addPartition(p);
    }
    this.afterLeaderStateChange(p);
    this.notifyLeadership(state.topic, state.partition, p.isLeader);
    return ErrorCode.NONE;
  }

  /**
   * A FULL LeaderAndIsr (the controller's state for a broker that (re)joins) names every replica
   * assigned here. Any other log is a stray: moved away or deleted while this broker was down or
   * cut off, so the StopReplica never reached it and no controller will send one. It is stopped
   * and deleted, as Kafka's KRaft brokers do with the stray replicas they find at start-up.
   */
  async deleteStrayReplicas(named: readonly PartitionLeadership[]): Promise<void> {
    if (!this.clusterMode) return;
    const keys = new Set(named.map((s) => topicPartitionKey(s.topic, s.partition)));
    const strays = this.logs
      .allLogs()
      .filter((l) => !keys.has(topicPartitionKey(l.topic, l.partition)))
      .map((l) => ({ topic: l.topic, partition: l.partition }));
    for (const s of strays) {
      this.log.warn(
        `deleting stray replica ${s.topic}-${s.partition}: the controller's full state does ` +
          `not assign it to broker ${this.localBrokerId}`,
      );
    }
    await this.stopReplicas(strays, true);
  }

  /**
   * Registers a listener told when this broker becomes or stops being a partition's leader (the
   * transaction coordinator loads and unloads its __transaction_state partitions so).
   */
  onLeadershipChange(listener: LeadershipListener): () => void {
    assert(this.leadershipListeners.size < LEADERSHIP_LISTENERS_MAX, "too many listeners");
    this.leadershipListeners.add(listener);
    return () => this.leadershipListeners.delete(listener);
  }

  private notifyLeadership(topic: string, partition: number, isLeader: boolean): void {
    for (const listener of this.leadershipListeners) {
      try {
        listener(topic, partition, isLeader);
      } catch (error) {
        this.log.error(`leadership listener failed: ${String(error)}`);
      }
    }
  }

  /** Waiters on a partition whose role or ISR changed get their answer (or keep waiting). */
  private afterLeaderStateChange(p: Partition): void {
    const key = topicPartitionKey(p.topic, p.partition);
    p.maybeIncrementHighWatermark();
    this.produces.checkAndComplete(key);
    this.deleteRecordsWaits.checkAndComplete(key);
    if (!p.isLeader) {
      this.purgatory.wakeWhere((k) => k === key);
      this.followerFetches.wakeWhere((k) => k === key);
    } else {
      this.purgatory.onAppend(key, Number.MAX_SAFE_INTEGER);
    }
  }

  /**
   * StopReplica: stops fetching and forgets the role of each partition; with deletion its log
   * goes too. Waiters on them are answered at once (NOT_LEADER_OR_FOLLOWER or an empty read).
   */
  async stopReplicas(
    partitions: readonly { topic: string; partition: number }[],
    deletePartitions: boolean,
  ): Promise<void> {
    for (const { topic, partition } of partitions) this.forgetPartition(topic, partition);
    if (!deletePartitions) return;
    await Promise.all(partitions.map((tp) => this.logs.deleteLog(tp.topic, tp.partition)));
  }

  /** No role here any more: fetching stops and waiters on it are answered at once. */
  private forgetPartition(topic: string, partition: number): void {
    const key = topicPartitionKey(topic, partition);
    this.fetchers.removePartition(topic, partition);
    this.partitions.delete(key);
    this.partitionIndex.delete(topic, partition);
    this.produces.checkAndComplete(key);
    this.deleteRecordsWaits.checkAndComplete(key);
    this.purgatory.wakeWhere((k) => k === key);
    this.followerFetches.wakeWhere((k) => k === key);
    this.notifyLeadership(topic, partition, false);
  }

  /** Partition logs on this broker's disks (a clean stop's bound grows with them). */
  get hostedLogCount(): number {
    return this.logs.totalLogs;
  }

  /** The replica state of a partition (for the API layer, tests and tools). */
  /**
   * Every partition this broker holds a replica of, for metrics and the console. The embedded
   * broker makes a partition's state on its first request; this makes the missing ones, as
   * that request would, so a topic nobody has used yet is listed too.
   */
  hostedPartitions(): Partition[] {
    if (!this.clusterMode) {
      for (const log of this.logs.allLogs()) {
        if (this.cache.topic(log.topic) !== undefined) this.partitionOf(log.topic, log.partition);
      }
    }
    return [...this.partitions.values()];
  }

  /** Committed ISR shrinks and expands of partitions led here since start. */
  isrChangeCounts(): { shrinks: number; expands: number } {
    return {
      shrinks: this.isrManager?.shrinkCount ?? 0,
      expands: this.isrManager?.expandCount ?? 0,
    };
  }

  partitionState(topic: string, partition: PartitionIndex): Partition | undefined {
    return this.partitionIndex.get(topic, partition);
  }

  private fetcherHost(): ReplicaFetcherHost {
    return {
      appendAsFollower: (p, records, leader) => {
        assert(!p.isLeader, `${p.topic}-${p.partition}: follower append on the leader`);
        try {
          if (records.length > 0) p.log.appendAsFollower(records);
        } catch (e) {
          throw this.storageFailure(p, e) ?? e;
        }
        p.updateFollowerHighWatermark(leader.highWatermark);
        // The leader's start (DeleteRecords, retention), as far as this replica holds records.
        const hw = p.log.highWatermark;
        const start = leader.logStartOffset < hw ? leader.logStartOffset : hw;
        p.log.maybeIncrementLogStartOffset(start, "leader's log start offset");
      },
      truncateBeforeFetching: (p, client) => {
        const leaderEpochWhenAsked = p.leaderEpoch;
        return truncateToLeader(p, client, {
          localBrokerId: this.localBrokerId,
          requestTimeoutMs: this.cache.brokerConfig["replica.socket.timeout.ms"],
          stillFollowing: () =>
            !p.isLeader &&
            p.leaderEpoch === leaderEpochWhenAsked &&
            this.partitions.get(topicPartitionKey(p.topic, p.partition)) === p,
        });
      },
      startOverAt: (p, offset) => {
        assert(!p.isLeader, `${p.topic}-${p.partition}: a leader never empties its log`);
        p.log.truncateFullyAndStartAt(offset);
      },
      endpoint: (id) => this.brokerEndpoint(id),
      followerQuota: this.followerQuota,
      log: this.log.child("ReplicaFetcher"),
    };
  }

  private newLogDirMoves(): ReplicaAlterLogDirsManager {
    const config = this.cache.brokerConfig;
    const moves = new ReplicaAlterLogDirsManager({
      logs: this.logs,
      sliceBytes: config["replica.fetch.max.bytes"],
      // Every move counts: Kafka's AlterLogDirs quota has no replica list.
      quota: new ReplicationQuota(
        this.localBrokerId,
        () => Number(this.cache.brokerConfig["replica.alter.log.dirs.io.max.bytes.per.second"]),
        () => undefined,
      ),
      onLogReplaced: (topic, partition, log) => {
        this.partitions.get(topicPartitionKey(topic, partition))?.replaceLog(log);
      },
      logger: this.log.child("ReplicaAlterLogDirs"),
    });
    // Moves a stop or crash interrupted go on from the future logs found at start.
    for (const future of this.logs.allFutureLogs()) moves.start(future.topic, future.partition);
    return moves;
  }

  /**
   * AlterReplicaLogDirs for one partition (Kafka's ReplicaManager.alterReplicaLogDirs): moves
   * its log to `logDir`, or remembers the dir for a replica not here yet (answered
   * REPLICA_NOT_AVAILABLE, as Kafka answers, and the tool asks again). A move in progress to
   * another dir is cancelled first; asking for the current dir cancels it alone.
   */
  alterReplicaLogDir(topic: string, partition: number, logDir: string): number {
    try {
      return this.alterReplicaLogDirOrThrow(topic, partition, logDir);
    } catch (e) {
      return asKafkaError(e, this.log).code;
    }
  }

  private alterReplicaLogDirOrThrow(topic: string, partition: number, logDir: string): number {
    // Kafka's limit: the future log's directory name must fit in 255 bytes.
    const futureDirName = `${topic}-${partition}.${"0".repeat(32)}-future`;
    if (Buffer.byteLength(futureDirName) > 255) return ErrorCode.INVALID_TOPIC_EXCEPTION;
    if (!this.logs.isLogDir(logDir)) return ErrorCode.LOG_DIR_NOT_FOUND;
    if (this.logs.isLogDirOffline(logDir)) return ErrorCode.KAFKA_STORAGE_ERROR;
    if (this.logs.isOfflinePartition(topic, partition)) return ErrorCode.KAFKA_STORAGE_ERROR;
    const future = this.logs.getFutureLog(topic, partition);
    if (future !== undefined && this.logs.logDirOf(future) !== logDir) {
      this.logDirMoves.stop(topic, partition);
      this.logs.removeFutureLog(topic, partition);
    }
    const log = this.logs.getLog(topic, partition);
    if (log === undefined) {
      const known = this.cache.topic(topic);
      if (known === undefined || partition < 0 || partition >= known.partitions.length) {
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
      }
      this.logs.setPreferredLogDir(topic, partition, logDir);
      return ErrorCode.REPLICA_NOT_AVAILABLE;
    }
    if (this.logs.logDirOf(log) === logDir) return ErrorCode.NONE;
    if (this.logs.getFutureLog(topic, partition) === undefined) {
      this.logs.createFutureLog(topic, partition, logDir);
    }
    this.logDirMoves.start(topic, partition);
    return ErrorCode.NONE;
  }

  /** Answers every parked fetch and produce and stops fetching (shutdown). */
  completeDelayedFetches(): void {
    this.purgatory.completeAll();
    this.followerFetches.completeAll();
    this.produces.expireAll();
    this.deleteRecordsWaits.expireAll();
    this.isrManager?.stop();
    this.lease?.stop();
    void this.fetchers.shutdown();
    void this.logDirMoves.shutdown();
  }

  /** Like completeDelayedFetches, and resolves once every replica fetcher and move stopped. */
  async shutdown(): Promise<void> {
    this.completeDelayedFetches();
    await Promise.all([this.fetchers.shutdown(), this.logDirMoves.shutdown()]);
  }

  /**
   * The partition's replica state. In a cluster only the controller's LeaderAndIsr makes one
   * (with its log), whether or not this broker's metadata store has read the topic yet; until
   * then (or after StopReplica) a partition the metadata knows is NOT_LEADER_OR_FOLLOWER and
   * clients retry, as Kafka's getPartitionOrException answers. In the embedded default a
   * partition the controller never described is led here alone.
   */
  private partitionOf(topic: string, partition: number): Partition {
    const log = this.logs.getLog(topic, partition);
    const existing = this.partitionIndex.get(topic, partition);
    if (log === undefined && this.logs.isOfflinePartition(topic, partition)) {
      throw new KafkaError(
        ErrorCode.KAFKA_STORAGE_ERROR,
        `${topic}-${partition} is in an offline log dir of broker ${this.localBrokerId}`,
      );
    }
    if (this.clusterMode) {
      if (log !== undefined && existing?.log === log) return existing;
      if (!this.isHosted(topicPartitionKey(topic, partition))) {
        throw unknownPartition(topic, partition);
      }
      throw new KafkaError(
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        `broker ${this.localBrokerId} has no role for ${topic}-${partition} from the controller`,
      );
    }
    const topicId = this.cache.topic(topic)?.topicId;
    if (log === undefined || topicId === undefined) throw unknownPartition(topic, partition);
    if (existing?.log === log) return existing;
    const p = Partition.soleReplica(log, this.localBrokerId, topicId);
    this.partitions.set(topicPartitionKey(topic, partition), p);
    this.partitionIndex.set(topic, partition, p);
    return p;
  }

  /**
   * The partition, if this broker leads it in the epoch the client expects: an older epoch is
   * FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH (this broker has not heard yet).
   */
  private leaderPartition(topic: string, partition: number, currentLeaderEpoch: number): Partition {
    const p = this.partitionOf(topic, partition);
    if (currentLeaderEpoch >= 0 && currentLeaderEpoch !== p.leaderEpoch) {
      const code =
        currentLeaderEpoch < p.leaderEpoch
          ? ErrorCode.FENCED_LEADER_EPOCH
          : ErrorCode.UNKNOWN_LEADER_EPOCH;
      throw new KafkaError(
        code,
        `${topic}-${partition}: leader epoch ${currentLeaderEpoch} ` +
          `in the request, ${p.leaderEpoch} here`,
      );
    }
    if (!p.isLeader) {
      throw new KafkaError(
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        `broker ${this.localBrokerId} does not lead ${topic}-${partition} (leader ${p.leaderId})`,
      );
    }
    return p;
  }
}

/** A side's throttle, reading the (dynamic) broker rate and the topics' replica lists. */
function replicationQuota(cache: MetadataCache, side: "leader" | "follower"): ReplicationQuota {
  return new ReplicationQuota(
    cache.brokerConfig["broker.id"],
    () => Number(cache.brokerConfig[`${side}.replication.throttled.rate`]),
    (topic) => cache.topic(topic)?.configs,
    side,
  );
}

function unknownPartition(topic: string, partition: number): KafkaError {
  return new KafkaError(
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    `This server does not host this topic-partition: ${topic}-${partition}`,
  );
}

/** Kafka's UNKNOWN_VOLUME_BYTES (-1) when statfs fails. */
function volumeBytes(dir: string): { totalBytes: bigint; usableBytes: bigint } {
  try {
    const st = statfsSync(dir, { bigint: true });
    return { totalBytes: st.blocks * st.bsize, usableBytes: st.bavail * st.bsize };
  } catch {
    return { totalBytes: -1n, usableBytes: -1n };
  }
}

/** DeleteRecords' offset meaning "up to the high watermark" (Kafka's HIGH_WATERMARK). */
const HIGH_WATERMARK = -1n;
/** Kafka's internal topics, whose records DeleteRecords refuses to delete. */
const INTERNAL_TOPICS = new Set(["__consumer_offsets", "__transaction_state"]);

const NOT_FOUND: OffsetLookup = Object.freeze({
  errorCode: ErrorCode.NONE,
  timestamp: -1n,
  offset: -1n,
  leaderEpoch: -1,
});

const EMPTY_OUTCOME: FetchOutcome = Object.freeze({
  errorCode: ErrorCode.NONE,
  highWatermark: -1n,
  lastStableOffset: -1n,
  logStartOffset: -1n,
  abortedTransactions: null,
  records: [],
});

function rangesBytes(ranges: readonly FileRange[]): number {
  let n = 0;
  for (const r of ranges) n += r.sizeBytes;
  return n;
}

function releaseAll(ranges: readonly FileRange[]): void {
  for (const r of ranges) r.release();
}

/** Operating errors keep their code; anything else is a bug, reported as UNKNOWN_SERVER_ERROR. */
function asKafkaError(e: unknown, log: Logger): KafkaError {
  if (e instanceof KafkaError) return e;
  if (e instanceof AssertionError || !(e instanceof Error)) throw e;
  log.error(`unexpected error: ${e.stack ?? e.message}`);
  return new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, e.message);
}
