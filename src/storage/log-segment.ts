/**
 * One segment of a partition log: the batches from `baseOffset` up to the next segment's base
 * offset, stored in three files named by the base offset padded to 20 digits:
 *
 *   00000000000000000000.log        the batches, byte for byte as producers sent them (offsets
 *                                   patched), back to back
 *   00000000000000000000.index      sparse offset -> position index (OffsetIndex)
 *   00000000000000000000.timeindex  sparse timestamp -> offset index (TimeIndex)
 *   00000000000000000000.txnindex   aborted transactions, only once there is one
 *                                   (TransactionIndex)
 *
 * The last segment of a log is the active one: it is appended to with positional
 * fs.writeSync on an 'r+' fd (never Bun.write, see docs/bun.md, File I/O) and its
 * indexes are always in memory. Sealed segments are immutable; their fd and indexes are loaded
 * on demand and dropped again when the OpenFilePool evicts the file. Not thread-safe.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import {
  decodeRecords,
  readBatchHeader,
  TimestampType,
  timestampType,
} from "../protocol/record-batch.ts";
import type { FileRange } from "../protocol/records.ts";
import { assert } from "../util/assert.ts";
import type { AbstractIndex } from "./abstract-index.ts";
import { CorruptIndexError } from "./corrupt-index-error.ts";
import {
  fdatasyncFdInBackground,
  fdatasyncInBackground,
  storageError,
  writeFully,
} from "./durable-file.ts";
import { SEGMENT_BYTES_MAX } from "./log-config.ts";
import { logFlushSeconds, timedSync } from "./log-flush-stats.ts";
import { OffsetIndex } from "./offset-index.ts";
import type { OpenFilePool } from "./open-file-pool.ts";
import type { PrereadFiles } from "./preread-files.ts";
import type { BatchEntry } from "./segment-batch-reader.ts";
import { scanBatchHeaders, scanValidBatches } from "./segment-batch-reader.ts";
import { SegmentFile } from "./segment-file.ts";
import { TIME_INDEX_ENTRY_BYTES, TimeIndex } from "./time-index.ts";
import { TransactionIndex, TXN_INDEX_FILE_SUFFIX } from "./transaction-index.ts";

export const LOG_FILE_SUFFIX = ".log";
export const INDEX_FILE_SUFFIX = ".index";
export const TIME_INDEX_FILE_SUFFIX = ".timeindex";

const SEGMENT_STEM = /^\d{20}$/;

/** The stem of a segment's `.log` file name (`00000000000000000042.log`), else null. */
export function logFileStem(name: string): string | null {
  if (!name.endsWith(LOG_FILE_SUFFIX)) return null;
  const stem = name.slice(0, -LOG_FILE_SUFFIX.length);
  return SEGMENT_STEM.test(stem) ? stem : null;
}

/** `00000000000000000042`: Kafka's file name stem for a segment based at offset 42. */
export function segmentFileStem(baseOffset: bigint): string {
  return baseOffset.toString().padStart(20, "0");
}

/** The `.log`, `.index` and `.timeindex` paths of a segment, with `suffix` (e.g. `.swap`). */
export function segmentFilePaths(dir: string, baseOffset: bigint, suffix = ""): string[] {
  const stem = path.join(dir, segmentFileStem(baseOffset));
  return [LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX].map((s) => stem + s + suffix);
}

/** A batch of an append, positioned relative to the start of the appended bytes. */
export interface AppendedBatch {
  readonly relativePosition: number;
  readonly sizeBytes: number;
  readonly lastOffset: bigint;
  readonly maxTimestamp: bigint;
}

/** What recovery found: bytes cut off the end of the file and the reason. */
export interface SegmentRecovery {
  readonly truncatedBytes: number;
  readonly problem: string | null;
}

/** Settings a segment needs from the log's config, read at each call so changes apply. */
export interface SegmentSettings {
  readonly indexIntervalBytes: number;
  readonly segmentIndexBytes: number;
}

