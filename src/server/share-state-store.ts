import { join } from "node:path";
import {
  readFileIfExists,
  writeFileAtomically,
  writeFileAtomicallyInBackground,
} from "../storage/durable-file.ts";
import type { Logger } from "../util/logger.ts";
import type { SharePartitionSnapshot } from "./share-partition.ts";
import type {
  ShareStateEpochs,
  ShareStateStore,
  StoredShareState,
} from "./share-partition-manager.ts";

/**
 * Share-partition state on disk in embedded mode (docs/share-groups.md, "Durability"): every
 * share partition's start offset and in-flight states in one JSON file of the first log dir,
 * `share-group-state.json`, replaced atomically. Changes are batched: the file is rewritten at
 * most every FLUSH_INTERVAL_MS, with the write and its fdatasync on the thread pool, and once
 * more synchronously on a clean stop. A crash loses at most the last interval's changes, whose
 * records are then delivered again (at least once, never lost).
 *
 * In-flight records are stored run-length encoded ([state, deliveryCount, run]): a window of
 * `group.share.partition.max.record.locks` records is usually a few runs.
 */

export const SHARE_STATE_FILE = "share-group-state.json";
const FLUSH_INTERVAL_MS = 100;
const FORMAT_VERSION = 1;
const SAVED: Promise<number> = Promise.resolve(0);

interface StoredPartition {
  readonly group: string;
  readonly topic: string;
  readonly partition: number;
  readonly startOffset: string;
  readonly runs: readonly (readonly [number, number, number])[];
}

export class LocalShareStateStore implements ShareStateStore {
  private readonly states = new Map<string, StoredPartition>();
  /** Partitions changed since the last write: snapshotted when the file is written. */
  private readonly pending = new Map<string, PendingPartition>();
  private readonly filePath: string;
  private dirty = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private writing: Promise<void> | null = null;
  private closed = false;

  constructor(
    logDir: string,
    private readonly log: Logger,
  ) {
    this.filePath = join(logDir, SHARE_STATE_FILE);
    const bytes = readFileIfExists(this.filePath);
    if (bytes === null) return;
    const parsed = JSON.parse(new TextDecoder().decode(bytes)) as {
      version: number;
      partitions: StoredPartition[];
    };
    if (parsed.version !== FORMAT_VERSION) {
      throw new Error(`${this.filePath}: unknown format version ${parsed.version}`);
    }
    for (const p of parsed.partitions) this.states.set(key(p.group, p.topic, p.partition), p);
  }

  load(groupId: string, topic: string, partition: number): Promise<StoredShareState> {
    const stored = this.states.get(key(groupId, topic, partition));
    if (stored === undefined) return Promise.resolve({ stateEpoch: 0, snapshot: null });
    const records: [number, number][] = [];
    for (const [state, count, run] of stored.runs) {
      for (let i = 0; i < run; i++) records.push([state, count]);
    }
    const snapshot = { startOffset: BigInt(stored.startOffset), records };
    return Promise.resolve({ stateEpoch: 0, snapshot });
  }

  /** Resolves at once: the file is written within FLUSH_INTERVAL_MS (see above). */
  save(
    groupId: string,
    topic: string,
    partition: number,
    _epochs: ShareStateEpochs,
    state: () => SharePartitionSnapshot,
  ): Promise<number> {
    this.pending.set(key(groupId, topic, partition), { groupId, topic, partition, state });
    this.markDirty();
    return SAVED;
  }

  remove(groupId: string, topic: string, partition: number): void {
    const k = key(groupId, topic, partition);
    this.pending.delete(k);
    if (this.states.delete(k)) this.markDirty();
  }

  /** Writes what is pending, synchronously (a clean stop). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.writing;
    if (this.dirty) writeFileAtomically(this.filePath, this.encode());
    this.dirty = false;
  }

  private markDirty(): void {
    this.dirty = true;
    if (this.timer !== null || this.writing !== null || this.closed) return;
    this.timer = setTimeout(() => this.flush(), FLUSH_INTERVAL_MS);
    this.timer.unref();
  }

  private flush(): void {
    this.timer = null;
    if (!this.dirty || this.closed) return;
    this.dirty = false;
    this.writing = writeFileAtomicallyInBackground(this.filePath, this.encode())
      .then(
        () => {},
        (e: unknown) => {
          // Kept dirty: the next change (or the stop) writes again.
          this.dirty = true;
          this.log.error(`writing ${this.filePath} failed: ${String(e)}`);
        },
      )
      .finally(() => {
        this.writing = null;
        if (this.dirty) this.markDirty();
      });
  }

  private encode(): Uint8Array {
    for (const [k, p] of this.pending) this.states.set(k, stored(p));
    this.pending.clear();
    const body = { version: FORMAT_VERSION, partitions: [...this.states.values()] };
    return new TextEncoder().encode(JSON.stringify(body));
  }
}

interface PendingPartition {
  readonly groupId: string;
  readonly topic: string;
  readonly partition: number;
  readonly state: () => SharePartitionSnapshot;
}

function stored(p: PendingPartition): StoredPartition {
  const state = p.state();
  const runs: [number, number, number][] = [];
  for (const [s, count] of state.records) {
    const last = runs.at(-1);
    if (last !== undefined && last[0] === s && last[1] === count) last[2]++;
    else runs.push([s, count, 1]);
  }
  return {
    group: p.groupId,
    topic: p.topic,
    partition: p.partition,
    startOffset: state.startOffset.toString(),
    runs,
  };
}

function key(groupId: string, topic: string, partition: number): string {
  return `${groupId}\u0000${topic}\u0000${partition}`;
}
