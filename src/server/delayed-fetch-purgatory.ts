import type { TopicPartitionKey } from "../common/topic-partition.ts";
import { assert } from "../util/assert.ts";

/**
 * Long-poll fetches (Kafka's DelayedFetch in a DelayedOperationPurgatory). A fetch that found fewer
 * than `minBytes` parks here, watching its partitions; it completes when appends to them have
 * added at least the missing bytes, when `maxWaitMs` passes, or when its connection goes away.
 *
 * Counting appended bytes instead of re-reading the logs on every append keeps an append O(watchers
 * of that partition) with no I/O. It can complete a fetch a little early (bytes appended above a
 * fetch's offset count even if that fetch would skip them), which only costs one extra round trip
 * for the client, never a missed wake-up.
 */
export class DelayedFetchPurgatory {
  private readonly watchersByPartition = new Map<TopicPartitionKey, Set<DelayedFetch>>();
  private parkedCount = 0;

  constructor(private readonly parkedMax: number) {
    assert(parkedMax > 0, `parkedMax must be positive, got ${parkedMax}`);
  }

  /** Parked fetches right now; bounded by `parkedMax`. */
  get size(): number {
    return this.parkedCount;
  }

  /**
   * Parks a fetch. Resolves with "data" when enough bytes arrived, "timeout" when `maxWaitMs`
   * passed, or at once with "full" when the purgatory is at its limit (the caller then answers
   * with what it has, as if the wait had ended).
   */
  park(
    partitionKeys: readonly TopicPartitionKey[],
    missingBytes: number,
    maxWaitMs: number,
  ): DelayedFetch {
    const op = new DelayedFetch(partitionKeys, missingBytes, (o) => this.unwatch(o));
    if (this.parkedCount >= this.parkedMax) {
      op.complete("full");
      return op;
    }
    this.parkedCount++;
    for (const key of partitionKeys) {
      let set = this.watchersByPartition.get(key);
      if (set === undefined) {
        set = new Set();
        this.watchersByPartition.set(key, set);
      }
      set.add(op);
    }
    op.startTimer(maxWaitMs);
    return op;
  }

  /** Called after every successful append to a partition. */
  onAppend(partitionKey: TopicPartitionKey, appendedBytes: number): void {
    const set = this.watchersByPartition.get(partitionKey);
    if (set === undefined) return;
    for (const op of [...set]) op.addBytes(appendedBytes);
  }

  /**
   * Wakes the fetches watching any partition the predicate picks, e.g. partitions of a topic
   * that was just deleted: their answer (an error) is ready now, not at the end of the wait.
   */
  wakeWhere(pick: (partitionKey: TopicPartitionKey) => boolean): void {
    for (const [key, set] of [...this.watchersByPartition]) {
      if (!pick(key)) continue;
      for (const op of [...set]) op.complete("data");
    }
  }

  /** Completes every parked fetch, e.g. on shutdown, so no request waits out its timer. */
  completeAll(): void {
    for (const set of [...this.watchersByPartition.values()]) {
      for (const op of [...set]) op.complete("timeout");
    }
  }

  private unwatch(op: DelayedFetch): void {
    this.parkedCount--;
    assert(this.parkedCount >= 0, "parked fetch count went negative");
    for (const key of op.partitionKeys) {
      const set = this.watchersByPartition.get(key);
      if (set === undefined) continue;
      set.delete(op);
      if (set.size === 0) this.watchersByPartition.delete(key);
    }
  }
}

export type DelayedFetchOutcome = "data" | "timeout" | "full" | "cancelled";

export class DelayedFetch {
  readonly done: Promise<DelayedFetchOutcome>;
  private resolve!: (outcome: DelayedFetchOutcome) => void;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private completed = false;
  private watching = false;

  constructor(
    readonly partitionKeys: readonly TopicPartitionKey[],
    private missingBytes: number,
    private readonly onDone: (op: DelayedFetch) => void,
  ) {
    this.done = new Promise((resolve) => {
      this.resolve = resolve;
    });
  }

  startTimer(maxWaitMs: number): void {
    this.watching = true;
    this.timer = setTimeout(() => this.complete("timeout"), Math.max(0, maxWaitMs));
  }

  addBytes(appendedBytes: number): void {
    this.missingBytes -= appendedBytes;
    if (this.missingBytes <= 0) this.complete("data");
  }

  /** Idempotent: the first outcome wins. */
  complete(outcome: DelayedFetchOutcome): void {
    if (this.completed) return;
    this.completed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.watching) this.onDone(this);
    this.resolve(outcome);
  }
}