export class LogSegment {
  readonly file: SegmentFile;
  readonly indexPath: string;
  readonly timeIndexPath: string;
  readonly txnIndex: TransactionIndex;
  private sizeBytesValue: number;
  private offsetIndexValue: OffsetIndex | null = null;
  private timeIndexValue: TimeIndex | null = null;
  /** The largest batch maxTimestamp in the segment, -1 if none, and the batch's last offset. */
  private maxTimestampSoFar = -1n;
  private offsetOfMaxTimestampSoFar: bigint;
  /** The first batch's maxTimestamp: segment.ms counts from it (Kafka's rollingBasedTimestamp). */
  private rollingBasedTimestamp: bigint | null = null;
  private bytesSinceLastIndexEntry = 0;
  private unflushedBytes = 0;
  private flushChain: Promise<void> = Promise.resolve();
  private backgroundFlushes = 0;
  private closed = false;
  /** Set when a failed append could not be rolled back; the next append retries the truncate. */
  private tailNeedsTruncate = false;
  /**
   * One past the last offset in this segment. Exact for the active segment; for a sealed one
   * loaded from disk it is the next segment's base offset, an upper bound.
   */
  nextOffset: bigint;
  readonly createdMs = Date.now();
  /**
   * Where in [0, segment.jitter.ms) this segment's roll jitter falls, drawn once per segment as
   * Kafka draws its rollJitterMs, so partitions created together do not all roll at once.
   * Tests may pin it.
   */
  rollJitterFraction = Math.random();

  private constructor(
    readonly dir: string,
    readonly baseOffset: bigint,
    pool: OpenFilePool,
    sizeBytes: number,
    fileSuffix = "",
  ) {
    const [logPath, indexPath, timeIndexPath] = segmentFilePaths(dir, baseOffset, fileSuffix);
    this.file = new SegmentFile(logPath, pool);
    this.file.onEvict = () => this.unloadIndexes();
    this.indexPath = indexPath;
    this.timeIndexPath = timeIndexPath;
    // A cleaner's `.cleaned` segment must not touch the live segment's aborted-txn index.
    this.txnIndex = new TransactionIndex(
      path.join(dir, segmentFileStem(baseOffset)) + TXN_INDEX_FILE_SUFFIX + fileSuffix,
    );
    this.sizeBytesValue = sizeBytes;
    this.nextOffset = baseOffset;
    this.offsetOfMaxTimestampSoFar = baseOffset;
  }

  /**
   * Creates empty files for a new active segment (replacing leftovers with that name). The log
   * cleaner writes its output through one created with `fileSuffix` `.cleaned`.
   */
  static create(
    dir: string,
    baseOffset: bigint,
    settings: SegmentSettings,
    pool: OpenFilePool,
    fileSuffix = "",
  ): LogSegment {
    assert(baseOffset >= 0n, `segment base offset ${baseOffset} is negative`);
    const segment = new LogSegment(dir, baseOffset, pool, 0, fileSuffix);
    fs.writeFileSync(segment.file.filePath, new Uint8Array(0));
    fs.writeFileSync(segment.indexPath, new Uint8Array(0));
    fs.writeFileSync(segment.timeIndexPath, new Uint8Array(0));
    fs.rmSync(segment.txnIndex.filePath, { force: true });
    const indexBytes = settings.segmentIndexBytes;
    segment.offsetIndexValue = new OffsetIndex(segment.indexPath, baseOffset, indexBytes);
    segment.timeIndexValue = new TimeIndex(segment.timeIndexPath, baseOffset, indexBytes);
    segment.file.pin();
    return segment;
  }

  /**
   * create for the first segment of a log whose directory was just made: the `.log` file is
   * created by opening it for appends, and the index files by the first flush after data
   * arrives, so a new partition costs one file, not three. Creating 30,000 empty files held the
   * event loop for most of a 10,000-partition CreateTopics (docs/scaling.md).
   */
  static createInNewDir(
    dir: string,
    baseOffset: bigint,
    settings: SegmentSettings,
    pool: OpenFilePool,
    createdFd?: number,
  ): LogSegment {
    const segment = new LogSegment(dir, baseOffset, pool, 0);
    segment.emptyIndexes(settings);
    segment.file.pinNew(createdFd);
    return segment;
  }

  /** In-memory indexes with no entries, whose files the next flush with data (re)writes. */
  private emptyIndexes(settings: SegmentSettings): void {
    const indexBytes = settings.segmentIndexBytes;
    const base = this.baseOffset;
    this.offsetIndexValue = new OffsetIndex(this.indexPath, base, indexBytes).markFileUnwritten();
    this.timeIndexValue = new TimeIndex(this.timeIndexPath, base, indexBytes).markFileUnwritten();
  }

  /** Opens an existing segment; `nextOffset` is the next segment's base (an upper bound). */
  static open(dir: string, baseOffset: bigint, nextOffset: bigint, pool: OpenFilePool): LogSegment {
    const logPath = path.join(dir, segmentFileStem(baseOffset) + LOG_FILE_SUFFIX);
    const segment = new LogSegment(dir, baseOffset, pool, fs.statSync(logPath).size);
    segment.nextOffset = nextOffset;
    return segment;
  }

