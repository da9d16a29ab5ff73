import * as fs from "node:fs";
import { join } from "node:path";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { concatFrames, encodeFrame, readFrames } from "../storage/checksummed-frames.ts";
import {
  fdatasyncFdInBackground,
  fsyncDirectory,
  readFileIfExists,
  replaceLogWithSnapshot,
  writeFully,
} from "../storage/durable-file.ts";
import { assert } from "../util/assert.ts";
import type { Logger } from "../util/logger.ts";
import { SnapshotFold } from "../util/snapshot-fold.ts";
import type { SharePartitionSnapshot } from "./share-partition.ts";
import type {
  ShareStateEpochs,
  ShareStateStore,
  StoredShareState,
} from "./share-partition-manager.ts";

/**
 * Share-partition state on disk in embedded mode (docs/share-groups.md, "Durability"), as the
 * local offset store keeps commits: an append-only log, `share-group-state.log`, of whole
 * share-partition states, and a snapshot, `share-group-state.json`, of every partition's state.
 *
 * Group commit: a write starts as soon as the previous one ends (or on the next turn of the
 * event loop when none runs), appends the state of every partition changed meanwhile with one
 * write, and fdatasyncs it on the thread pool; `save` resolves once the write holding its change
 * is synced. So an acknowledgement answered after `save` survives kill -9 and power loss, as
 * Kafka answers once its share coordinator has the state in its log.
 *
 * Once the log passes LOG_COMPACT_BYTES the snapshot is rewritten (temporary file, fdatasync,
 * rename, directory fsync) and the log emptied, without holding the event loop or the writes:
 * every partition's state is encoded in slices of foldSliceMs with a turn between them while
 * writes go on, those changed meanwhile marked dirty; then, between two writes, the dirty ones
 * are encoded again (the snapshot is exactly what the log holds then), the snapshot written and
 * the log emptied, changes made during that last part waiting for the next write. Replaying
 * the log over a snapshot that already holds it gives the same state (every frame replaces a
 * partition's state), so a crash between the rename and the truncate is harmless; a torn last
 * frame (a crash mid-write, never acknowledged) is cut off on open.
 *
 * Frames: checksummed frames (storage/checksummed-frames.ts) of UTF-8 JSON, a StoredPartition
 * or a removal. In-flight records are run-length encoded
 * ([state, deliveryCount, run]): a window of `group.share.partition.max.record.locks` records
 * is usually a few runs.
 */

export const SHARE_STATE_FILE = "share-group-state.json";
export const SHARE_STATE_LOG_FILE = "share-group-state.log";
const FORMAT_VERSION = 1;
/** The log is folded into the snapshot once it is this long (by default). */
const LOG_COMPACT_BYTES = 16 << 20;
/** Event-loop time one slice of the snapshot's encoding may take (as the offset store's fold). */
const FOLD_SLICE_MS = 2;
/** Characters of JSON joined and encoded at once when the snapshot is written. */
const SNAPSHOT_CHUNK_CHARS = 256 << 10;
/** A longer length field on disk is a torn or corrupt tail. */
const FRAME_PAYLOAD_BYTES_MAX = 16 << 20;

interface StoredPartition {
  readonly group: string;
  readonly topic: string;
  readonly partition: number;
  readonly startOffset: string;
  readonly runs: readonly (readonly [number, number, number])[];
}

/** A log frame: a partition's new state, or its removal. */
type LogEntry = StoredPartition | Removal;

interface Removal {
  readonly group: string;
  readonly topic: string;
  readonly partition: number;
  readonly removed: true;
}

interface PendingPartition {
  readonly groupId: string;
  readonly topic: string;
  readonly partition: number;
  /** Null: the partition's state is removed. */
  readonly state: (() => SharePartitionSnapshot) | null;
}

/** A compaction while writes go on (see startFold): each partition's state as JSON. */
type Fold = SnapshotFold<StoredPartition, string>;

/** Counters for tests: how changes are grouped into syncs. */
export interface ShareStateStoreStats {
  readonly syncs: number;
  readonly framesWritten: number;
  readonly compactions: number;
}

