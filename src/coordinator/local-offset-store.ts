import * as fs from "node:fs";
import * as path from "node:path";
import {
  type TopicPartitionKey,
  topicPartitionKey,
  topicPartitionOf,
} from "../common/topic-partition.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { concatFrames } from "../storage/checksummed-frames.ts";
import {
  fdatasyncFdInBackground,
  fsyncDirectory,
  replaceLogWithSnapshot,
  writeFully,
} from "../storage/durable-file.ts";
import { assert } from "../util/assert.ts";
import { type Logger, SILENT_LOGGER } from "../util/logger.ts";
import { SnapshotFold } from "../util/snapshot-fold.ts";
import type { TurnSlices } from "../util/turn-slices.ts";
import {
  encodeRecord,
  type OffsetLogRecord,
  type PartitionRef,
  readRecords,
  type StoredOffset,
} from "./offset-log-record.ts";
import type { CommittedOffset, OffsetStore, StoredGroupMetadata } from "./offset-store.ts";

export const OFFSETS_DIR_NAME = "__consumer_offsets";
const LOG_FILE = "commits.log";
const SNAPSHOT_FILE = "offsets.snapshot";
/** The snapshot being written (writeFileAtomicallyInBackground's name), and an older one's. */
const SNAPSHOT_TEMP_FILES = ["offsets.snapshot.async.tmp", "offsets.snapshot.tmp"];
const MEMBERSHIP_DIR_NAME = "membership";

export interface LocalOffsetStoreOptions {
  /** Compact the log into a snapshot once it grows past this many bytes. */
  readonly compactLogBytes?: number;
  /** Bytes of commits waiting for the next fsync; beyond it commits fail (retriable). */
  readonly pendingBytesMax?: number;
  /** Event-loop time one slice of a compaction's snapshot encoding may take (0: one group). */
  readonly foldSliceMs?: number;
  readonly logger?: Logger;
}

const DEFAULT_COMPACT_LOG_BYTES = 64 << 20;
const DEFAULT_PENDING_BYTES_MAX = 256 << 20;
/**
 * A fold of 200,000 offsets encodes for about 200 ms of CPU: in 2 ms slices the longest stall
 * of the loop it causes is about 10 ms, two slices and a garbage collection
 * (docs/consumer-groups.md, embedded mode's offsets).
 */
const DEFAULT_FOLD_SLICE_MS = 2;
/**
 * Offsets per snapshot record: a group with more is written as several commit records, which
 * replay merges, so no record outgrows RECORD_PAYLOAD_BYTES_MAX and one record's encoding
 * stays well under a slice.
 */
const SNAPSHOT_RECORD_OFFSETS_MAX = 1_000;
/** Bytes of snapshot frames copied into one chunk at once when the snapshot is written. */
const SNAPSHOT_CHUNK_BYTES = 256 << 10;

/** A compaction while commits go on (see startFold): each group's snapshot frames. */
type Fold = SnapshotFold<ReadonlyMap<TopicPartitionKey, CommittedOffset>, Uint8Array[]>;