  get sizeBytes(): number {
    return this.sizeBytesValue;
  }

  /** Newest timestamp for retention: the largest batch timestamp, else the file's mtime. */
  largestTimestampMs(): number {
    if (this.maxTimestampSoFar >= 0n) return Number(this.maxTimestampSoFar);
    return fs.statSync(this.file.filePath).mtimeMs;
  }

  /** The largest timestamp and the last offset of the batch holding it, or null if none. */
  maxTimestampAndOffset(): { timestamp: bigint; offset: bigint } | null {
    if (this.maxTimestampSoFar < 0n) return null;
    return { timestamp: this.maxTimestampSoFar, offset: this.offsetOfMaxTimestampSoFar };
  }

  /**
   * Kafka's shouldRoll: the segment would exceed segmentBytes, its first batch is segmentMs
   * older than the incoming ones, an index is full, or the offsets would not fit int32.
   */
  shouldRoll(
    appendBytes: number,
    maxTimestampOfAppend: bigint,
    lastOffsetOfAppend: bigint,
    config: { segmentBytes: number; segmentMs: number; segmentJitterMs?: number },
    nowMs: number,
  ): boolean {
    // Offsets are stored relative to the base offset as int32; even an empty segment must roll
    // (be replaced) when a follower's batch lies beyond that range.
    if (lastOffsetOfAppend - this.baseOffset > 0x7fffffffn) return true;
    if (this.sizeBytesValue === 0) return false;
    if (this.sizeBytesValue > config.segmentBytes - appendBytes) return true;
    if (this.offsetIndex().isFull() || this.timeIndex().isFull()) return true;
    const first = this.firstBatchTimestamp();
    const waitedMs = first >= 0n ? Number(maxTimestampOfAppend - first) : nowMs - this.createdMs;
    const jitterMs = Math.floor(
      this.rollJitterFraction * Math.min(config.segmentJitterMs ?? 0, config.segmentMs),
    );
    return waitedMs > config.segmentMs - jitterMs;
  }

  /**
   * Writes `records` (whole, validated batches with offsets assigned) at the end of the file in
   * one write, then indexes them. If the write fails the file is truncated back, so no partial
   * batch stays, and KAFKA_STORAGE_ERROR is thrown.
   */
  append(records: Uint8Array, batches: readonly AppendedBatch[], indexIntervalBytes: number): void {
    assert(batches.length > 0, "append of no batches");
    const first = batches[0];
    // Per-append checks build their message only when they fail.
    if (first.lastOffset < this.nextOffset) {
      assert(false, `offset ${first.lastOffset} below segment end ${this.nextOffset}`);
    }
    const fd = this.file.writeFd();
    const position = this.sizeBytesValue;
    try {
      if (this.tailNeedsTruncate) this.truncateTail(fd, position);
      writeFully(fd, records, position);
    } catch (error) {
      this.rollBackFailedWrite(fd, position);
      throw storageError("append to", this.file.filePath, error);
    }
    this.indexAppended(records.length, batches, position, indexIntervalBytes);
  }

  /**
   * For a segment nobody reads or appends to yet (the cleaner's `.cleaned` output), whose
   * `sizeBytes` bytes past its end the cleaner's Worker wrote through writeFd(): indexes their
   * batches and moves the segment's end, as append does after its write. The Worker writes on
   * its own thread, so a write that waits for dirty-page writeback stalls only the cleaner.
   */
  adoptWrittenBatches(
    sizeBytes: number,
    batches: readonly AppendedBatch[],
    indexIntervalBytes: number,
  ): void {
    assert(batches.length > 0, "adopt of no batches");
    assert(batches[0].lastOffset >= this.nextOffset, "cleaned batches below the segment end");
    const last = batches[batches.length - 1];
    assert(last.relativePosition + last.sizeBytes === sizeBytes, "batches do not span the write");
    this.indexAppended(sizeBytes, batches, this.sizeBytesValue, indexIntervalBytes);
  }

  /** After a write of `sizeBytes` at `position`: index its batches and move the segment's end. */
  private indexAppended(
    sizeBytes: number,
    batches: readonly AppendedBatch[],
    position: number,
    indexIntervalBytes: number,
  ): void {
    for (const batch of batches) this.indexBatch(batch, position, indexIntervalBytes);
    this.sizeBytesValue += sizeBytes;
    this.unflushedBytes += sizeBytes;
    this.nextOffset = batches[batches.length - 1].lastOffset + 1n;
  }

