/**
 * The partition leader's side of the share coordinator (Kafka's DefaultStatePersister), the
 * ShareStateStore of a cluster: a share partition's state is read from its share coordinator
 * (ReadShareGroupState) when this broker starts serving it, and written there
 * (WriteShareGroupState) as it changes. The coordinator is the leader of the key's
 * `__share_group_state` partition: this broker's own ShareCoordinator when it leads that
 * partition, else another broker over the inter-broker connections.
 *
 * Writes are batched per share partition: at most one write is in flight, and every change made
 * while it is (acquisitions, acknowledgements of other members' requests) goes in the next one,
 * which snapshots the state when it starts. A write starts on the microtask after the change,
 * so all changes of one request are one write. Callers that must know their change is durable
 * (acknowledgements) wait for the promise `save` returns; acquisitions do not wait.
 *
 * A coordinator that moves, loads or is briefly unreachable (NOT_COORDINATOR,
 * COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, a closed connection) is retried every
 * RETRY_BACKOFF_MS for up to `retryTimeoutMs`; then the caller gets the error.
 */

import type { InterBrokerClient } from "../network/inter-broker-client.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import type { MetadataCache } from "../server/metadata-cache.ts";
import { RecordState, type SharePartitionSnapshot } from "../server/share-partition.ts";
import type {
  ShareStateEpochs,
  ShareStateStore,
  ShareStateSummary,
  StoredShareState,
} from "../server/share-partition-manager.ts";
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP } from "../storage/unified-log.ts";
import type { Logger } from "../util/logger.ts";
import type { ShareCoordinator, ShareStateRead } from "./share-coordinator.ts";
import {
  deliveryCompleteCount,
  SHARE_STATE_TOPIC,
  type ShareStateKey,
  type StateBatch,
  shareStatePartitionFor,
} from "./share-state-log.ts";

const RETRY_BACKOFF_MS = 100;
/** ListOffsets v7 (flexible), which every Quill and Kafka 2.8+ broker answers. */
const LIST_OFFSETS_VERSION = 7;
const RETRIABLE: ReadonlySet<number> = new Set([
  ErrorCode.NOT_COORDINATOR,
  ErrorCode.COORDINATOR_NOT_AVAILABLE,
  ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
]);
/** Offsets a stored state may span past its start; more is a corrupt or foreign state. */
const STATE_SPAN_MAX = 10_000;

/** The inter-broker connections this broker keeps to the others (the marker channel's). */
export interface BrokerConnections {
  clientFor(brokerId: number): Promise<InterBrokerClient>;
  dropClient(brokerId: number): void;
}

interface PendingWrite {
  key: ShareStateKey;
  epochs: ShareStateEpochs;
  state: () => SharePartitionSnapshot;
  waiters: ((errorCode: number) => void)[];
  /** Loads of the key waiting for its writes to end (a load must not read past them). */
  drained: (() => void)[];
  scheduled: boolean;
  inFlight: boolean;
}

export class ShareStatePersister implements ShareStateStore {
  private readonly writes = new Map<string, PendingWrite>();
  /** Deletions not yet answered, by writeKey: a load waits for the one of its key. */
  private readonly removals = new Map<string, Promise<void>>();

  constructor(
    private readonly coordinator: ShareCoordinator,
    private readonly cache: MetadataCache,
    private readonly connections: BrokerConnections,
    private readonly retryTimeoutMs: number,
    private readonly logger: Logger,
  ) {}

