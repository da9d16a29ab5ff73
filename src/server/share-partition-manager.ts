import { topicPartitionKey } from "../common/topic-partition.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import type { FileRange } from "../protocol/records.ts";
import { type BatchEntry, scanBatchHeaders } from "../storage/segment-batch-reader.ts";
import type { UnifiedLog } from "../storage/unified-log.ts";
import { assert } from "../util/assert.ts";
import type { DelayedFetch } from "./delayed-fetch-purgatory.ts";
import type { GroupConfigManager } from "./group-config-manager.ts";
import type { ReplicaManager } from "./replica-manager.ts";
import {
  type AcquiredRecords,
  SharePartition,
  type SharePartitionSettings,
  type SharePartitionSnapshot,
} from "./share-partition.ts";
import {
  FINAL_EPOCH,
  INITIAL_EPOCH,
  type OnDisconnect,
  parseSessionPartitionKey,
  type ShareSession,
  ShareSessionCache,
  sessionPartitionKey,
} from "./share-session-cache.ts";

/**
 * The broker side of share groups (KIP-932, Kafka's SharePartitionManager): the share sessions,
 * the share-partition state of every (group, partition) this broker leads, ShareFetch
 * (acknowledge, then acquire and read) and ShareAcknowledge. Records are read with the log's
 * ordinary read (file ranges sent with sendfile); only batch headers are looked at, to know
 * which offsets a read covers.
 */

export interface AckBatch {
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
  readonly types: readonly number[];
}

export interface SharePartitionRequest {
  readonly topic: string;
  readonly partition: number;
  readonly acks: readonly AckBatch[];
}

export interface ShareFetchParams {
  readonly groupId: string;
  readonly memberId: string;
  readonly sessionEpoch: number;
  readonly maxWaitMs: number;
  readonly maxBytes: number;
  readonly maxRecords: number;
  /**
   * IsRenewAck (v2): the acknowledgements may RENEW locks, and the request only acknowledges
   * (Kafka fetches nothing for it; the handler checks its fetch fields are 0).
   */
  readonly renewAck: boolean;
  /** Partitions the request names (added to the session), with their acknowledgements. */
  readonly partitions: readonly SharePartitionRequest[];
  readonly forgotten: readonly { topic: string; partition: number }[];
  /**
   * Watches the request's connection: its close ends a waiting fetch, and the share session
   * the request opens.
   */
  readonly onDisconnect: OnDisconnect;
}

export interface SharePartitionResult {
  readonly topic: string;
  readonly partition: number;
  readonly errorCode: number;
  readonly errorMessage: string | null;
  /** NONE when the partition had no acknowledgements. */
  readonly ackErrorCode: number;
  readonly records: FileRange[];
  readonly acquired: readonly AcquiredRecords[];
}

export interface ShareResult {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly partitions: readonly SharePartitionResult[];
}

/** The epochs a state write carries (the coordinator fences older ones). */
export interface ShareStateEpochs {
  /** The partition's leader epoch when this broker loaded the state. */
  readonly leaderEpoch: number;
  /** Moves when the state is initialized afresh (an offset reset). */
  readonly stateEpoch: number;
}

export interface StoredShareState {
  readonly stateEpoch: number;
  /** Null when the group has no state for the partition yet. */
  readonly snapshot: SharePartitionSnapshot | null;
}

/**
 * Where share-partition state is kept across restarts and leader changes (null: in memory
 * only): a file in embedded mode, the share coordinator in a cluster.
 */
export interface ShareStateStore {
  /** The stored state; rejects (KafkaError) when it cannot be read now. */
  load(
    groupId: string,
    topic: string,
    partition: number,
    leaderEpoch: number,
  ): Promise<StoredShareState>;
  /**
   * The partition changed; `state` is called when the store writes (not on every change).
   * Resolves with the error code of the write that holds this change.
   */
  save(
    groupId: string,
    topic: string,
    partition: number,
    epochs: ShareStateEpochs,
    state: () => SharePartitionSnapshot,
  ): Promise<number>;
  /**
   * DeleteShareGroupOffsets: the state goes (in a cluster under a new state epoch, which fences
   * the writes of a leader still holding it). Rejects (KafkaError) on failure.
   */
  remove(groupId: string, topic: string, partition: number): Promise<void>;
  /**
   * AlterShareGroupOffsets where the state lives apart from the partition leader (a cluster's
   * share coordinator): the state starts afresh at `startOffset` under a new state epoch, which
   * fences the writes of a leader still holding the old state. Rejects (KafkaError) on failure.
   */
  initialize?(
    groupId: string,
    topic: string,
    partition: number,
    startOffset: bigint,
  ): Promise<void>;
  /**
   * A partition the group coordinator assigned (a cluster's share coordinator): the state starts
   * at `reset` of this moment when the group has none. `localStart` is the offset when this
   * broker leads the partition, else null. Rejects (KafkaError) on failure.
   */
  initializeAssigned?(
    groupId: string,
    topic: string,
    partition: number,
    reset: "earliest" | "latest",
    localStart: () => bigint | null,
  ): Promise<void>;
  /**
   * The stored summary (ReadShareGroupStateSummary), where the state lives apart from the
   * partition leader (a cluster's share coordinator); null when there is none stored. Rejects
   * (KafkaError) when it cannot be read now.
   */
  summary?(groupId: string, topic: string, partition: number): Promise<ShareStateSummary | null>;
  /**
   * Every partition the group has state for, where the store holds them all (embedded mode's
   * file); a cluster's state is spread over the share coordinators and cannot be listed.
   */
  partitionsOf?(groupId: string): { topic: string; partition: number }[];
}