  private indexBatch(batch: AppendedBatch, appendPosition: number, intervalBytes: number): void {
    const position = appendPosition + batch.relativePosition;
    assert(position + batch.sizeBytes <= SEGMENT_BYTES_MAX, "batch past the int32 position range");
    if (this.rollingBasedTimestamp === null) this.rollingBasedTimestamp = batch.maxTimestamp;
    if (batch.maxTimestamp > this.maxTimestampSoFar) {
      this.maxTimestampSoFar = batch.maxTimestamp;
      this.offsetOfMaxTimestampSoFar = batch.lastOffset;
    }
    // Appends roll before an index fills; recovery under a smaller segment.index.bytes than
    // the segment was written with just stops indexing, which only makes lookups scan longer.
    const indexable = !this.offsetIndex().isFull() && !this.timeIndex().isFull();
    if (this.bytesSinceLastIndexEntry > intervalBytes && indexable) {
      this.offsetIndex().append(batch.lastOffset, position);
      this.timeIndex().maybeAppend(this.maxTimestampSoFar, this.offsetOfMaxTimestampSoFar);
      this.bytesSinceLastIndexEntry = 0;
    }
    this.bytesSinceLastIndexEntry += batch.sizeBytes;
  }

  private rollBackFailedWrite(fd: number, position: number): void {
    try {
      this.truncateTail(fd, position);
    } catch {
      this.tailNeedsTruncate = true;
    }
  }

  private truncateTail(fd: number, position: number): void {
    fs.ftruncateSync(fd, position);
    this.tailNeedsTruncate = false;
  }

  /** The first batch whose last offset is >= target, searching from `startPosition`. */
  translateOffset(targetOffset: bigint, startPosition = 0): BatchEntry | null {
    const indexed = this.offsetIndex().lookup(targetOffset).position;
    let found: BatchEntry | null = null;
    this.withFd((fd) =>
      scanBatchHeaders(fd, Math.max(indexed, startPosition), this.sizeBytesValue, (entry) => {
        if (entry.lastOffset < targetOffset) return true;
        found = entry;
        return false;
      }),
    );
    return found;
  }

  /**
   * A FileRange of whole batches starting with the one holding `startOffset`: at most
   * `maxBytes` (or just the first batch if it is bigger and `minOneMessage`), and only batches
   * that end below `maxOffset`. Null if no batch in this segment reaches `startOffset`.
   *
   * With `partialLastBatch` (consumers' fetches) the range fills `maxBytes` exactly when a
   * batch straddles the budget, ending inside that batch, as Kafka's LogSegment.read does:
   * clients drop a trailing partial batch and fetch it again from its offset. Cutting at the
   * last whole batch instead returned a partition's fetch up to one batch short of
   * max.partition.fetch.bytes, which with librdkafka's batches of up to 1 MB was half of it on
   * average (docs/scaling.md, The Java consumer), and needed a scan of batch headers per read.
   * The first batch is still never cut.
   */
  read(
    startOffset: bigint,
    maxBytes: number,
    maxOffset: bigint,
    minOneMessage: boolean,
    partialLastBatch = false,
  ): FileRange | "empty" | null {
    const start = this.translateOffset(startOffset);
    if (start === null) return null;
    if (start.lastOffset >= maxOffset) return "empty";
    const endLimit = this.positionBoundFor(maxOffset, start.position);
    const budgetEnd = start.position + maxBytes;
    const cutByBudget = budgetEnd < endLimit;
    let end = cutByBudget ? budgetEnd : endLimit;
    if (end < start.position + start.sizeBytes) {
      end = start.position;
    } else if (cutByBudget && !partialLastBatch) {
      end = this.wholeBatchesEnd(start.position, budgetEnd);
    }
    if (end === start.position) {
      if (!minOneMessage) return "empty";
      end = start.position + start.sizeBytes;
    }
    if (!(end <= this.sizeBytesValue)) {
      assert(false, `read end ${end} past segment size ${this.sizeBytesValue}`);
    }
    return this.file.range(start.position, end - start.position);
  }

  /** Position of the first batch at or above `maxOffset`, or the segment size. */
  private positionBoundFor(maxOffset: bigint, fromPosition: number): number {
    if (maxOffset >= this.nextOffset) return this.sizeBytesValue;
    // The first batch reaching maxOffset is excluded whole, even if it straddles maxOffset.
    const bound = this.translateOffset(maxOffset, fromPosition);
    return bound === null ? this.sizeBytesValue : bound.position;
  }