interface PendingWrite {
  readonly frame: Uint8Array;
  readonly record: OffsetLogRecord;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/** Counters for tests and the benchmark: how well commits are grouped into fsyncs. */
export interface LocalOffsetStoreStats {
  readonly fsyncs: number;
  readonly recordsWritten: number;
  readonly compactions: number;
}

/**
 * The embedded broker's committed offsets, durable under `<dataDir>/__consumer_offsets/`:
 *
 * - `commits.log`: append-only records (see offset-log-record.ts). Every record that arrived
 *   while the previous fsync ran is written with one write and one fdatasync, and a commit's
 *   promise resolves only after its fdatasync: an acknowledged commit survives kill -9 or
 *   power loss.
 * - `offsets.snapshot`: the whole state as commit records of each group (and one record of its
 *   protocol type, if known), written when the log passes `compactLogBytes` (write temp,
 *   fsync, rename, fsync dir, then truncate the log), its I/O on the thread pool and its
 *   encoding in slices while commits go on (startFold). Replaying the log over a snapshot
 *   that already contains it gives the same state (every record sets or deletes keys, last
 *   writer wins), so a crash between rename and truncate is harmless.
 *
 * - `membership/<sha256 of the group id>.json`: each group's membership record
 *   (group-membership-record.ts), replaced whole by rename; see storeMembership.
 *
 * On open the snapshot is read, then the log is replayed; a torn last record is cut off.
 * The whole state is kept in memory (it is what loadGroup answers from). One process owns the
 * directory; this class is used from one event loop.
 */
export class LocalOffsetStore implements OffsetStore {
  private readonly groups = new Map<string, Map<TopicPartitionKey, CommittedOffset>>();
  /** Protocol types by group; an entry outlives its group's offsets only until a compaction. */
  private readonly protocolTypes = new Map<string, string>();
  private pending: PendingWrite[] = [];
  private pendingBytes = 0;
  private flushScheduled = false;
  private flushing: Promise<void> | null = null;
  private closed = false;
  private logSizeBytes: number;
  private fsyncs = 0;
  private recordsWritten = 0;
  private compactions = 0;
  /** The compaction under way, if any (see startFold). */
  private fold: Fold | null = null;
  /** Log size at which the next compaction runs; pushed further out when one fails. */
  private compactAtBytes: number;
  private readonly compactLogBytes: number;
  private readonly pendingBytesMax: number;
  private readonly foldSliceMs: number;
  private readonly log: Logger;

  private constructor(
    private readonly dir: string,
    private readonly logFd: number,
    options: LocalOffsetStoreOptions,
  ) {
    this.logSizeBytes = fs.fstatSync(logFd).size;
    this.compactLogBytes = options.compactLogBytes ?? DEFAULT_COMPACT_LOG_BYTES;
    this.pendingBytesMax = options.pendingBytesMax ?? DEFAULT_PENDING_BYTES_MAX;
    this.foldSliceMs = options.foldSliceMs ?? DEFAULT_FOLD_SLICE_MS;
    this.log = options.logger ?? SILENT_LOGGER;
    assert(this.compactLogBytes > 0, `compactLogBytes ${this.compactLogBytes} is not positive`);
    this.compactAtBytes = this.compactLogBytes;
  }

  /** Opens (creating if needed) the store under `<dataDir>/__consumer_offsets/` and replays it. */
  static open(dataDir: string, options: LocalOffsetStoreOptions = {}): LocalOffsetStore {
    const dir = path.join(dataDir, OFFSETS_DIR_NAME);
    fs.mkdirSync(path.join(dir, MEMBERSHIP_DIR_NAME), { recursive: true });
    for (const temp of SNAPSHOT_TEMP_FILES) fs.rmSync(path.join(dir, temp), { force: true });
    const logPath = path.join(dir, LOG_FILE);
    const created = !fs.existsSync(logPath);
    // Written at the size it tracks, not appended (O_APPEND): a failed write's tail that could
    // not be cut off is overwritten by the next write instead of standing before it.
    const logFd = fs.openSync(logPath, fs.constants.O_WRONLY | fs.constants.O_CREAT);
    if (created) fsyncDirectory(dir);
    const store = new LocalOffsetStore(dir, logFd, options);
    store.replay();
    return store;
  }

  get stats(): LocalOffsetStoreStats {
    const { fsyncs, recordsWritten, compactions } = this;
    return { fsyncs, recordsWritten, compactions };
  }

  async loadGroup(groupId: string): Promise<Map<TopicPartitionKey, CommittedOffset>> {
    this.assertOpen();
    return new Map(this.groups.get(groupId));
  }

  async commit(groupId: string, offsets: readonly StoredOffset[]): Promise<void> {
    return this.append({ type: "commit", groupId, offsets });
  }

  async deleteOffsets(groupId: string, partitions: readonly PartitionRef[]): Promise<void> {
    return this.append({ type: "deleteOffsets", groupId, partitions });
  }