/** A share partition's progress, as DescribeShareGroupOffsets reports it. */
export interface ShareStateSummary {
  readonly startOffset: bigint;
  /** Moves with every reset of the state (InitializeShareGroupState). */
  readonly stateEpoch: number;
  /** The leader epoch of the state's last writer (-1: unknown). */
  readonly leaderEpoch: number;
  /** Offsets at or above the start offset already acknowledged or archived. */
  readonly deliveryCompleteCount: number;
}

export interface ShareManagerSettings extends SharePartitionSettings {
  /** `group.share.max.share.sessions`. */
  readonly maxSessions: number;
  /** `fetch.max.bytes`: the cap on one response's record bytes. */
  readonly fetchMaxBytes: number;
}

/** Share partitions one broker keeps (groups x partitions); a new one past it is refused. */
export const SHARE_PARTITIONS_MAX = 100_000;

/**
 * How long a ShareGroupHeartbeat carrying an assignment waits for the partitions' state to be
 * initialized (well inside a client's 30 s request timeout); what is not done by then starts
 * when it is, or at the leader's first fetch.
 */
const ASSIGNMENT_INITIALIZE_WAIT_MS = 5_000;

export class SharePartitionManager {
  private readonly partitions = new Map<string, SharePartition>();
  /** The epochs each loaded share partition's writes carry. */
  private readonly epochs = new Map<string, ShareStateEpochs>();
  private readonly loading = new Map<string, Promise<void>>();
  /**
   * As the group coordinator: the partitions each group has state for (initialized at an
   * assignment), so later assignments need not ask the share coordinator again. At most
   * SHARE_PARTITIONS_MAX; past that, partitions are asked about each time.
   */
  private readonly initialized = new Map<string, Set<string>>();
  private initializedCount = 0;
  private readonly initializing = new Map<string, Promise<void>>();
  private readonly sessions: ShareSessionCache;
  private readonly waiters = new Set<ShareFetchWaiter>();
  private readonly unwatch: () => void;

  constructor(
    private readonly replicaManager: ReplicaManager,
    private readonly settings: ShareManagerSettings,
    /** Group configs: where a new partition starts, and each group's `share.*` values. */
    readonly groupConfigs: GroupConfigManager,
    private readonly store: ShareStateStore | null = null,
  ) {
    this.sessions = new ShareSessionCache(settings.maxSessions, (s) => this.releaseSession(s));
    // A partition this broker stops leading: its share state is the next leader's now.
    this.unwatch = replicaManager.onLeadershipChange((topic, partition, isLeader) => {
      if (!isLeader) this.dropPartition(topic, partition);
    });
  }

  async shareFetch(params: ShareFetchParams): Promise<ShareResult> {
    const hasAcks = params.partitions.some((p) => p.acks.length > 0);
    if (params.sessionEpoch === INITIAL_EPOCH && hasAcks) {
      return failed(ErrorCode.INVALID_REQUEST, "Acknowledgements on a share session's opening.");
    }
    let session: ShareSession;
    try {
      session =
        params.sessionEpoch === INITIAL_EPOCH
          ? this.sessions.open(params.groupId, params.memberId, params.onDisconnect)
          : this.sessions.continue(params.groupId, params.memberId, params.sessionEpoch);
    } catch (e) {
      if (e instanceof KafkaError) return failed(e.code, e.message);
      throw e;
    }
    const named = params.partitions.map((p) => sessionPartitionKey(p.topic, p.partition));
    if (params.sessionEpoch === INITIAL_EPOCH) await this.revalidate(session.groupId, named);
    const loadErrors = await this.ensureLoaded(session.groupId, [...session.partitions, ...named]);
    const acked = this.acknowledgeAll(session, params.partitions, params.renewAck);
    if (params.sessionEpoch === FINAL_EPOCH) {
      this.sessions.remove(session);
      return this.afterWrites(acked, []);
    }
    for (const key of named) session.partitions.add(key);
    for (const f of params.forgotten) {
      session.partitions.delete(sessionPartitionKey(f.topic, f.partition));
    }
    // A session that ended while the state loaded (its connection closed) acquires nothing:
    // no one would release what it took before the locks expire.
    if (params.renewAck || !this.sessions.isOpen(session)) return this.afterWrites(acked, []);
    let fetched = this.fetchAll(session, params, loadErrors);
    if (!hasAcks && params.maxWaitMs > 0) {
      fetched = await this.fetchWhenAvailable(session, params, loadErrors, fetched);
    }
    return this.afterWrites(acked, fetched);
  }