  /** The end of the last whole batch that starts at or after `from` and ends by `limit`. */
  private wholeBatchesEnd(from: number, limit: number): number {
    if (!(limit < this.sizeBytesValue)) {
      assert(false, `budget limit ${limit} at or past the segment end`);
    }
    const scanFrom = Math.max(from, this.offsetIndex().lookupPosition(limit));
    let end = scanFrom;
    this.withFd((fd) =>
      scanBatchHeaders(fd, scanFrom, this.sizeBytesValue, (entry) => {
        if (entry.position + entry.sizeBytes > limit) return false;
        end = entry.position + entry.sizeBytes;
        return true;
      }),
    );
    return end;
  }

  /**
   * The first record at or after `startingOffset` whose timestamp is >= `targetTimestamp`, as
   * Kafka's findOffsetByTimestamp: the time index narrows the start, then batch headers are
   * scanned and the first matching batch is decoded to find the exact record.
   */
  findOffsetByTimestamp(
    targetTimestamp: bigint,
    startingOffset: bigint,
  ): { timestamp: bigint; offset: bigint } | null {
    const fromTimeIndex = this.timeIndex().lookup(targetTimestamp).offset;
    const from = fromTimeIndex > startingOffset ? fromTimeIndex : startingOffset;
    const position = this.offsetIndex().lookup(from).position;
    let batch: BatchEntry | null = null;
    this.withFd((fd) =>
      scanBatchHeaders(fd, position, this.sizeBytesValue, (entry) => {
        if (entry.maxTimestamp < targetTimestamp || entry.lastOffset < startingOffset) return true;
        batch = entry;
        return false;
      }),
    );
    if (batch === null) return null;
    return this.findRecordInBatch(batch, targetTimestamp, startingOffset);
  }

  private findRecordInBatch(
    entry: BatchEntry,
    targetTimestamp: bigint,
    startingOffset: bigint,
  ): { timestamp: bigint; offset: bigint } | null {
    const bytes = new Uint8Array(entry.sizeBytes);
    this.withFd((fd) => fs.readSync(fd, bytes, 0, entry.sizeBytes, entry.position));
    const header = readBatchHeader(bytes, 0);
    const logAppendTime = timestampType(header.attributes) === TimestampType.LogAppendTime;
    for (const record of decodeRecords(bytes)) {
      const offset = header.baseOffset + BigInt(record.offsetDelta);
      const timestamp = logAppendTime
        ? header.maxTimestamp
        : header.baseTimestamp + record.timestampDelta;
      if (offset >= startingOffset && timestamp >= targetTimestamp) return { timestamp, offset };
    }
    return null;
  }

  /**
   * Rebuilds this segment's state from its `.log` file: validates every batch (length, magic,
   * CRC, increasing offsets), truncates the file at the first bad byte, and rebuilds both
   * indexes from scratch and writes them out.
   */
  recover(
    settings: SegmentSettings,
    durable = true,
    visit?: (batch: BatchEntry) => void,
  ): SegmentRecovery {
    // Rebuilt from the log, so the files are rewritten whole by the next flush, even empty.
    this.emptyIndexes(settings);
    this.maxTimestampSoFar = -1n;
    this.offsetOfMaxTimestampSoFar = this.baseOffset;
    this.rollingBasedTimestamp = null;
    this.bytesSinceLastIndexEntry = 0;
    this.nextOffset = this.baseOffset;
    const fileSizeBytes = fs.statSync(this.file.filePath).size;
    const scan = this.withFd((fd) =>
      scanValidBatches(fd, fileSizeBytes, this.baseOffset, (entry) => {
        this.indexBatch(
          {
            relativePosition: entry.position,
            sizeBytes: entry.sizeBytes,
            lastOffset: entry.lastOffset,
            maxTimestamp: entry.maxTimestamp,
          },
          0,
          settings.indexIntervalBytes,
        );
        this.nextOffset = entry.lastOffset + 1n;
        visit?.(entry);
      }),
    );
    if (scan.validBytes < fileSizeBytes) fs.truncateSync(this.file.filePath, scan.validBytes);
    // Markers cut off with the tail take their aborted-transaction entries with them.
    this.txnIndex.truncateTo(this.nextOffset);
    this.sizeBytesValue = scan.validBytes;
    if (durable) {
      // The validated bytes may only be in the page cache (written before a crash); make them
      // and the truncation durable before the recovery point moves past them.
      this.withFd((fd) => fs.fdatasyncSync(fd));
      this.unflushedBytes = 0;
      this.writeIndexesFully();
    } else {
      // Crash recovery leaves the recovery point where it was (as Kafka's LogLoader does), so
      // the next flush syncs these bytes and writes the rebuilt indexes; until then a second
      // crash recovers them again. Three fdatasyncs per recovered log made a start after
      // kill -9 with 10,000 partitions take minutes (docs/scaling.md, Scale workloads).
      this.unflushedBytes = scan.validBytes;
      this.offsetIndex().markAllUnpersisted();
      this.timeIndex().markAllUnpersisted();
    }
    return { truncatedBytes: fileSizeBytes - scan.validBytes, problem: scan.problem };
  }