  async load(groupId: string, topic: string, partition: number, leaderEpoch: number) {
    const key = this.keyOf(groupId, topic, partition);
    // A state dropped here (its group's last session ended, an offset reset) may still be being
    // written or deleted: read what that stores, not what was there before it.
    const k = writeKey(groupId, topic, partition);
    await this.drained(k);
    await this.removals.get(k);
    const read = await this.call(
      key,
      () => this.coordinator.read(key, leaderEpoch),
      async (client) => {
        const res = await client.request(
          ApiKey.ReadShareGroupState,
          0,
          { groupId, topics: [{ topicId: key.topicId, partitions: [{ partition, leaderEpoch }] }] },
          this.retryTimeoutMs,
        );
        const p = res.results[0]?.partitions[0];
        if (p === undefined) return failure(ErrorCode.UNKNOWN_SERVER_ERROR, "empty answer");
        return {
          errorCode: p.errorCode,
          errorMessage: p.errorMessage,
          state: { ...p, leaderEpoch, writeTimestampMs: 0 },
        };
      },
    );
    if (read.errorCode !== ErrorCode.NONE) {
      throw new KafkaError(read.errorCode, read.errorMessage ?? "reading share state failed");
    }
    const state = read.state;
    const stored: StoredShareState = {
      stateEpoch: state?.stateEpoch ?? 0,
      snapshot:
        state === null || state.startOffset < 0n
          ? null
          : snapshotOf(state.startOffset, state.stateBatches),
    };
    return stored;
  }

  /** ReadShareGroupStateSummary at the key's coordinator (it fences no leader). */
  async summary(groupId: string, topic: string, partition: number) {
    const stored = await this.storedSummary(groupId, topic, partition);
    return stored === null || stored.startOffset < 0n ? null : stored;
  }

  /**
   * The stored summary, null when the key was never written; a state dropped by
   * DeleteShareGroupOffsets has start offset -1 and keeps its state epoch.
   */
  private async storedSummary(groupId: string, topic: string, partition: number) {
    const key = this.keyOf(groupId, topic, partition);
    let remoteComplete: number | null = null;
    const read = await this.call(
      key,
      () => {
        remoteComplete = null;
        return this.coordinator.read(key, -1);
      },
      async (client) => {
        const res = await client.request(
          ApiKey.ReadShareGroupStateSummary,
          1,
          {
            groupId,
            topics: [{ topicId: key.topicId, partitions: [{ partition, leaderEpoch: -1 }] }],
          },
          this.retryTimeoutMs,
        );
        const p = res.results[0]?.partitions[0];
        if (p === undefined) return failure(ErrorCode.UNKNOWN_SERVER_ERROR, "empty answer");
        remoteComplete = p.deliveryCompleteCount;
        return {
          errorCode: p.errorCode,
          errorMessage: p.errorMessage,
          state: { ...p, writeTimestampMs: 0, stateBatches: [] },
        };
      },
    );
    if (read.errorCode !== ErrorCode.NONE) {
      throw new KafkaError(read.errorCode, read.errorMessage ?? "reading share state failed");
    }
    const state = read.state;
    if (state === null) return null;
    return {
      startOffset: state.startOffset,
      stateEpoch: state.stateEpoch,
      leaderEpoch: state.leaderEpoch,
      deliveryCompleteCount: remoteComplete ?? deliveryCompleteCount(state),
    } satisfies ShareStateSummary;
  }

  /**
   * AlterShareGroupOffsets: InitializeShareGroupState at the key's coordinator, one state epoch
   * above the stored one (Kafka takes the group epoch, which its durable membership keeps
   * rising; Quill's membership is in memory, so its group epoch may start over below a stored
   * state epoch).
   */
  async initialize(groupId: string, topic: string, partition: number, startOffset: bigint) {
    const stored = await this.storedSummary(groupId, topic, partition);
    const stateEpoch = (stored?.stateEpoch ?? 0) + 1;
    const result = await this.sendInitialize(groupId, topic, partition, stateEpoch, startOffset);
    if (result.errorCode !== ErrorCode.NONE) {
      throw new KafkaError(result.errorCode, result.errorMessage ?? "initializing share state");
    }
  }