  /** ShareAcknowledge: acknowledgements only, on an open session (epoch 0 cannot open one). */
  async shareAcknowledge(
    groupId: string,
    memberId: string,
    sessionEpoch: number,
    partitions: readonly SharePartitionRequest[],
    renewAck = false,
  ): Promise<ShareResult> {
    if (sessionEpoch === INITIAL_EPOCH) {
      return failed(
        ErrorCode.INVALID_SHARE_SESSION_EPOCH,
        "ShareAcknowledge cannot open a session.",
      );
    }
    let session: ShareSession;
    try {
      session = this.sessions.continue(groupId, memberId, sessionEpoch);
    } catch (e) {
      if (e instanceof KafkaError) return failed(e.code, e.message);
      throw e;
    }
    const named = partitions.map((p) => sessionPartitionKey(p.topic, p.partition));
    await this.ensureLoaded(groupId, named);
    const acked = this.acknowledgeAll(session, partitions, renewAck);
    if (sessionEpoch === FINAL_EPOCH) this.sessions.remove(session);
    return this.afterWrites(acked, []);
  }

  /** The share-partition state, if this broker has it (ShareGroupDescribe offsets, tests). */
  sharePartition(groupId: string, topic: string, partition: number): SharePartition | undefined {
    return this.partitions.get(stateKey(groupId, topic, partition));
  }

  /**
   * The group's progress on a partition: in a cluster the share coordinator's (what was last
   * written, so every acknowledgement a client was told succeeded), as Kafka's group coordinator
   * reads it; in embedded mode this broker's state. Null when there is none.
   */
  async summary(groupId: string, topic: string, partition: number) {
    if (this.store?.summary !== undefined) return this.store.summary(groupId, topic, partition);
    const sp = this.partitions.get(stateKey(groupId, topic, partition));
    if (sp === undefined) return null;
    const epochs = this.epochs.get(stateKey(groupId, topic, partition));
    return {
      startOffset: sp.startOffset,
      stateEpoch: epochs?.stateEpoch ?? 0,
      leaderEpoch: epochs?.leaderEpoch ?? -1,
      deliveryCompleteCount: sp.doneInFlightCount(),
    } satisfies ShareStateSummary;
  }

