import type { TopicPartitionKey } from "../common/topic-partition.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { assert } from "../util/assert.ts";

/** One partition of an acks=-1 produce, waiting for its batch to be replicated. */
export interface ProduceWait {
  readonly partitionKey: TopicPartitionKey;
  /**
   * Says whether the batch is replicated (its error code then final), re-run whenever the
   * partition's high watermark, ISR or leadership changes.
   */
  readonly check: () => { readonly outcome: "waiting" | "done"; readonly errorCode: number };
}

/**
 * acks=-1 produces waiting for the ISR (Kafka's DelayedProduce in a purgatory). Each watches its
 * partitions and completes when every one is done (the high watermark passed its batch, or an
 * error such as losing leadership), or with REQUEST_TIMED_OUT for those still waiting once the
 * request's timeout passes. Checking only on events for a watched partition keeps the cost of a
 * high-watermark move O(produces waiting on that partition).
 */
export class DelayedProducePurgatory {
  private readonly watchersByPartition = new Map<TopicPartitionKey, Set<DelayedProduce>>();
  private parkedCount = 0;

  constructor(private readonly parkedMax: number) {
    assert(parkedMax > 0, `parkedMax must be positive, got ${parkedMax}`);
  }

  /** Produces waiting right now; bounded by `parkedMax`. */
  get size(): number {
    return this.parkedCount;
  }

  /**
   * Waits for every partition of one produce; resolves with an error code per wait (in order).
   * A full purgatory answers REQUEST_TIMED_OUT at once: the records are written, so a retry is
   * the producer's way to learn their fate, exactly as after a real timeout.
   */
  park(waits: readonly ProduceWait[], timeoutMs: number): Promise<number[]> {
    const op = new DelayedProduce(waits, (o) => this.unwatch(o));
    if (op.tryComplete()) return op.done;
    if (this.parkedCount >= this.parkedMax) {
      op.expire();
      return op.done;
    }
    this.parkedCount++;
    for (const w of waits) {
      let set = this.watchersByPartition.get(w.partitionKey);
      if (set === undefined) {
        set = new Set();
        this.watchersByPartition.set(w.partitionKey, set);
      }
      set.add(op);
    }
    op.startTimer(timeoutMs);
    return op.done;
  }

  /** Re-checks the produces watching a partition (its HW, ISR or leadership changed). */
  checkAndComplete(partitionKey: TopicPartitionKey): void {
    const set = this.watchersByPartition.get(partitionKey);
    if (set === undefined) return;
    for (const op of [...set]) op.tryComplete();
  }

  /** Re-checks every waiting produce (e.g. after leadership changes in bulk). */
  checkAll(): void {
    for (const key of [...this.watchersByPartition.keys()]) this.checkAndComplete(key);
  }

  /** Ends every wait with REQUEST_TIMED_OUT for what is not done (shutdown). */
  expireAll(): void {
    for (const set of [...this.watchersByPartition.values()]) {
      for (const op of [...set]) op.expire();
    }
  }

  private unwatch(op: DelayedProduce): void {
    this.parkedCount--;
    assert(this.parkedCount >= 0, "parked produce count went negative");
    for (const w of op.waits) {
      const set = this.watchersByPartition.get(w.partitionKey);
      if (set === undefined) continue;
      set.delete(op);
      if (set.size === 0) this.watchersByPartition.delete(w.partitionKey);
    }
  }
}

class DelayedProduce {
  readonly done: Promise<number[]>;
  private resolve!: (codes: number[]) => void;
  private readonly codes: (number | null)[];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private completed = false;
  private watching = false;

  constructor(
    readonly waits: readonly ProduceWait[],
    private readonly onDone: (op: DelayedProduce) => void,
  ) {
    this.codes = waits.map(() => null);
    this.done = new Promise((resolve) => {
      this.resolve = resolve;
    });
  }

  startTimer(timeoutMs: number): void {
    this.watching = true;
    this.timer = setTimeout(() => this.expire(), Math.max(0, timeoutMs));
  }

  /** Checks the partitions still waiting; true (and resolved) once all are done. */
  tryComplete(): boolean {
    if (this.completed) return true;
    let waiting = 0;
    this.waits.forEach((w, i) => {
      if (this.codes[i] !== null) return;
      const r = w.check();
      if (r.outcome === "done") this.codes[i] = r.errorCode;
      else waiting++;
    });
    if (waiting > 0) return false;
    this.finish();
    return true;
  }

  expire(): void {
    if (this.completed) return;
    for (let i = 0; i < this.codes.length; i++) this.codes[i] ??= ErrorCode.REQUEST_TIMED_OUT;
    this.finish();
  }

  private finish(): void {
    this.completed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.watching) this.onDone(this);
    this.resolve(this.codes.map((c) => c ?? ErrorCode.REQUEST_TIMED_OUT));
  }
}
