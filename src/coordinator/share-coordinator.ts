/**
 * The share coordinator (KIP-932, Kafka's ShareCoordinatorService): keeps the delivery state of
 * share partitions for their leaders in the internal compacted topic `__share_group_state`
 * (share-state-log.ts). The leader of a share partition reads the state with
 * ReadShareGroupState when it starts serving the partition and writes it with
 * WriteShareGroupState; the coordinator of a key is the leader of the key's
 * `__share_group_state` partition, which holds every key of that partition in memory, loaded
 * from the log when it became the leader (as the transaction coordinator does).
 *
 * Fencing: a write or read carries the share partition's leader epoch; one below the highest
 * seen is FENCED_LEADER_EPOCH, so a deposed leader cannot overwrite its successor's state. The
 * state epoch moves with InitializeShareGroupState (an offset reset) and DeleteShareGroupState;
 * a write of an older state epoch is FENCED_STATE_EPOCH.
 *
 * A write replaces the state: Quill's leaders send their whole in-flight window (bounded by
 * `group.share.partition.max.record.locks`, run-length encoded) each time, where Kafka's send
 * the changed batches and the coordinator merges them into its snapshot.
 */
import type { BrokerConfig } from "../config/broker-config.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import type { AdminManager } from "../server/admin-manager.ts";
import type { MetadataCache } from "../server/metadata-cache.ts";
import type { ReplicaManager } from "../server/replica-manager.ts";
import type { Logger } from "../util/logger.ts";
import { appendInternal, InternalTopic, readInternalPartition } from "./internal-topics.ts";
import {
  coordinatorKey,
  decodeShareStateKey,
  decodeShareStateValue,
  encodeShareStateKey,
  encodeShareStateValue,
  SHARE_STATE_TOPIC,
  type ShareStateKey,
  type ShareStateValue,
  type StateBatch,
  shareStatePartitionFor,
} from "./share-state-log.ts";

/** Share partitions one coordinator keeps; a new one beyond it is refused. */
export const SHARE_STATES_MAX = 1_000_000;

export interface ShareStateWrite {
  readonly stateEpoch: number;
  readonly leaderEpoch: number;
  /** -1: keep the stored start offset. */
  readonly startOffset: bigint;
  readonly stateBatches: readonly StateBatch[];
}

/** What ReadShareGroupState answers: no state yet is start offset -1 and no batches. */
export interface ShareStateRead {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly state: ShareStateValue | null;
}

export class ShareCoordinator {
  private readonly states = new Map<string, { key: ShareStateKey; value: ShareStateValue }>();
  /** Highest leader epoch a read announced, per key, before the new leader's first write. */
  private readonly readEpochs = new Map<string, { partition: number; leaderEpoch: number }>();
  private readonly loaded = new Set<number>();
  private readonly topic: InternalTopic;
  private readonly loading = new Set<number>();

  constructor(
    private readonly config: BrokerConfig,
    private readonly replicaManager: ReplicaManager,
    adminManager: AdminManager,
    private readonly cache: MetadataCache,
    private readonly logger: Logger,
  ) {
    this.topic = new InternalTopic(adminManager, cache, {
      name: SHARE_STATE_TOPIC,
      numPartitions: config["share.coordinator.state.topic.num.partitions"],
      replicationFactor: config["share.coordinator.state.topic.replication.factor"],
      replicationFactorKey: "share.coordinator.state.topic.replication.factor",
      minIsr: config["share.coordinator.state.topic.min.isr"],
      segmentBytes: config["share.coordinator.state.topic.segment.bytes"],
    });
  }

  get partitionCount(): number {
    return this.topic.partitionCount;
  }

  partitionFor(key: ShareStateKey): number {
    return shareStatePartitionFor(key, this.partitionCount);
  }

  /** Creates __share_group_state on first use (a leader's first read, or FindCoordinator). */
  async ensureTopic(): Promise<void> {
    const created = await this.topic.ensure();
    // A new topic is empty: in embedded mode every partition is this broker's, loaded as it is.
    if (created && this.config["zookeeper.connect"] === null) {
      for (let p = 0; p < this.partitionCount; p++) this.loaded.add(p);
    }
  }