export class LocalShareStateStore implements ShareStateStore {
  private readonly states = new Map<string, StoredPartition>();
  /** Partitions changed since the last write began: snapshotted when the next one starts. */
  private pending = new Map<string, PendingPartition>();
  /** Resolved with the error code of the write that holds the pending changes. */
  private waiters: ((errorCode: number) => void)[] = [];
  /** Changes a failed write did not store: written again with the next change. */
  private unwritten = new Map<string, PendingPartition>();
  /** The states the running write stores (null: removed), until it is done. */
  private inFlight = new Map<string, StoredPartition | null>();
  private readonly filePath: string;
  private readonly logPath: string;
  private readonly logFd: number;
  private logSizeBytes: number;
  private scheduled = false;
  private writing: Promise<void> | null = null;
  private closed = false;
  private syncs = 0;
  private framesWritten = 0;
  private compactions = 0;
  /** The compaction under way, if any (see startFold). */
  private fold: Fold | null = null;
  /** Log size at which the next compaction runs; pushed further out when one fails. */
  private compactAtBytes: number;

  constructor(
    logDir: string,
    private readonly log: Logger,
    private readonly compactLogBytes = LOG_COMPACT_BYTES,
    /** 0: a turn after every partition's state (tests). */
    private readonly foldSliceMs = FOLD_SLICE_MS,
  ) {
    assert(compactLogBytes > 0, `compactLogBytes ${compactLogBytes} is not positive`);
    this.compactAtBytes = compactLogBytes;
    this.filePath = join(logDir, SHARE_STATE_FILE);
    this.logPath = join(logDir, SHARE_STATE_LOG_FILE);
    this.readSnapshot();
    const created = !fs.existsSync(this.logPath);
    // Written at the size it tracks (not O_APPEND): a failed write's tail is cut off with it.
    this.logFd = fs.openSync(this.logPath, fs.constants.O_WRONLY | fs.constants.O_CREAT);
    if (created) fsyncDirectory(logDir);
    this.logSizeBytes = this.replayLog();
  }

  get stats(): ShareStateStoreStats {
    const { syncs, framesWritten, compactions } = this;
    return { syncs, framesWritten, compactions };
  }

  load(groupId: string, topic: string, partition: number): Promise<StoredShareState> {
    const k = key(groupId, topic, partition);
    const pending = this.pending.get(k) ?? this.unwritten.get(k);
    const stored =
      pending !== undefined
        ? storedOf(pending)
        : this.inFlight.has(k)
          ? this.inFlight.get(k)
          : this.states.get(k);
    if (stored === undefined || stored === null) {
      return Promise.resolve({ stateEpoch: 0, snapshot: null });
    }
    const records: [number, number][] = [];
    for (const [state, count, run] of stored.runs) {
      for (let i = 0; i < run; i++) records.push([state, count]);
    }
    const snapshot = { startOffset: BigInt(stored.startOffset), records };
    return Promise.resolve({ stateEpoch: 0, snapshot });
  }

  /** Resolves with the error code of the write holding this change, once it is synced. */
  save(
    groupId: string,
    topic: string,
    partition: number,
    _epochs: ShareStateEpochs,
    state: () => SharePartitionSnapshot,
  ): Promise<number> {
    if (this.closed) return Promise.resolve(ErrorCode.KAFKA_STORAGE_ERROR as number);
    this.pending.set(key(groupId, topic, partition), { groupId, topic, partition, state });
    const done = new Promise<number>((resolve) => this.waiters.push(resolve));
    this.schedule();
    return done;
  }

  /**
   * Resolves once the removal is synced (at once after close: shutting down, nothing is
   * written); rejects (KafkaError) when its write failed.
   */
  async remove(groupId: string, topic: string, partition: number): Promise<void> {
    if (this.closed) return;
    const k = key(groupId, topic, partition);
    // A state only in the running write is stored once it ends: its removal must follow it.
    const known = this.states.has(k) || this.inFlight.has(k);
    if (!known && !this.pending.has(k) && !this.unwritten.has(k)) return;
    this.pending.set(k, { groupId, topic, partition, state: null });
    const done = new Promise<number>((resolve) => this.waiters.push(resolve));
    this.schedule();
    const code = await done;
    if (code !== ErrorCode.NONE) throw new KafkaError(code, "removing share state failed");
  }