  /**
   * The group coordinator assigned the partition: when the group has no state for it (never
   * had, or it was deleted), it starts now at `share.auto.offset.reset` of this moment, so
   * records produced after the assignment are delivered even if the first fetch comes later.
   * The start is this broker's log's when it leads the partition (`localStart`), else the
   * leader's answer to ListOffsets. Kafka's group coordinator initializes a new subscription's
   * partitions without a start offset and its partition leader takes `latest` at the first
   * fetch. Rejects (KafkaError) when it could not be done.
   */
  async initializeAssigned(
    groupId: string,
    topic: string,
    partition: number,
    reset: "earliest" | "latest",
    localStart: () => bigint | null,
  ): Promise<void> {
    const stored = await this.storedSummary(groupId, topic, partition);
    if (stored !== null && stored.startOffset >= 0n) return;
    const startOffset = localStart() ?? (await this.leaderOffset(topic, partition, reset));
    const stateEpoch = (stored?.stateEpoch ?? 0) + 1;
    const result = await this.sendInitialize(groupId, topic, partition, stateEpoch, startOffset);
    // Initialized meanwhile by another request: that start stands.
    if (result.errorCode === ErrorCode.FENCED_STATE_EPOCH) return;
    if (result.errorCode !== ErrorCode.NONE) {
      throw new KafkaError(result.errorCode, result.errorMessage ?? "initializing share state");
    }
  }

  private sendInitialize(
    groupId: string,
    topic: string,
    partition: number,
    stateEpoch: number,
    startOffset: bigint,
  ): Promise<ShareStateRead> {
    const key = this.keyOf(groupId, topic, partition);
    return this.call(
      key,
      () => this.coordinator.initialize(key, stateEpoch, startOffset),
      async (client) => {
        const res = await client.request(
          ApiKey.InitializeShareGroupState,
          0,
          {
            groupId,
            topics: [
              { topicId: key.topicId, partitions: [{ partition, stateEpoch, startOffset }] },
            ],
          },
          this.retryTimeoutMs,
        );
        const p = res.results[0]?.partitions[0];
        return failure(p?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR, p?.errorMessage ?? null);
      },
    );
  }