  /**
   * ShareGroupHeartbeat at the group coordinator assigned these partitions to a member: the
   * group's state of each starts now if it has none, so `latest` means the end of the log when
   * the group got the partition, not when its first fetch arrived; the heartbeat is answered
   * after this. In a cluster the share coordinator initializes it (InitializeShareGroupState);
   * in embedded mode this broker loads it. A partition that could not be initialized starts at
   * its leader's first fetch instead; the wait is bounded (ASSIGNMENT_INITIALIZE_WAIT_MS).
   * `groupWasEmpty`: the partitions this broker saw initialized for the group are checked again
   * (an offset reset or deletion, which needs an empty group, may have happened on any broker).
   */
  async initializeAssignment(
    groupId: string,
    assignment: ReadonlyMap<string, ReadonlySet<number>>,
    groupWasEmpty: boolean,
  ): Promise<void> {
    if (groupWasEmpty) this.forgetInitialized(groupId);
    // A share coordinator or leader that cannot be reached is retried for longer than a client
    // waits for its heartbeat: past the bound the answer goes, and initialization carries on.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ASSIGNMENT_INITIALIZE_WAIT_MS);
    });
    await Promise.race([this.initializeAll(groupId, assignment), bound]);
    clearTimeout(timer);
  }

  private async initializeAll(
    groupId: string,
    assignment: ReadonlyMap<string, ReadonlySet<number>>,
  ): Promise<void> {
    const known = await this.knownTopics(groupId, assignment);
    const waits: Promise<void>[] = [];
    for (const [topic, partitions] of assignment) {
      const reset = known.has(topic) ? "earliest" : this.groupConfigs.autoOffsetReset(groupId);
      for (const p of partitions) waits.push(this.initializeOne(groupId, topic, p, reset));
    }
    await Promise.all(waits);
  }

  /**
   * The assignment's topics the group already consumes, where the state is kept apart (a
   * cluster): a partition of one without state is new (CreatePartitions) and starts at the log
   * start whatever `share.auto.offset.reset` says, as in Kafka, so records produced to it before
   * the group was assigned it are not skipped. Known: another partition of the topic was
   * initialized here, or partition 0 has state (every consumed topic's partition 0 does), read
   * before this assignment initializes anything.
   */
  private async knownTopics(
    groupId: string,
    assignment: ReadonlyMap<string, ReadonlySet<number>>,
  ): Promise<Set<string>> {
    const known = new Set<string>();
    const store = this.store;
    if (store?.summary === undefined) return known;
    const cached = this.initialized.get(groupId);
    const cachedTopics = new Set([...(cached ?? [])].map((k) => parseSessionPartitionKey(k).topic));
    await Promise.all(
      [...assignment].map(async ([topic, partitions]) => {
        const fresh = [...partitions].filter(
          (p) => cached?.has(sessionPartitionKey(topic, p)) !== true,
        );
        if (fresh.every((p) => p === 0)) return;
        if (cachedTopics.has(topic)) return void known.add(topic);
        const first = await store.summary!(groupId, topic, 0).catch(() => null);
        if (first !== null) known.add(topic);
      }),
    );
    return known;
  }

  private initializeOne(
    groupId: string,
    topic: string,
    partition: number,
    reset: "earliest" | "latest",
  ): Promise<void> {
    const store = this.store;
    if (store?.initializeAssigned === undefined) {
      if (this.leaderEpochOf(topic, partition) === null) return Promise.resolve();
      return this.ensureLoaded(groupId, [sessionPartitionKey(topic, partition)]).then(() => {});
    }
    const key = sessionPartitionKey(topic, partition);
    if (this.initialized.get(groupId)?.has(key) === true) return Promise.resolve();
    const k = stateKey(groupId, topic, partition);
    let running = this.initializing.get(k);
    if (running === undefined) {
      running = store
        .initializeAssigned(groupId, topic, partition, reset, () => {
          if (this.leaderEpochOf(topic, partition) === null) return null;
          const log = this.replicaManager.leaderFor(topic, partition).log;
          return reset === "earliest" ? log.logStartOffset : log.highWatermark;
        })
        .then(
          () => this.rememberInitialized(groupId, key),
          // Not initialized now: its leader starts it at its first fetch.
          () => {},
        )
        .finally(() => this.initializing.delete(k));
      this.initializing.set(k, running);
    }
    return running;
  }

  private rememberInitialized(groupId: string, key: string): void {
    if (this.initializedCount >= SHARE_PARTITIONS_MAX) return;
    let keys = this.initialized.get(groupId);
    if (keys === undefined) this.initialized.set(groupId, (keys = new Set()));
    if (keys.has(key)) return;
    keys.add(key);
    this.initializedCount++;
  }

  private forgetInitialized(groupId: string): void {
    this.initializedCount -= this.initialized.get(groupId)?.size ?? 0;
    this.initialized.delete(groupId);
    assert(this.initializedCount >= 0, "initialized share partitions counted below zero");
  }

  /**
   * AlterShareGroupOffsets: the partition starts at `offset` (the group has no members). In a
   * cluster the share coordinator initializes the state (any broker may be asked, as Kafka's
   * group coordinator is); the partition's leader reads it when it next serves the group.
   */
  async resetOffset(groupId: string, topic: string, partition: number, offset: bigint) {
    this.forgetInitialized(groupId);
    if (this.store?.initialize !== undefined) {
      await this.store.initialize(groupId, topic, partition, offset);
      this.dropState(stateKey(groupId, topic, partition));
      return;
    }
    this.sessions.removeGroup(groupId);
    const failure = (await this.ensureLoaded(groupId, [sessionPartitionKey(topic, partition)]))
      .values()
      .next().value;
    if (failure !== undefined) throw failure;
    const log = this.replicaManager.leaderFor(topic, partition).log;
    const bounded = offset < log.logStartOffset ? log.logStartOffset : offset;
    const sp = this.partitions.get(stateKey(groupId, topic, partition))!;
    sp.resetTo(bounded > log.logEndOffset ? log.logEndOffset : bounded);
  }

  /**
   * DeleteShareGroupOffsets: the group's state for the partition goes, durably once this
   * resolves. In a cluster a leader still holding it is fenced on its next write.
   */
  async deleteState(groupId: string, topic: string, partition: number): Promise<void> {
    this.forgetInitialized(groupId);
    this.dropState(stateKey(groupId, topic, partition));
    await this.store?.remove(groupId, topic, partition);
  }

  /**
   * DeleteGroups of an Empty share group (Kafka deletes its share-partition state through the
   * persister before the group): the state of `partitions`, of every partition this broker
   * knows the group has state for, and (embedded mode) of every one stored, goes, durably once
   * this resolves. Rejects with the first failure (KafkaError); the group is then kept.
   */
  async deleteGroupState(
    groupId: string,
    partitions: readonly { topic: string; partition: number }[],
  ): Promise<void> {
    const keys = new Set(partitions.map((p) => sessionPartitionKey(p.topic, p.partition)));
    for (const k of this.initialized.get(groupId) ?? []) keys.add(k);
    for (const s of this.states()) {
      if (s.groupId === groupId) keys.add(sessionPartitionKey(s.topic, s.partition));
    }
    for (const p of this.store?.partitionsOf?.(groupId) ?? []) {
      keys.add(sessionPartitionKey(p.topic, p.partition));
    }
    this.sessions.removeGroup(groupId);
    const deletions = [...keys].map((k) => {
      const { topic, partition } = parseSessionPartitionKey(k);
      return this.deleteState(groupId, topic, partition);
    });
    // A topic deleted since has no state left to delete.
    const failure = (await Promise.allSettled(deletions)).find(
      (r) =>
        r.status === "rejected" &&
        !(r.reason instanceof KafkaError && r.reason.code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    );
    if (failure !== undefined) throw (failure as PromiseRejectedResult).reason;
  }

  /**
   * Whether the group has state stored here that DeleteGroups can find without its membership
   * (embedded mode, after a restart); null where the store cannot list a group's partitions.
   */
  hasStoredState(groupId: string): boolean | null {
    if (this.store !== null && this.store.partitionsOf === undefined) return null;
    if (this.states().some((s) => s.groupId === groupId)) return true;
    return (this.store?.partitionsOf?.(groupId).length ?? 0) > 0;
  }

  /** Every (group, topic, partition) with state here. */
  states(): { groupId: string; topic: string; partition: number; state: SharePartition }[] {
    return [...this.partitions].map(([key, state]) => ({ ...parseStateKey(key), state }));
  }

  close(): void {
    this.unwatch();
    for (const w of this.waiters) w.op.complete("cancelled");
    for (const sp of this.partitions.values()) sp.close();
  }

  /**
   * Loads the group's state of those session partitions that this broker leads and has not
   * loaded (or loaded under an older leader epoch). Returns the failures by session key.
   */
  private async ensureLoaded(groupId: string, keys: Iterable<string>) {
    const failures = new Map<string, KafkaError>();
    const waits: Promise<void>[] = [];
    for (const k of new Set(keys)) {
      const { topic, partition } = parseSessionPartitionKey(k);
      if (this.current(groupId, topic, partition) !== undefined) continue;
      if (this.leaderEpochOf(topic, partition) === null) continue;
      waits.push(
        this.load(groupId, topic, partition).catch((e: unknown) => {
          const error =
            e instanceof KafkaError ? e : new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, String(e));
          failures.set(k, error);
        }),
      );
    }
    if (waits.length > 0) await Promise.all(waits);
    return failures;
  }

  /**
   * A new share session (a consumer starting, or coming back): where the state lives apart
   * from this broker (a cluster's share coordinator), the state epoch of each cached partition
   * is checked there, and a state reset since it was read (AlterShareGroupOffsets from any
   * broker) is dropped, to be read again. Kafka drops a group's cached state when its last
   * share session ends (the reset needs an empty group), and fences a cache missed that way on
   * its next write; Quill keeps the state past the group's last session, so it checks when one
   * opens. A check that fails leaves the cache (a write still fences it).
   */
  private async revalidate(groupId: string, keys: readonly string[]): Promise<void> {
    const store = this.store;
    if (store?.summary === undefined) return;
    await Promise.all(
      keys.map(async (k) => {
        const { topic, partition } = parseSessionPartitionKey(k);
        const key = stateKey(groupId, topic, partition);
        const cached = this.epochs.get(key);
        if (cached === undefined) return;
        const stored = await store.summary!(groupId, topic, partition).catch(() => undefined);
        if (stored === undefined || this.epochs.get(key) !== cached) return;
        if (stored === null || stored.stateEpoch !== cached.stateEpoch) this.dropState(key);
      }),
    );
  }

  /** The loaded state when it is this leader epoch's, else undefined (an older one is dropped). */
  private current(groupId: string, topic: string, partition: number) {
    const key = stateKey(groupId, topic, partition);
    const sp = this.partitions.get(key);
    if (sp === undefined) return undefined;
    const leaderEpoch = this.leaderEpochOf(topic, partition);
    if (leaderEpoch !== null && leaderEpoch === this.epochs.get(key)?.leaderEpoch) return sp;
    this.dropState(key);
    return undefined;
  }

  /** The partition's leader epoch when this broker leads it, else null. */
  private leaderEpochOf(topic: string, partition: number): number | null {
    try {
      return this.replicaManager.leaderFor(topic, partition).leaderEpoch;
    } catch (e) {
      if (e instanceof KafkaError) return null;
      throw e;
    }
  }

  private load(groupId: string, topic: string, partition: number): Promise<void> {
    const key = stateKey(groupId, topic, partition);
    let loading = this.loading.get(key);
    if (loading === undefined) {
      loading = this.loadOnce(groupId, topic, partition).finally(() => this.loading.delete(key));
      this.loading.set(key, loading);
    }
    return loading;
  }

  private async loadOnce(groupId: string, topic: string, partition: number): Promise<void> {
    const leaderEpoch = this.replicaManager.leaderFor(topic, partition).leaderEpoch;
    if (this.partitions.size >= SHARE_PARTITIONS_MAX) {
      throw new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "Too many share partitions.");
    }
    const stored: StoredShareState =
      this.store === null
        ? { stateEpoch: 0, snapshot: null }
        : await this.store.load(groupId, topic, partition, leaderEpoch);
    // Leadership may have moved while the state was read.
    const leader = this.replicaManager.leaderFor(topic, partition);
    if (leader.leaderEpoch !== leaderEpoch) {
      throw new KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, `${topic}-${partition} moved`);
    }
    const log = leader.log;
    const start =
      stored.snapshot?.startOffset ??
      (this.groupConfigs.autoOffsetReset(groupId) === "earliest"
        ? log.logStartOffset
        : log.highWatermark);
    const key = stateKey(groupId, topic, partition);
    const sp: SharePartition = new SharePartition(
      start,
      this.groupSettings(groupId),
      () => this.wake(key),
      () => void this.persist(groupId, topic, partition, sp),
    );
    if (stored.snapshot !== null) sp.restore(stored.snapshot);
    this.dropState(key);
    this.partitions.set(key, sp);
    this.epochs.set(key, { leaderEpoch, stateEpoch: stored.stateEpoch });
    // Where a new share partition starts is stored at once, so a next leader starts there too.
    if (stored.snapshot === null) void this.persist(groupId, topic, partition, sp);
  }

  /** The group's configs, read at each use, so a change applies at once. */
  private groupSettings(groupId: string): SharePartitionSettings {
    const configs = this.groupConfigs;
    return {
      get lockDurationMs() {
        return configs.shareRecordLockDurationMs(groupId);
      },
      get deliveryCountLimit() {
        return configs.shareDeliveryCountLimit(groupId);
      },
      get maxInFlightRecords() {
        return configs.sharePartitionMaxRecordLocks(groupId);
      },
    };
  }

  /** Hands the state to the store; resolves with the write's error code. */
  private persist(groupId: string, topic: string, partition: number, sp: SharePartition) {
    if (this.store === null) return Promise.resolve(ErrorCode.NONE as number);
    const key = stateKey(groupId, topic, partition);
    const epochs = this.epochs.get(key) ?? { leaderEpoch: -1, stateEpoch: 0 };
    return this.store
      .save(groupId, topic, partition, epochs, () => sp.snapshot())
      .then((code) => {
        // A newer leader or an offset reset owns the state now: ours is stale, reload it.
        const fenced =
          code === ErrorCode.FENCED_LEADER_EPOCH || code === ErrorCode.FENCED_STATE_EPOCH;
        if (fenced && this.partitions.get(key) === sp) this.dropState(key);
        return code;
      });
  }

  private dropState(key: string): void {
    this.partitions.get(key)?.close();
    this.partitions.delete(key);
    this.epochs.delete(key);
  }

  private dropPartition(topic: string, partition: number): void {
    const suffix = `\u0000${topic}\u0000${partition}`;
    for (const key of [...this.partitions.keys()]) if (key.endsWith(suffix)) this.dropState(key);
  }

  private acknowledgeAll(
    session: ShareSession,
    partitions: readonly SharePartitionRequest[],
    allowRenew: boolean,
  ) {
    const results = new Map<string, SharePartitionResult>();
    const writes = new Map<string, Promise<number>>();
    for (const p of partitions) {
      if (p.acks.length === 0) continue;
      let ackErrorCode: number = ErrorCode.NONE;
      const sp = this.current(session.groupId, p.topic, p.partition);
      for (const batch of p.acks) {
        const code =
          sp === undefined
            ? ErrorCode.INVALID_RECORD_STATE
            : sp.acknowledge(
                session.memberId,
                batch.firstOffset,
                batch.lastOffset,
                batch.types,
                allowRenew,
              );
        if (code !== ErrorCode.NONE) ackErrorCode = code;
      }
      const key = sessionPartitionKey(p.topic, p.partition);
      results.set(key, { ...emptyResult(p.topic, p.partition), ackErrorCode });
      if (sp !== undefined) {
        writes.set(key, this.persist(session.groupId, p.topic, p.partition, sp));
      }
    }
    return { results, writes };
  }

  /**
   * The answer once the acknowledgements are durable (as Kafka answers once its share
   * coordinator wrote them): a failed write is the partition's acknowledgement error.
   */
  private async afterWrites(
    acked: ReturnType<SharePartitionManager["acknowledgeAll"]>,
    fetched: SharePartitionResult[],
  ): Promise<ShareResult> {
    const codes = await Promise.all([...acked.writes.values()]);
    [...acked.writes.keys()].forEach((key, i) => {
      const r = acked.results.get(key)!;
      const code = codes[i]!;
      if (code !== ErrorCode.NONE && r.ackErrorCode === ErrorCode.NONE) {
        // A fenced state (a newer leader, an offset reset) is NOT_LEADER_OR_FOLLOWER to the
        // client, as in Kafka: it refreshes its metadata and fetches again.
        const fenced =
          code === ErrorCode.FENCED_LEADER_EPOCH || code === ErrorCode.FENCED_STATE_EPOCH;
        acked.results.set(key, {
          ...r,
          ackErrorCode: fenced ? ErrorCode.NOT_LEADER_OR_FOLLOWER : code,
        });
      }
    });
    return {
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      partitions: merge(acked.results, fetched),
    };
  }

  private fetchAll(
    session: ShareSession,
    params: ShareFetchParams,
    loadErrors: ReadonlyMap<string, KafkaError>,
  ): SharePartitionResult[] {
    let budgetBytes = Math.min(Math.max(0, params.maxBytes), this.settings.fetchMaxBytes);
    let recordsLeft = Math.max(1, params.maxRecords);
    const results: SharePartitionResult[] = [];
    let first = true;
    for (const key of session.partitions) {
      if (budgetBytes <= 0 || recordsLeft <= 0) break;
      const { topic, partition } = parseSessionPartitionKey(key);
      const loadError = loadErrors.get(key);
      const r =
        loadError === undefined
          ? this.fetchOne(session, topic, partition, budgetBytes, recordsLeft, first)
          : { ...emptyResult(topic, partition), errorCode: loadError.code, errorMessage: null };
      if (r === null) continue;
      for (const range of r.records) budgetBytes -= range.sizeBytes;
      for (const a of r.acquired) recordsLeft -= Number(a.lastOffset - a.firstOffset) + 1;
      if (r.records.length > 0) first = false;
      results.push(r);
    }
    return results;
  }

  /** Acquires and reads one partition; null when it has nothing for this member now. */
  private fetchOne(
    session: ShareSession,
    topic: string,
    partition: number,
    maxBytes: number,
    maxRecords: number,
    minOneMessage: boolean,
  ): SharePartitionResult | null {
    let log: UnifiedLog;
    try {
      log = this.replicaManager.leaderFor(topic, partition).log;
    } catch (e) {
      if (!(e instanceof KafkaError)) throw e;
      return { ...emptyResult(topic, partition), errorCode: e.code, errorMessage: e.message };
    }
    const sp = this.current(session.groupId, topic, partition);
    // Not loaded yet (it became this broker's during the request): the next fetch reads it.
    if (sp === undefined) {
      void this.load(session.groupId, topic, partition).catch(() => undefined);
      return null;
    }
    if (sp.startOffset < log.logStartOffset) sp.moveStartTo(log.logStartOffset);
    const from = sp.nextFetchOffset();
    if (from === null) this.nudgeHolders(session, stateKey(session.groupId, topic, partition), sp);
    if (from === null || from >= log.highWatermark) return null;
    const read = log.read(from, maxBytes, { maxOffset: log.highWatermark, minOneMessage });
    const range = read.ranges[0];
    if (range === undefined) return null;
    const batches = batchesOf(range);
    const { acquired, batchesUsed } = sp.acquire(session.memberId, batches, maxRecords);
    if (batchesUsed === 0) {
      range.release();
      return null;
    }
    const last = batches[batchesUsed - 1]!;
    const sizeBytes = last.position + last.sizeBytes - range.position;
    const records: FileRange[] = [
      sizeBytes === range.sizeBytes
        ? range
        : { ...range, sizeBytes, release: () => range.release() },
    ];
    return { ...emptyResult(topic, partition), records, acquired };
  }

  /**
   * A fetch that acquired nothing waits for records until `maxWaitMs` (Kafka's
   * DelayedShareFetch): each wake-up (an append, a release, the start moving) tries to acquire
   * again, and only an acquisition, the end of the wait or a cancellation answers. So one
   * acknowledgement does not send every waiting member an empty response to fetch again.
   */
  private async fetchWhenAvailable(
    session: ShareSession,
    params: ShareFetchParams,
    loadErrors: ReadonlyMap<string, KafkaError>,
    fetched: SharePartitionResult[],
  ): Promise<SharePartitionResult[]> {
    const deadlineMs = performance.now() + params.maxWaitMs;
    let result = fetched;
    for (;;) {
      const nothing = result.every((r) => r.acquired.length === 0 && r.errorCode === 0);
      const leftMs = Math.ceil(deadlineMs - performance.now());
      if (!nothing || session.partitions.size === 0 || leftMs <= 0) return result;
      const outcome = await this.waitForRecords(session, leftMs, params);
      // The release of a disconnected session's records wakes its own wait too.
      if (outcome === "cancelled" || !this.sessions.isOpen(session)) return [];
      result = this.fetchAll(session, params, loadErrors);
      if (outcome !== "data") return result;
    }
  }

  /** Waits for an append to, or a release in, one of the session's partitions. */
  private async waitForRecords(session: ShareSession, waitMs: number, params: ShareFetchParams) {
    const keys = [...session.partitions].map((k) => {
      const { topic, partition } = parseSessionPartitionKey(k);
      return topicPartitionKey(topic, partition);
    });
    const op = this.replicaManager.parkShareFetch(keys, waitMs);
    const waiter: ShareFetchWaiter = {
      op,
      memberId: session.memberId,
      keys: new Set([...session.partitions].map((k) => `${session.groupId}\u0000${k}`)),
      nudged: false,
    };
    this.waiters.add(waiter);
    const unsubscribe = params.onDisconnect(() => op.complete("cancelled"));
    const outcome = await op.done;
    unsubscribe();
    this.waiters.delete(waiter);
    return waiter.nudged ? "nudged" : outcome;
  }

  private wake(key: string): void {
    for (const w of this.waiters) if (w.keys.has(key)) w.op.complete("data");
  }

  /**
   * A member that holds nothing found the partition's in-flight window full: the records that
   * fill it are held by members whose next fetches would carry their acknowledgements. A Kafka
   * client sends at most one request to a broker at a time and fetches ahead, so a holder whose
   * prefetch is waiting here cannot send them until that wait ends. Those waits end now (empty
   * answers), so the window frees up in a round trip instead of `maxWaitMs`. Only members
   * holding nothing nudge, so holders cannot keep waking each other.
   */
  private nudgeHolders(session: ShareSession, key: string, sp: SharePartition): void {
    const holders = sp.holders();
    if (holders.has(session.memberId)) return;
    for (const w of this.waiters) {
      if (!w.nudged && w.keys.has(key) && holders.has(w.memberId)) {
        w.nudged = true;
        w.op.complete("data");
      }
    }
  }

  private releaseSession(session: ShareSession): void {
    for (const k of session.partitions) {
      const { topic, partition } = parseSessionPartitionKey(k);
      this.partitions
        .get(stateKey(session.groupId, topic, partition))
        ?.releaseMember(session.memberId);
    }
  }
}