  /**
   * Follower truncation: drops the batch holding `offset` (if any) and every batch after it,
   * then rebuilds the indexes from what is left (recover). The file is cut by path, which works
   * whether this segment's fd is open for writing or only for reading; nothing is mmapped, so a
   * shorter file cannot fault a reader. Returns the bytes dropped.
   */
  truncateTo(offset: bigint, settings: SegmentSettings): number {
    const entry = this.translateOffset(offset);
    if (entry === null) return 0;
    const droppedBytes = this.sizeBytesValue - entry.position;
    fs.truncateSync(this.file.filePath, entry.position);
    this.recover(settings);
    assert(
      this.nextOffset <= offset,
      `${this.file.filePath} ends at ${this.nextOffset} > ${offset}`,
    );
    return droppedBytes;
  }

  /**
   * For a segment that was closed cleanly: finds the exact next offset by scanning headers from
   * the last index entry, and restores the in-memory timestamps. Throws CorruptIndexError if the
   * indexes do not match the log (the caller then recovers the segment).
   */
  loadActiveState(settings: SegmentSettings, preread?: PrereadFiles): void {
    this.loadIndexes(settings, preread);
    const lastIndexed = this.offsetIndex().lastPosition();
    let nextOffset = this.baseOffset;
    let lastEnd = lastIndexed;
    try {
      this.withFd((fd) =>
        scanBatchHeaders(fd, lastIndexed, this.sizeBytesValue, (entry) => {
          nextOffset = entry.lastOffset + 1n;
          lastEnd = entry.position + entry.sizeBytes;
          return true;
        }),
      );
    } catch (error) {
      throw new CorruptIndexError(`${this.file.filePath}: ${(error as Error).message}`);
    }
    if (lastEnd !== this.sizeBytesValue) throw new CorruptIndexError("log ends mid-batch");
    this.nextOffset = nextOffset;
    this.bytesSinceLastIndexEntry = this.sizeBytesValue - lastIndexed;
  }

  /**
   * Takes the largest timestamp another segment object holds for the same files (the cleaner's
   * output, reopened under its final name), so the swap does not read the time index again.
   */
  adoptMaxTimestamp(from: LogSegment): void {
    this.maxTimestampSoFar = from.maxTimestampSoFar;
    this.offsetOfMaxTimestampSoFar = from.offsetOfMaxTimestampSoFar;
  }

  /** Reads the last time index entry (the segment's largest timestamp) without the rest. */
  loadMaxTimestamp(): void {
    const fd = fs.openSync(this.timeIndexPath, "r");
    try {
      const sizeBytes = fs.fstatSync(fd).size;
      if (sizeBytes % TIME_INDEX_ENTRY_BYTES !== 0) {
        throw new CorruptIndexError(`${this.timeIndexPath} has ${sizeBytes} bytes`);
      }
      if (sizeBytes === 0) return;
      const entry = new Uint8Array(TIME_INDEX_ENTRY_BYTES);
      fs.readSync(fd, entry, 0, TIME_INDEX_ENTRY_BYTES, sizeBytes - TIME_INDEX_ENTRY_BYTES);
      const view = new DataView(entry.buffer);
      const timestamp = view.getBigInt64(0);
      const offset = this.baseOffset + BigInt(view.getInt32(8));
      // Retention deletes by this timestamp, so a nonsensical entry must not be believed.
      if (timestamp < 0n || offset < this.baseOffset || offset >= this.nextOffset) {
        throw new CorruptIndexError(`${this.timeIndexPath} ends with (${timestamp}, ${offset})`);
      }
      this.maxTimestampSoFar = timestamp;
      this.offsetOfMaxTimestampSoFar = offset;
    } finally {
      fs.closeSync(fd);
    }
  }