  /** The partition leader's log start (earliest) or high watermark (latest), by ListOffsets. */
  private async leaderOffset(topic: string, partition: number, reset: "earliest" | "latest") {
    const leader = this.cache.topic(topic)?.partitions[partition]?.leaderId;
    if (leader === undefined || leader < 0) {
      throw new KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, `${topic}-${partition} has no leader`);
    }
    let client: InterBrokerClient;
    try {
      client = await this.connections.clientFor(leader);
    } catch (error) {
      this.connections.dropClient(leader);
      throw new KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, String(error));
    }
    const timestamp = reset === "earliest" ? EARLIEST_TIMESTAMP : LATEST_TIMESTAMP;
    const res = await client.request(
      ApiKey.ListOffsets,
      LIST_OFFSETS_VERSION,
      {
        replicaId: -1,
        isolationLevel: 0,
        topics: [
          {
            name: topic,
            partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp }],
          },
        ],
        timeoutMs: this.retryTimeoutMs,
      },
      this.retryTimeoutMs,
    );
    const p = res.topics[0]?.partitions[0];
    if (p === undefined || p.errorCode !== ErrorCode.NONE || p.offset < 0n) {
      const code = p?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR;
      throw new KafkaError(
        code === ErrorCode.NONE ? ErrorCode.UNKNOWN_SERVER_ERROR : code,
        "ListOffsets",
      );
    }
    return p.offset;
  }

  save(
    groupId: string,
    topic: string,
    partition: number,
    epochs: ShareStateEpochs,
    state: () => SharePartitionSnapshot,
  ): Promise<number> {
    const k = writeKey(groupId, topic, partition);
    let w = this.writes.get(k);
    if (w === undefined) {
      let key: ShareStateKey;
      try {
        key = this.keyOf(groupId, topic, partition);
      } catch (e) {
        return Promise.resolve(e instanceof KafkaError ? e.code : ErrorCode.UNKNOWN_SERVER_ERROR);
      }
      w = { key, epochs, state, waiters: [], drained: [], scheduled: false, inFlight: false };
      this.writes.set(k, w);
    }
    w.epochs = epochs;
    w.state = state;
    const done = new Promise<number>((resolve) => w.waiters.push(resolve));
    this.schedule(k, w);
    return done;
  }

  /**
   * DeleteShareGroupOffsets: DeleteShareGroupState once the key's running write (the last
   * acknowledgements of a group just emptied) is answered: sent before it, the deletion could
   * reach the coordinator first and the write would bring the state back. The coordinator
   * drops the state under a new state epoch (ShareCoordinator.delete), so a leader still
   * holding it is fenced on its next write. Resolves once the deletion is durable; rejects
   * (KafkaError) on failure.
   */
  remove(groupId: string, topic: string, partition: number): Promise<void> {
    let key: ShareStateKey;
    try {
      key = this.keyOf(groupId, topic, partition);
    } catch (e) {
      return Promise.reject(e);
    }
    const k = writeKey(groupId, topic, partition);
    const removal = this.drained(k).then(() => this.delete(key, groupId, topic, partition));
    // A load waits for the deletion, failed or not.
    const settled: Promise<void> = removal
      .catch(() => {})
      .finally(() => {
        if (this.removals.get(k) === settled) this.removals.delete(k);
      });
    this.removals.set(k, settled);
    return removal;
  }

  /** Resolves once the key has no write pending or running. */
  private drained(k: string): Promise<void> {
    const pending = this.writes.get(k);
    if (pending === undefined) return Promise.resolve();
    return new Promise<void>((resolve) => pending.drained.push(resolve));
  }

  /** DeleteShareGroupState at the key's coordinator; rejects (KafkaError) on failure. */
  private async delete(key: ShareStateKey, groupId: string, topic: string, partition: number) {
    const result = await this.call(
      key,
      () => this.coordinator.delete(key),
      async (client) => {
        const res = await client.request(
          ApiKey.DeleteShareGroupState,
          0,
          { groupId, topics: [{ topicId: key.topicId, partitions: [{ partition }] }] },
          this.retryTimeoutMs,
        );
        const p = res.results[0]?.partitions[0];
        return failure(p?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR, p?.errorMessage ?? null);
      },
    );
    if (result.errorCode !== ErrorCode.NONE) {
      const message =
        result.errorMessage ?? `deleting share state of ${groupId} ${topic}-${partition}`;
      throw new KafkaError(result.errorCode, message);
    }
  }

  private schedule(k: string, w: PendingWrite): void {
    if (w.scheduled || w.inFlight) return;
    w.scheduled = true;
    queueMicrotask(() => {
      w.scheduled = false;
      void this.flush(k, w);
    });
  }

  private async flush(k: string, w: PendingWrite): Promise<void> {
    const waiters = w.waiters;
    w.waiters = [];
    w.inFlight = true;
    const snapshot = w.state();
    const body = {
      partition: w.key.partition,
      stateEpoch: w.epochs.stateEpoch,
      leaderEpoch: w.epochs.leaderEpoch,
      startOffset: snapshot.startOffset,
      deliveryCompleteCount: -1,
      stateBatches: batchesOf(snapshot),
    };
    let code: number;
    try {
      const result = await this.call(
        w.key,
        () => this.coordinator.write(w.key, body),
        async (client) => {
          const res = await client.request(
            ApiKey.WriteShareGroupState,
            0,
            { groupId: w.key.groupId, topics: [{ topicId: w.key.topicId, partitions: [body] }] },
            this.retryTimeoutMs,
          );
          const p = res.results[0]?.partitions[0];
          return failure(p?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR, p?.errorMessage ?? null);
        },
      );
      code = result.errorCode;
      if (code !== ErrorCode.NONE) {
        this.logger.warn(`writing share state ${w.key.groupId} ${w.key.partition}: ${code}`);
      }
    } catch (error) {
      this.logger.error(`writing share state failed: ${String(error)}`);
      code = ErrorCode.UNKNOWN_SERVER_ERROR;
    }
    w.inFlight = false;
    for (const resolve of waiters) resolve(code);
    if (w.waiters.length > 0) return this.schedule(k, w);
    this.writes.delete(k);
    for (const resolve of w.drained) resolve();
  }

  /** Sends to the key's coordinator: this broker's own, or another broker; retries moves. */
  private async call(
    key: ShareStateKey,
    local: () => ShareStateRead | Promise<ShareStateRead>,
    remote: (client: InterBrokerClient) => Promise<ShareStateRead>,
  ): Promise<ShareStateRead> {
    const deadline = Date.now() + this.retryTimeoutMs;
    for (;;) {
      const result = await this.attempt(key, local, remote);
      if (!RETRIABLE.has(result.errorCode) || Date.now() >= deadline) return result;
      await Bun.sleep(RETRY_BACKOFF_MS);
    }
  }

  private async attempt(
    key: ShareStateKey,
    local: () => ShareStateRead | Promise<ShareStateRead>,
    remote: (client: InterBrokerClient) => Promise<ShareStateRead>,
  ): Promise<ShareStateRead> {
    if (this.cache.topic(SHARE_STATE_TOPIC) === undefined) {
      await this.coordinator.ensureTopic().catch(() => undefined);
      return failure(ErrorCode.COORDINATOR_NOT_AVAILABLE, `${SHARE_STATE_TOPIC} is being created`);
    }
    const topic = this.cache.topic(SHARE_STATE_TOPIC)!;
    const leader = topic.partitions[shareStatePartitionFor(key, topic.partitions.length)]?.leaderId;
    if (leader === undefined || leader < 0 || this.cache.broker(leader) === undefined) {
      return failure(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the share coordinator has no leader");
    }
    if (leader === this.cache.brokerConfig["broker.id"]) return local();
    try {
      return await remote(await this.connections.clientFor(leader));
    } catch (error) {
      this.connections.dropClient(leader);
      return failure(ErrorCode.COORDINATOR_NOT_AVAILABLE, String(error));
    }
  }

  private keyOf(groupId: string, topic: string, partition: number): ShareStateKey {
    const topicId = this.cache.topic(topic)?.topicId;
    if (topicId === undefined) {
      throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `unknown topic ${topic}`);
    }
    return { groupId, topicId, partition };
  }
}