  /**
   * The partitions the group has state for, stored or about to be (DeleteGroups of a share group
   * whose membership is gone, after a restart). Scans every stored partition: an admin call.
   */
  partitionsOf(groupId: string): { topic: string; partition: number }[] {
    const found = new Map<string, { topic: string; partition: number }>();
    for (const s of this.states.values()) {
      if (s.group === groupId) found.set(key(s.group, s.topic, s.partition), s);
    }
    for (const [k, s] of this.inFlight) {
      if (s === null) found.delete(k);
      else if (s.group === groupId) found.set(k, s);
    }
    for (const pending of [this.unwritten, this.pending]) {
      for (const [k, p] of pending) {
        if (p.groupId !== groupId) continue;
        if (p.state === null) found.delete(k);
        else found.set(k, p);
      }
    }
    return [...found.values()].map(({ topic, partition }) => ({ topic, partition }));
  }

  /** Writes what is pending, then closes the log. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.retryUnwritten();
    // A fold not yet encoded is given up (the log keeps everything); one encoded is finished.
    await this.fold?.encoding;
    while (this.writing !== null || this.pending.size > 0 || this.fold?.encoded) {
      await (this.writing ?? this.flush());
    }
    fs.closeSync(this.logFd);
  }

  private schedule(): void {
    this.retryUnwritten();
    if (this.scheduled || this.writing !== null) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.writing === null && (this.pending.size > 0 || this.fold?.encoded)) void this.flush();
    });
  }

  /** Writes until nothing is pending: each pass holds every change made during the last. */
  private flush(): Promise<void> {
    assert(this.writing === null, "one share-state write at a time");
    this.writing = (async () => {
      for (;;) {
        if (this.fold?.encoded) await this.finishFold(this.fold);
        if (this.pending.size === 0) return;
        await this.writeBatch();
        const due = this.logSizeBytes >= this.compactAtBytes;
        if (due && this.fold === null && !this.closed) this.startFold();
      }
    })().finally(() => {
      this.writing = null;
      if (this.pending.size > 0 || this.fold?.encoded) this.schedule();
    });
    return this.writing;
  }

  private async writeBatch(): Promise<void> {
    const batch = this.pending;
    const waiters = this.waiters;
    this.pending = new Map();
    this.waiters = [];
    const entries: [string, StoredPartition | null][] = [];
    for (const [k, p] of batch) entries.push([k, storedOf(p)]);
    this.inFlight = new Map(entries);
    const frames = entries.map(([k, e]) => frame(e ?? removal(batch, k)));
    const bytes = concatFrames(frames);
    const sizeBefore = this.logSizeBytes;
    let code: number = ErrorCode.NONE;
    try {
      writeFully(this.logFd, bytes, sizeBefore);
      await fdatasyncFdInBackground(this.logFd);
      this.logSizeBytes = sizeBefore + bytes.length;
      this.syncs++;
      this.framesWritten += entries.length;
      for (const [k, e] of entries) {
        this.fold?.markDirty(k);
        if (e === null) this.states.delete(k);
        else this.states.set(k, e);
      }
    } catch (e) {
      code = ErrorCode.KAFKA_STORAGE_ERROR;
      this.log.error(`writing ${this.logPath} failed: ${String(e)}`);
      // Cut off whatever reached the file (nothing of it was acknowledged) and write these
      // partitions again with the next change, unless a newer change is already pending.
      truncateQuietly(this.logFd, sizeBefore);
      for (const [k, p] of batch) this.unwritten.set(k, p);
    }
    this.inFlight = new Map();
    for (const resolve of waiters) resolve(code);
  }

  /** A new change (or the stop) writes what a failed write left again, unless newer. */
  private retryUnwritten(): void {
    for (const [k, p] of this.unwritten) if (!this.pending.has(k)) this.pending.set(k, p);
    this.unwritten.clear();
  }