  /**
   * Loads both indexes from their files and checks them against the log; throws
   * CorruptIndexError if either is missing or inconsistent.
   */
  loadIndexes(settings: SegmentSettings, preread?: PrereadFiles): void {
    // An empty segment has empty indexes, whatever its index files hold (or whether they exist:
    // a new log's are created by its first flush with data, createInNewDir).
    if (this.sizeBytesValue === 0) return this.emptyIndexes(settings);
    const offsetIndex = OffsetIndex.load(
      this.indexPath,
      this.baseOffset,
      settings.segmentIndexBytes,
      this.sizeBytesValue,
      preread,
    );
    const upperBound = this.nextOffset > this.baseOffset ? this.nextOffset : 1n << 62n;
    const timeIndex = TimeIndex.load(
      this.timeIndexPath,
      this.baseOffset,
      settings.segmentIndexBytes,
      upperBound,
      preread,
    );
    this.offsetIndexValue = offsetIndex;
    this.timeIndexValue = timeIndex;
    const last = timeIndex.lastEntry();
    if (last !== null) {
      this.maxTimestampSoFar = last.timestamp;
      this.offsetOfMaxTimestampSoFar = last.offset;
    }
  }

  /** Sets how indexes are loaded on demand for sealed segments (recovering if corrupt). */
  lazyIndexLoader: (() => void) | null = null;

  offsetIndex(): OffsetIndex {
    if (this.offsetIndexValue !== null) return this.offsetIndexValue;
    this.lazyIndexLoader?.();
    assert(this.offsetIndexValue !== null, `offset index of ${this.file.filePath} not loaded`);
    return this.offsetIndexValue;
  }

  timeIndex(): TimeIndex {
    if (this.timeIndexValue !== null) return this.timeIndexValue;
    this.lazyIndexLoader?.();
    assert(this.timeIndexValue !== null, `time index of ${this.file.filePath} not loaded`);
    return this.timeIndexValue;
  }

  /** Makes the segment immutable: final time index entry, file no longer pinned for writes. */
  onBecomeInactive(): void {
    this.sealTimeIndex();
    this.file.unpin();
  }

  /**
   * The final time index entry (the segment's largest timestamp), in memory until the next
   * flush. A closing log adds it before its last flush and unpins only at close: unpinned
   * beyond the fd cap, the file is evicted at once, and eviction writes the indexes with a
   * synchronous fdatasync (unloadIndexes), one log after another on the event loop.
   */
  sealTimeIndex(): void {
    this.timeIndex().maybeAppend(this.maxTimestampSoFar, this.offsetOfMaxTimestampSoFar, true);
  }

  /** fdatasync of the log and write-out of new index entries. */
  flush(): void {
    const unflushedBytes = this.unflushedBytes;
    this.unflushedBytes = 0;
    try {
      // A background flush may have taken the unflushed bytes without finishing yet: sync too.
      const needed = unflushedBytes > 0 || this.backgroundFlushes > 0;
      if (needed) timedSync(() => this.withFd((fd) => fs.fdatasyncSync(fd)));
      for (const index of this.indexesToFlush()) index.flush();
    } catch (error) {
      this.unflushedBytes += unflushedBytes;
      throw storageError("flush of", this.file.filePath, error);
    }
  }

  /**
   * Like flush, but the log's fdatasync runs on the thread pool so appends keep going. Calls
   * are chained: a caller's promise resolves only after every earlier flush of this segment
   * finished too, so "my flush returned" always means "everything before it is durable".
   */
  flushAsync(): Promise<void> {
    const run = this.flushChain.then(() => this.flushInBackground());
    this.flushChain = run.catch(() => undefined);
    return run;
  }

  private async flushInBackground(): Promise<void> {
    const unflushedBytes = this.unflushedBytes;
    this.unflushedBytes = 0;
    try {
      if (unflushedBytes > 0) await this.fdatasyncInBackground();
      // A log closed meanwhile was flushed synchronously; a deleted one must not be recreated.
      if (this.closed) return;
      // The index files' fdatasyncs run on the thread pool too: on the event loop they held
      // requests for 60-145 ms each after a segment roll while the disk was busy.
      const files: string[] = [];
      for (const index of this.indexesToFlush()) if (index.flush(false)) files.push(index.filePath);
      await Promise.all(files.map(syncIndexUnlessDeleted));
    } catch (error) {
      this.unflushedBytes += unflushedBytes;
      throw storageError("flush of", this.file.filePath, error);
    }
  }

  /**
   * A clean stop's write of the index entries not yet in their files, without syncs (the stop
   * syncs the whole file system afterwards, file-system-sync.ts). Nothing appends meanwhile.
   */
  async writeIndexesUnsynced(): Promise<void> {
    await Promise.all(this.indexesToFlush().map((index) => index.writeUnsynced()));
  }

