/**
 * A store's compaction while its writes go on (the embedded offset store's and the share state
 * store's): a snapshot of a keyed state is rewritten and the store's log emptied without holding
 * the event loop or the writes.
 *
 * 1. The fold starts: every key of `source` is encoded in slices (TurnSlices) with a turn between
 *    them while the store goes on writing; each key the store changes meanwhile is marked dirty.
 *    A key added during the walk is reached too (a Map iterates in insertion order).
 * 2. Once every key is encoded (`encoded`), the store's write loop calls `finish` between two
 *    writes: the dirty keys are encoded again (or dropped when gone), so the parts are exactly
 *    the state the log holds then, and the store writes them and empties its log. Until `finish`
 *    settles the state may not change: `markDirty` asserts it.
 *
 * A fold whose store closed during step 1 stops (`encoded` stays false, the log keeps
 * everything); one that failed is reported to `onFailed`.
 */
import { assert } from "./assert.ts";
import { TurnSlices } from "./turn-slices.ts";

/** One key's encoding; it may give the loop turns itself through `slices`. */
export type FoldEncoder<V, E> = (key: string, value: V, slices: TurnSlices) => E | Promise<E>;

export interface SnapshotFoldOptions {
  /** Event-loop time one slice may take (0: a turn after every key). */
  readonly sliceMs: number;
  /** True once the store closed: the fold stops. */
  readonly stopped: () => boolean;
  /** Every key is encoded: the store's write loop should run to finish the fold. */
  readonly onEncoded: () => void;
  readonly onFailed: (error: unknown) => void;
}

export class SnapshotFold<V, E> {
  /** Each key's encoding, in the order the fold reached it. */
  readonly parts = new Map<string, E>();
  /** Every key is encoded: the store's write loop finishes the fold before its next write. */
  encoded = false;
  /** Settles (never rejects) once step 1 ended and its outcome was handed to the options. */
  readonly encoding: Promise<void>;
  private readonly dirty = new Set<string>();
  private finishing = false;

  constructor(
    private readonly source: ReadonlyMap<string, V>,
    private readonly encode: FoldEncoder<V, E>,
    private readonly options: SnapshotFoldOptions,
  ) {
    this.encoding = this.encodeAll().then(
      (complete) => {
        if (!complete) return;
        this.encoded = true;
        options.onEncoded();
      },
      (error: unknown) => options.onFailed(error),
    );
  }

  /** The store changed `key` (wrote or removed it). */
  markDirty(key: string): void {
    assert(!this.finishing, `${key} changed while a fold finishes`);
    this.dirty.add(key);
  }

  /**
   * Step 2: encodes the dirty keys again, then has `write` store the parts (given the slices, so
   * it can go on cutting its own work into them) and empty the log.
   */
  async finish(write: (parts: Iterable<E>, slices: TurnSlices) => Promise<void>): Promise<void> {
    assert(this.encoded, "a fold finished before every key was encoded");
    this.finishing = true;
    try {
      const slices = new TurnSlices(this.options.sliceMs);
      for (const key of this.dirty) {
        const value = this.source.get(key);
        if (value === undefined) this.parts.delete(key);
        else this.parts.set(key, await this.encode(key, value, slices));
        if (slices.due()) await slices.next();
      }
      await write(this.parts.values(), slices);
    } finally {
      this.finishing = false;
    }
  }

  /** Step 1: true once every key is encoded, false when the store closed meanwhile. */
  private async encodeAll(): Promise<boolean> {
    const slices = new TurnSlices(this.options.sliceMs);
    for (const [key, value] of this.source) {
      const part = this.encode(key, value, slices);
      // A synchronous encoder's result is taken as it is: no microtask per key.
      this.parts.set(key, part instanceof Promise ? await part : part);
      if (slices.due()) await slices.next();
      if (this.options.stopped()) return false;
    }
    return true;
  }
}