  async deleteGroup(groupId: string): Promise<void> {
    await this.append({ type: "deleteGroup", groupId });
    fs.rmSync(this.membershipPath(groupId), { force: true });
  }

  /**
   * Written to a temporary file and renamed over the old one, without fsync: a record lost or
   * emptied by a power cut does not parse, and the group's members then rejoin (kill -9 loses
   * nothing, the page cache keeps it).
   */
  async storeMembership(groupId: string, record: Uint8Array | null): Promise<void> {
    this.assertOpen();
    const target = this.membershipPath(groupId);
    if (record === null) return fs.rmSync(target, { force: true });
    const temp = `${target}.tmp`;
    await Bun.write(temp, record);
    fs.renameSync(temp, target);
  }

  async loadMembership(groupId: string): Promise<Uint8Array | null> {
    this.assertOpen();
    const file = Bun.file(this.membershipPath(groupId));
    return (await file.exists()) ? await file.bytes() : null;
  }

  /** One file per group, named by the SHA-256 of its id (ids may be any string). */
  private membershipPath(groupId: string): string {
    const name = new Bun.CryptoHasher("sha256").update(groupId).digest("hex");
    return path.join(this.dir, MEMBERSHIP_DIR_NAME, `${name}.json`);
  }

  async storeGroupMetadata(groupId: string, metadata: StoredGroupMetadata): Promise<void> {
    if (metadata.protocolType === null) return;
    return this.append({ type: "groupMetadata", groupId, protocolType: metadata.protocolType });
  }

  async describeStoredGroup(groupId: string): Promise<StoredGroupMetadata | null> {
    this.assertOpen();
    if (!this.groups.has(groupId)) return null;
    return { protocolType: this.protocolTypes.get(groupId) ?? null };
  }

  async listGroups(): Promise<string[]> {
    this.assertOpen();
    return [...this.groups.keys()];
  }

  async listGroupIds(prefix: string): Promise<string[]> {
    this.assertOpen();
    return [...this.groups.keys()].filter((id) => id.startsWith(prefix));
  }