  /**
   * The loaded indexes, for a flush to write; none while the segment is empty, so a log that
   * never gets data never creates its index files (createInNewDir).
   */
  private indexesToFlush(): AbstractIndex[] {
    if (this.sizeBytesValue === 0) return [];
    const indexes: AbstractIndex[] = [];
    if (this.offsetIndexValue !== null) indexes.push(this.offsetIndexValue);
    if (this.timeIndexValue !== null) indexes.push(this.timeIndexValue);
    return indexes;
  }

  /**
   * For a segment written off the request path (the cleaner's output): the log and both index
   * files are written and fdatasynced on the thread pool, so the event loop never waits for the
   * disk. Not for the active segment (its flushes are chained by flushAsync).
   */
  async flushFullyInBackground(): Promise<void> {
    if (this.unflushedBytes > 0) {
      this.unflushedBytes = 0;
      await this.fdatasyncInBackground();
    }
    this.offsetIndexValue?.flush(false);
    this.timeIndexValue?.flush(false);
    const files = [this.indexPath, this.timeIndexPath];
    if (this.txnIndex.all().length > 0) files.push(this.txnIndex.filePath);
    await Promise.all(files.map(fdatasyncInBackground));
  }

  private async fdatasyncInBackground(): Promise<void> {
    const fd = this.file.acquire();
    this.backgroundFlushes++;
    const startMs = performance.now();
    try {
      await fdatasyncFdInBackground(fd);
      logFlushSeconds.observe((performance.now() - startMs) / 1000);
    } finally {
      this.backgroundFlushes--;
      this.file.release();
    }
  }

  /** Closes the fd (or retires it until its ranges are released); flush first to keep data. */
  close(): void {
    this.closed = true;
    this.file.close();
  }

  /**
   * Renames the files to `.deleted` at once (so a restart will not load them) and unlinks them
   * in the background after `delayMs` (file.delete.delay.ms; a stop before then leaves the
   * `.deleted` files to the next start's loader); the fd closes when the last FileRange over it
   * is released.
   */
  async delete(delayMs = 0): Promise<void> {
    const paths = [this.file.filePath, this.indexPath, this.timeIndexPath, this.txnIndex.filePath];
    const renamed: string[] = [];
    for (const p of paths) {
      try {
        fs.renameSync(p, `${p}.deleted`);
        renamed.push(`${p}.deleted`);
      } catch (error) {
        if ((error as { code?: string }).code !== "ENOENT") throw error;
      }
    }
    this.txnIndex.filePath = `${this.txnIndex.filePath}.deleted`;
    this.file.filePath = `${this.file.filePath}.deleted`;
    this.file.markDeleted();
    // Unreferenced: a pending removal must not keep a stopping broker alive.
    const waitMs = Math.min(delayMs, 2 ** 31 - 1);
    if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs).unref());
    await Promise.all(renamed.map((p) => fs.promises.rm(p, { force: true })));
  }

  /** The first batch's max timestamp (-1 when empty): max.compaction.lag.ms counts from it. */
  firstBatchTimestamp(): bigint {
    if (this.rollingBasedTimestamp === null && this.sizeBytesValue > 0) {
      this.withFd((fd) =>
        scanBatchHeaders(fd, 0, this.sizeBytesValue, (entry) => {
          this.rollingBasedTimestamp = entry.maxTimestamp;
          return false;
        }),
      );
    }
    return this.rollingBasedTimestamp ?? -1n;
  }

  private writeIndexesFully(): void {
    this.offsetIndex().markAllUnpersisted();
    this.timeIndex().markAllUnpersisted();
    this.offsetIndex().flush();
    this.timeIndex().flush();
  }

  private unloadIndexes(): void {
    if (this.file.isPinned || this.closed) return;
    try {
      // Entries not yet written (a roll's flush still running) would be lost; write them first.
      this.offsetIndexValue?.flush();
      this.timeIndexValue?.flush();
    } catch {
      // Keep them in memory; the next flush of this segment retries and reports the error.
      return;
    }
    this.offsetIndexValue = null;
    this.timeIndexValue = null;
  }

  private withFd<T>(body: (fd: number) => T): T {
    const fd = this.file.acquire();
    try {
      return body(fd);
    } finally {
      this.file.release();
    }
  }
}

/** fdatasync of an index file; one renamed away meanwhile (deleted segment) needs none. */
async function syncIndexUnlessDeleted(filePath: string): Promise<void> {
  try {
    await fdatasyncInBackground(filePath);
  } catch (error) {
    if ((error as { code?: string }).code !== "ENOENT") throw error;
  }
}