/** A share partition's key in `writes` and `removals`. */
function writeKey(groupId: string, topic: string, partition: number): string {
  return `${groupId}\u0000${topic}\u0000${partition}`;
}

function failure(errorCode: number, errorMessage: string | null): ShareStateRead {
  return { errorCode, errorMessage, state: null };
}

/** The in-flight records as runs of one state and delivery count. */
export function batchesOf(snapshot: SharePartitionSnapshot): StateBatch[] {
  const out: StateBatch[] = [];
  let offset = snapshot.startOffset;
  for (const [state, count] of snapshot.records) {
    const last = out.at(-1);
    if (last !== undefined && last.deliveryState === state && last.deliveryCount === count) {
      out[out.length - 1] = { ...last, lastOffset: offset };
    } else {
      out.push({
        firstOffset: offset,
        lastOffset: offset,
        deliveryState: state,
        deliveryCount: count,
      });
    }
    offset++;
  }
  return out;
}

/**
 * The snapshot of stored batches: offsets from the start offset to the last batch's end, an
 * offset no batch covers (or an ACQUIRED one, which no lock survives) AVAILABLE.
 */
export function snapshotOf(startOffset: bigint, batches: readonly StateBatch[]) {
  let end = startOffset;
  for (const b of batches) if (b.lastOffset + 1n > end) end = b.lastOffset + 1n;
  const span = Number(end - startOffset);
  if (span > STATE_SPAN_MAX) throw new Error(`share state spans ${span} offsets`);
  const records: [number, number][] = Array.from({ length: span }, () => [
    RecordState.AVAILABLE,
    0,
  ]);
  for (const b of batches) {
    const from = b.firstOffset < startOffset ? startOffset : b.firstOffset;
    for (let o = from; o <= b.lastOffset; o++) {
      const state =
        b.deliveryState === RecordState.ACQUIRED ? RecordState.AVAILABLE : b.deliveryState;
      records[Number(o - startOffset)] = [state, b.deliveryCount];
    }
  }
  return { startOffset, records } satisfies SharePartitionSnapshot;
}