/** A ShareFetch waiting for records to acquire. */
interface ShareFetchWaiter {
  readonly op: DelayedFetch;
  readonly memberId: string;
  /** The (group, partition) state keys it waits on. */
  readonly keys: Set<string>;
  /** Ended early so that its member can send its acknowledgements (see nudgeHolders). */
  nudged: boolean;
}

function batchesOf(range: FileRange): BatchEntry[] {
  const batches: BatchEntry[] = [];
  scanBatchHeaders(range.fd, range.position, range.position + range.sizeBytes, (entry) => {
    batches.push(entry);
    return true;
  });
  return batches;
}

function stateKey(groupId: string, topic: string, partition: number): string {
  return `${groupId}\u0000${topic}\u0000${partition}`;
}

function parseStateKey(key: string) {
  const [groupId, topic, partition] = key.split("\u0000");
  return { groupId: groupId!, topic: topic!, partition: Number(partition) };
}

function emptyResult(topic: string, partition: number): SharePartitionResult {
  return {
    topic,
    partition,
    errorCode: ErrorCode.NONE,
    errorMessage: null,
    ackErrorCode: ErrorCode.NONE,
    records: [],
    acquired: [],
  };
}

function failed(errorCode: number, errorMessage: string): ShareResult {
  return { errorCode, errorMessage, partitions: [] };
}

/** One entry per partition: a fetched partition carries its acknowledgement result too. */
function merge(acked: Map<string, SharePartitionResult>, fetched: SharePartitionResult[]) {
  const out = new Map(acked);
  for (const r of fetched) {
    const key = sessionPartitionKey(r.topic, r.partition);
    const ack = acked.get(key);
    out.set(key, ack === undefined ? r : { ...r, ackErrorCode: ack.ackErrorCode });
  }
  return [...out.values()];
}