  /** Null when this broker may answer for the key now, else the error to return. */
  readiness(key: ShareStateKey): number | null {
    if (this.cache.topic(SHARE_STATE_TOPIC) === undefined) {
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    }
    const partition = this.partitionFor(key);
    try {
      this.replicaManager.leaderFor(SHARE_STATE_TOPIC, partition);
    } catch (e) {
      if (e instanceof KafkaError) return ErrorCode.NOT_COORDINATOR;
      throw e;
    }
    if (!this.loaded.has(partition)) {
      // Embedded mode has no leadership changes to load on: the first use loads.
      if (this.config["zookeeper.connect"] === null && !this.loading.has(partition)) {
        this.loading.add(partition);
        void this.loadPartition(partition)
          .catch((e: unknown) => this.logger.error(`loading ${SHARE_STATE_TOPIC}: ${String(e)}`))
          .finally(() => this.loading.delete(partition));
      }
      return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS;
    }
    return null;
  }

  read(key: ShareStateKey, leaderEpoch: number): ShareStateRead {
    const notReady = this.readiness(key);
    if (notReady !== null) return { errorCode: notReady, errorMessage: null, state: null };
    const k = coordinatorKey(key);
    const stored = this.states.get(k)?.value;
    const highest = this.highestLeaderEpoch(k, stored);
    if (leaderEpoch >= 0 && leaderEpoch < highest) {
      return fenced(ErrorCode.FENCED_LEADER_EPOCH, `leader epoch ${leaderEpoch} < ${highest}`);
    }
    if (leaderEpoch > highest && this.readEpochs.size < SHARE_STATES_MAX) {
      this.readEpochs.set(k, { partition: this.partitionFor(key), leaderEpoch });
    }
    return { errorCode: ErrorCode.NONE, errorMessage: null, state: stored ?? null };
  }

  /** WriteShareGroupState: the new state, in the log (acks=all) before it is answered. */
  async write(key: ShareStateKey, w: ShareStateWrite): Promise<ShareStateRead> {
    const notReady = this.readiness(key);
    if (notReady !== null) return { errorCode: notReady, errorMessage: null, state: null };
    const k = coordinatorKey(key);
    const stored = this.states.get(k)?.value;
    const highest = this.highestLeaderEpoch(k, stored);
    if (w.leaderEpoch < highest) {
      return fenced(ErrorCode.FENCED_LEADER_EPOCH, `leader epoch ${w.leaderEpoch} < ${highest}`);
    }
    if (stored !== undefined && w.stateEpoch < stored.stateEpoch) {
      return fenced(ErrorCode.FENCED_STATE_EPOCH, `state epoch ${w.stateEpoch} is old`);
    }
    return this.store(key, {
      stateEpoch: w.stateEpoch,
      leaderEpoch: w.leaderEpoch,
      startOffset: w.startOffset < 0n ? (stored?.startOffset ?? -1n) : w.startOffset,
      writeTimestampMs: Date.now(),
      stateBatches: w.stateBatches,
    });
  }

  /** InitializeShareGroupState: a fresh state at `startOffset` (an offset reset). */
  async initialize(key: ShareStateKey, stateEpoch: number, startOffset: bigint) {
    const notReady = this.readiness(key);
    if (notReady !== null) return { errorCode: notReady, errorMessage: null, state: null };
    const stored = this.states.get(coordinatorKey(key))?.value;
    if (stored !== undefined && stateEpoch <= stored.stateEpoch) {
      return fenced(ErrorCode.FENCED_STATE_EPOCH, `state epoch ${stateEpoch} is not newer`);
    }
    return this.store(key, {
      stateEpoch,
      leaderEpoch: stored?.leaderEpoch ?? -1,
      startOffset,
      writeTimestampMs: Date.now(),
      stateBatches: [],
    });
  }