  /** Starts folding the log into the snapshot (see the class comment). */
  private startFold(): void {
    this.fold = new SnapshotFold(this.states, (_k, p) => JSON.stringify(p), {
      sliceMs: this.foldSliceMs,
      stopped: () => this.closed,
      onEncoded: () => this.schedule(),
      onFailed: (e) => this.foldFailed(e),
    });
  }

  /**
   * Runs in the write loop between two writes, so `states` holds exactly what the log does and
   * stays so until the log is emptied (SnapshotFold.finish): writes
   * `{"version":1,"partitions":[...]}` as one chunk of UTF-8 per slice, empties the log. A
   * failure keeps the log (it still holds everything).
   */
  private async finishFold(fold: Fold): Promise<void> {
    try {
      await fold.finish(async (parts, slices) => {
        const encoder = new TextEncoder();
        const chunks = [encoder.encode(`{"version":${FORMAT_VERSION},"partitions":[`)];
        let joined: string[] = [];
        let joinedChars = 0;
        const endChunk = (): void => {
          if (joined.length === 0) return;
          chunks.push(encoder.encode((chunks.length === 1 ? "" : ",") + joined.join(",")));
          joined = [];
          joinedChars = 0;
        };
        for (const part of parts) {
          joined.push(part);
          joinedChars += part.length;
          // Joining and encoding cost by the character: a chunk is bounded in size too.
          if (joinedChars >= SNAPSHOT_CHUNK_CHARS) endChunk();
          if (!slices.due()) continue;
          endChunk();
          await slices.next();
        }
        endChunk();
        chunks.push(encoder.encode("]}"));
        await replaceLogWithSnapshot(this.filePath, chunks, this.logFd, () => {
          this.logSizeBytes = 0;
        });
      });
      this.compactions++;
      this.compactAtBytes = this.compactLogBytes;
      this.fold = null;
    } catch (e) {
      this.foldFailed(e);
    }
  }

  private foldFailed(e: unknown): void {
    this.fold = null;
    this.compactAtBytes = this.logSizeBytes + this.compactLogBytes;
    this.log.error(`compacting ${this.logPath} into ${this.filePath} failed: ${String(e)}`);
  }

  private readSnapshot(): void {
    fs.rmSync(`${this.filePath}.async.tmp`, { force: true });
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

  /** Applies the log's frames; cuts a torn tail off. Returns the log's valid length. */
  private replayLog(): number {
    const bytes = fs.readFileSync(this.logPath);
    const decoder = new TextDecoder("utf-8", { fatal: true });
    const validBytes = readFrames(bytes, FRAME_PAYLOAD_BYTES_MAX, (payload) => {
      const entry = JSON.parse(decoder.decode(payload)) as LogEntry;
      const k = key(entry.group, entry.topic, entry.partition);
      if ("removed" in entry) this.states.delete(k);
      else this.states.set(k, entry);
    });
    if (validBytes < bytes.length) {
      this.log.warn(`${this.logPath}: cutting off a torn tail at byte ${validBytes}`);
      fs.ftruncateSync(this.logFd, validBytes);
      fs.fsyncSync(this.logFd);
    }
    return validBytes;
  }
}

function removal(batch: Map<string, PendingPartition>, k: string): LogEntry {
  const p = batch.get(k)!;
  return { group: p.groupId, topic: p.topic, partition: p.partition, removed: true };
}

/** The partition's state to store; null when it is removed. */
function storedOf(p: PendingPartition): StoredPartition | null {
  if (p.state === null) return null;
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

function frame(entry: LogEntry): Uint8Array {
  return encodeFrame(new TextEncoder().encode(JSON.stringify(entry)));
}

function truncateQuietly(fd: number, length: number): void {
  try {
    fs.ftruncateSync(fd, length);
  } catch {
    // A tail left behind holds only unacknowledged changes; the next write supersedes them.
  }
}

function key(groupId: string, topic: string, partition: number): string {
  return `${groupId}\u0000${topic}\u0000${partition}`;
}