  /** Writes what is pending, then closes the log; later calls get COORDINATOR_NOT_AVAILABLE. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // A fold not yet encoded is given up (the log keeps everything); one encoded is finished.
    await this.fold?.encoding;
    while (this.flushing !== null || this.pending.length > 0 || this.fold?.encoded) {
      await (this.flushing ?? this.flush());
    }
    fs.closeSync(this.logFd);
  }

  private assertOpen(): void {
    if (this.closed) {
      throw new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the offset store is closed");
    }
  }

  private append(record: OffsetLogRecord): Promise<void> {
    this.assertOpen();
    const frame = encodeRecord(record);
    if (frame === null) {
      const message = "offset commit too large to store";
      return Promise.reject(new KafkaError(ErrorCode.INVALID_COMMIT_OFFSET_SIZE, message));
    }
    if (this.pendingBytes + frame.length > this.pendingBytesMax) {
      const message = "offset store is behind on fsyncs";
      return Promise.reject(new KafkaError(ErrorCode.REQUEST_TIMED_OUT, message));
    }
    return new Promise((resolve, reject) => {
      this.pending.push({ frame, record, resolve, reject });
      this.pendingBytes += frame.length;
      this.scheduleFlush();
    });
  }

  /**
   * Flushes on the next turn of the event loop, so that every commit arriving in this turn
   * shares one fdatasync; commits arriving while it runs share the next one.
   */
  private scheduleFlush(): void {
    if (this.flushScheduled || this.flushing !== null) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      if (this.flushing === null) void this.flush();
    });
  }

  private flush(): Promise<void> {
    assert(this.flushing === null, "only one flush runs at a time");
    this.flushing = this.flushLoop().finally(() => {
      this.flushing = null;
      // Writes queued (or a fold encoded) after the loop's last check but before this ran.
      if (this.pending.length > 0 || this.fold?.encoded) this.scheduleFlush();
    });
    return this.flushing;
  }

  private async flushLoop(): Promise<void> {
    for (;;) {
      if (this.fold?.encoded) await this.finishFold(this.fold);
      if (this.pending.length === 0) return;
      const batch = this.pending;
      this.pending = [];
      this.pendingBytes = 0;
      await this.writeBatch(batch);
      const due = this.logSizeBytes >= this.compactAtBytes;
      if (due && this.fold === null && !this.closed) this.startFold();
    }
  }

  private async writeBatch(batch: readonly PendingWrite[]): Promise<void> {
    const bytes = concatFrames(batch.map((w) => w.frame));
    const sizeBefore = this.logSizeBytes;
    try {
      writeFully(this.logFd, bytes, sizeBefore);
      await fdatasyncFdInBackground(this.logFd);
    } catch (cause) {
      // Cut off whatever part of the batch reached the file: none of it was acknowledged.
      try {
        fs.ftruncateSync(this.logFd, sizeBefore);
      } catch {
        // The truncate failing too leaves a tail past logSizeBytes: the next write goes over
        // it, so no acknowledged commit stands behind it (replay stops at the first bad frame).
      }
      const message = `offset store write to ${this.dir} failed`;
      const error = new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, message, { cause });
      for (const w of batch) w.reject(error);
      return;
    }
    this.logSizeBytes = sizeBefore + bytes.length;
    this.fsyncs++;
    this.recordsWritten += batch.length;
    for (const w of batch) {
      this.apply(w.record);
      w.resolve();
    }
  }

  private apply(record: OffsetLogRecord): void {
    this.fold?.markDirty(record.groupId);
    switch (record.type) {
      case "commit": {
        let offsets = this.groups.get(record.groupId);
        if (offsets === undefined) this.groups.set(record.groupId, (offsets = new Map()));
        for (const o of record.offsets) {
          offsets.set(topicPartitionKey(o.topic, o.partition), o.committed);
        }
        return;
      }
      case "deleteOffsets": {
        const offsets = this.groups.get(record.groupId);
        for (const p of record.partitions) offsets?.delete(topicPartitionKey(p.topic, p.partition));
        if (offsets?.size === 0) this.forget(record.groupId);
        return;
      }
      case "deleteGroup":
        this.forget(record.groupId);
        return;
      case "groupMetadata":
        this.protocolTypes.set(record.groupId, record.protocolType);
        return;
    }
  }

  private forget(groupId: string): void {
    this.groups.delete(groupId);
    this.protocolTypes.delete(groupId);
  }

  private replay(): void {
    const snapshotPath = path.join(this.dir, SNAPSHOT_FILE);
    if (fs.existsSync(snapshotPath)) {
      const bytes = fs.readFileSync(snapshotPath);
      const { records, validBytes } = readRecords(bytes, snapshotPath);
      // The snapshot is renamed into place only after its fsync, so it is never torn.
      assert(validBytes === bytes.length, `snapshot ${snapshotPath} corrupt at byte ${validBytes}`);
      for (const r of records) this.apply(r);
    }
    const logPath = path.join(this.dir, LOG_FILE);
    const bytes = fs.readFileSync(logPath);
    const { records, validBytes } = readRecords(bytes, logPath);
    for (const r of records) this.apply(r);
    if (validBytes < bytes.length) {
      // A torn tail: the write of an unacknowledged batch was cut short by a crash.
      fs.ftruncateSync(this.logFd, validBytes);
      fs.fsyncSync(this.logFd);
      this.logSizeBytes = validBytes;
    }
  }

  /**
   * Starts a compaction: rewrites the state as a snapshot and empties the log (see the class
   * comment for safety) without holding the event loop or the commits. Every group is encoded
   * in slices of foldSliceMs with a turn between them while commits go on being written and
   * acknowledged; a group changed meanwhile is marked dirty. Once all are encoded, the flush
   * loop finishes the fold between two writes (finishFold): it encodes the dirty groups again,
   * so the snapshot is exactly the state the log holds then, writes it and empties the log,
   * commits arriving during that last part waiting for the next write.
   */
  private startFold(): void {
    this.fold = new SnapshotFold<ReadonlyMap<TopicPartitionKey, CommittedOffset>, Uint8Array[]>(
      this.groups,
      (groupId, offsets, slices) => this.encodeGroup(groupId, offsets, slices),
      {
        sliceMs: this.foldSliceMs,
        stopped: () => this.closed,
        onEncoded: () => this.scheduleFlush(),
        onFailed: (error) => this.foldFailed(error),
      },
    );
  }

  /**
   * A group's offsets as commit records of at most SNAPSHOT_RECORD_OFFSETS_MAX offsets (one
   * empty record for a group without any), then its protocol type's record, if known. If the
   * group changes between slices the frames are a mix, but the group is dirty, encoded again.
   */
  private async encodeGroup(
    groupId: string,
    offsets: ReadonlyMap<TopicPartitionKey, CommittedOffset>,
    slices: TurnSlices,
  ): Promise<Uint8Array[]> {
    const frames: Uint8Array[] = [];
    const encode = (record: OffsetLogRecord): void => {
      const frame = encodeRecord(record);
      assert(frame !== null, `snapshot record of group ${groupId} too large`);
      frames.push(frame);
    };
    let stored: StoredOffset[] = [];
    for (const [key, committed] of offsets) {
      stored.push({ ...topicPartitionOf(key), committed });
      if (stored.length < SNAPSHOT_RECORD_OFFSETS_MAX) continue;
      encode({ type: "commit", groupId, offsets: stored });
      stored = [];
      if (slices.due()) await slices.next();
    }
    if (stored.length > 0 || offsets.size === 0)
      encode({ type: "commit", groupId, offsets: stored });
    const protocolType = this.protocolTypes.get(groupId);
    if (protocolType !== undefined) encode({ type: "groupMetadata", groupId, protocolType });
    return frames;
  }

  /**
   * Runs in the flush loop between two writes, so `groups` holds exactly what the log does and
   * stays so until the log is emptied (SnapshotFold.finish). The frames are joined one chunk per
   * slice (no copy of the whole snapshot on the loop), and the snapshot's write, syncs and
   * rename run on the thread pool.
   */
  private async finishFold(fold: Fold): Promise<void> {
    try {
      await fold.finish(async (groups, slices) => {
        const chunks: Uint8Array[] = [];
        let frames: Uint8Array[] = [];
        let framesBytes = 0;
        for (const groupFrames of groups) {
          for (const frame of groupFrames) {
            frames.push(frame);
            framesBytes += frame.length;
          }
          // Copying costs by the byte: a chunk is bounded in size too, not only in time.
          if (framesBytes < SNAPSHOT_CHUNK_BYTES && !slices.due()) continue;
          chunks.push(concatFrames(frames));
          frames = [];
          framesBytes = 0;
          if (slices.due()) await slices.next();
        }
        chunks.push(concatFrames(frames));
        const snapshotPath = path.join(this.dir, SNAPSHOT_FILE);
        await replaceLogWithSnapshot(snapshotPath, chunks, this.logFd, () => {
          this.logSizeBytes = 0;
        });
      });
      this.compactions++;
      this.compactAtBytes = this.compactLogBytes;
      this.fold = null;
      // The protocol type of a group that never committed was not carried into the snapshot.
      for (const groupId of this.protocolTypes.keys()) {
        if (!this.groups.has(groupId)) this.protocolTypes.delete(groupId);
      }
    } catch (error) {
      this.foldFailed(error);
    }
  }

  /**
   * A failed compaction (disk full, say) loses nothing: the log still holds every record. It
   * is retried after the log has grown by another compactLogBytes.
   */
  private foldFailed(error: unknown): void {
    this.log.error(`compaction in ${this.dir} failed, keeping the log: ${String(error)}`);
    this.fold = null;
    this.compactAtBytes = this.logSizeBytes + this.compactLogBytes;
  }
}