  /**
   * DeleteShareGroupState (DeleteShareGroupOffsets): the state goes, but not the key's epochs.
   * What is stored is a state without a start offset (read as none, so the next leader starts at
   * `share.auto.offset.reset`) one state epoch up, so a leader still holding the deleted state is
   * fenced on its next write (FENCED_STATE_EPOCH) instead of bringing it back. A tombstone would
   * forget the epoch, here and in a coordinator that loads the partition later. Kafka writes a
   * tombstone and refuses writes to a key without state (only its group coordinator creates
   * one); Quill's leaders create the state of a new share partition themselves.
   */
  async delete(key: ShareStateKey): Promise<ShareStateRead> {
    const notReady = this.readiness(key);
    if (notReady !== null) return { errorCode: notReady, errorMessage: null, state: null };
    const stored = this.states.get(coordinatorKey(key))?.value;
    if (stored === undefined || stored.startOffset < 0n) {
      return { errorCode: ErrorCode.NONE, errorMessage: null, state: null };
    }
    return this.store(key, {
      stateEpoch: stored.stateEpoch + 1,
      leaderEpoch: stored.leaderEpoch,
      startOffset: -1n,
      writeTimestampMs: Date.now(),
      stateBatches: [],
    });
  }

  private highestLeaderEpoch(k: string, stored: ShareStateValue | undefined): number {
    return Math.max(stored?.leaderEpoch ?? -1, this.readEpochs.get(k)?.leaderEpoch ?? -1);
  }

  private async store(key: ShareStateKey, value: ShareStateValue): Promise<ShareStateRead> {
    const k = coordinatorKey(key);
    if (!this.states.has(k) && this.states.size >= SHARE_STATES_MAX) {
      const message = `this coordinator holds ${SHARE_STATES_MAX} share partitions, its limit`;
      return fenced(ErrorCode.COORDINATOR_NOT_AVAILABLE, message);
    }
    try {
      await appendInternal(
        this.replicaManager,
        this.config["share.coordinator.write.timeout.ms"],
        { topic: SHARE_STATE_TOPIC, partition: this.partitionFor(key) },
        encodeShareStateKey(key),
        encodeShareStateValue(value),
        k,
      );
    } catch (error) {
      if (!(error instanceof KafkaError)) throw error;
      return fenced(error.code, error.message);
    }
    this.states.set(k, { key, value });
    return { errorCode: ErrorCode.NONE, errorMessage: null, state: value };
  }

  /** Reads a state partition this broker now leads; its keys are answered once it is done. */
  async loadPartition(partition: number): Promise<void> {
    this.unloadPartition(partition);
    const latest = new Map<string, { key: ShareStateKey; value: ShareStateValue } | null>();
    let unreadable = 0;
    await readInternalPartition(this.replicaManager, SHARE_STATE_TOPIC, partition, (k, v) => {
      try {
        const key = k === null ? null : decodeShareStateKey(k);
        if (key === null) return;
        const value = v === null ? null : decodeShareStateValue(v);
        latest.set(coordinatorKey(key), value === null ? null : { key, value });
      } catch {
        unreadable++; // one bad record must not keep every other key of the partition away
      }
    });
    if (unreadable > 0) {
      this.logger.warn(`${unreadable} unreadable records in ${SHARE_STATE_TOPIC}-${partition}`);
    }
    let count = 0;
    for (const [k, entry] of latest) {
      if (entry === null || this.states.size >= SHARE_STATES_MAX) continue;
      this.states.set(k, entry);
      count++;
    }
    this.loaded.add(partition);
    this.logger.info(`loaded ${count} share partitions from ${SHARE_STATE_TOPIC}-${partition}`);
  }

  /** This broker no longer leads the partition: its keys are someone else's now. */
  unloadPartition(partition: number): void {
    this.loaded.delete(partition);
    for (const [k, { key }] of this.states) {
      if (this.partitionFor(key) === partition) this.states.delete(k);
    }
    for (const [k, e] of this.readEpochs) if (e.partition === partition) this.readEpochs.delete(k);
  }
}

function fenced(errorCode: number, errorMessage: string): ShareStateRead {
  return { errorCode, errorMessage, state: null };
}
