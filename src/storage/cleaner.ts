/**
 * One cleaning of one log (Kafka's Cleaner.doClean):
 *
 * 1. Offset map: the dirty section [firstDirtyOffset, firstUncleanableOffset) is read and every
 *    keyed record's offset is put in the OffsetMap under its key. When the map fills, reading
 *    stops at the last whole batch read; that is where this pass ends (the rest of the dirty
 *    section is cleaned by the next passes).
 * 2. Groups: the segments from the start of the log up to the end of the map are grouped so that
 *    each group fits one segment (segment.bytes, segment.index.bytes, int32 relative offsets).
 * 3. Each group is filtered batch by batch into one `.cleaned` segment (cleaner-batch-filter.ts),
 *    fdatasynced, and swapped in for the group (segment-swap.ts).
 *
 * Everything is asynchronous and works in chunks of log.cleaner.io.buffer.size: each chunk is
 * read off the event loop and its batches are processed in one short synchronous slice, so
 * requests are served between chunks. A change to the log that cleaning cannot survive
 * (truncation, deletion, close, retention removing a segment being cleaned) is noticed at the
 * next chunk and abandons the cleaning; its `.cleaned` files are removed.
 */
import * as fs from "node:fs";
import { CompressionType, decompress } from "../protocol/compression.ts";
import { RECORD_BATCH_OVERHEAD } from "../protocol/record-batch.ts";
import { RecordCursor } from "../protocol/record-cursor.ts";
import { CleanedTransactionMetadata } from "./cleaned-transaction-metadata.ts";
import type { CleanerFilter, FilteredBatch } from "./cleaner-batch-filter.ts";
import { filterBatch } from "./cleaner-batch-filter.ts";
import type { ChunkBatch } from "./cleaner-segment-reader.ts";
import { readSegmentBatches } from "./cleaner-segment-reader.ts";
import { fsyncDirectoryInBackground } from "./durable-file.ts";
import type { AppendedBatch } from "./log-segment.ts";
import { LogSegment } from "./log-segment.ts";
import { OFFSET_INDEX_ENTRY_BYTES } from "./offset-index.ts";
import type { OffsetMap } from "./offset-map.ts";
import {
  CLEANED_FILE_SUFFIX,
  deleteCleanedFiles,
  finishSwap,
  markCleanedAsSwap,
  SWAP_FILE_SUFFIX,
} from "./segment-swap.ts";
import type { Throttler } from "./throttler.ts";
import { TIME_INDEX_ENTRY_BYTES } from "./time-index.ts";
import type { AbortedTxn } from "./transaction-index.ts";
import type { UnifiedLog } from "./unified-log.ts";
import { settingsOf } from "./unified-log.ts";

const MAX_UNCOMPRESSED_BYTES = 256 * 1024 * 1024;
const INT32_MAX = 0x7fffffffn;

/** What the LogCleaner chose to clean. */
export interface LogToClean {
  readonly log: UnifiedLog;
  readonly firstDirtyOffset: bigint;
  readonly firstUncleanableOffset: bigint;
}

export interface CleanerStats {
  bytesRead: number;
  bytesWritten: number;
  recordsRead: number;
  recordsKept: number;
  mapRecords: number;
  segmentsCleaned: number;
  groups: number;
}

export interface CleanResult {
  /** Everything below it is clean now: the cleaner's next first dirty offset. */
  readonly endOffset: bigint;
  readonly stats: CleanerStats;
}

/** Thrown when the log changed so that this cleaning cannot finish; nothing was lost. */
export class CleaningAbortedError extends Error {}

export interface CleanerOptions {
  readonly map: OffsetMap;
  readonly throttler: Throttler;
  readonly ioBufferBytes: number;
  /** Called between chunks: true when the cleaner is being stopped. */
  readonly stopping: () => boolean;
}

export class Cleaner {
  private readonly slicer = new Slicer();

  constructor(private readonly options: CleanerOptions) {}

  /** Cleans once; returns the offset up to which the log is now clean. */
  async clean(target: LogToClean, nowMs: number): Promise<CleanResult> {
    const stats: CleanerStats = {
      bytesRead: 0,
      bytesWritten: 0,
      recordsRead: 0,
      recordsKept: 0,
      mapRecords: 0,
      segmentsCleaned: 0,
      groups: 0,
    };
    const { log } = target;
    const epoch = log.layoutEpoch;
    const guard = (): void => this.checkStillValid(log, epoch);
    await this.buildOffsetMap(target, stats, guard);
    const endOffset = BigInt(this.options.map.latestOffset) + 1n;
    const filter: CleanerFilter = {
      map: this.options.map,
      nowMs,
      deleteRetentionMs: log.config.deleteRetentionMs,
      ...lastRecordsOfActiveProducers(log),
      transactions: new CleanedTransactionMetadata(),
    };
    const segments = log.sealedSegments().filter((s) => s.baseOffset < endOffset);
    for (const group of groupSegmentsBySize(segments, log, target.firstUncleanableOffset)) {
      await this.cleanGroup(log, group, filter, stats, guard);
      stats.groups++;
      stats.segmentsCleaned += group.length;
    }
    return { endOffset, stats };
  }

  private checkStillValid(log: UnifiedLog, epoch: number): void {
    if (this.options.stopping()) throw new CleaningAbortedError("the cleaner is stopping");
    if (log.isClosed || log.layoutEpoch !== epoch) {
      throw new CleaningAbortedError(`${log.name} was truncated, deleted or closed`);
    }
  }

  /** Step 1: the dirty section's keys into the map, until it is read or the map is full. */
  private async buildOffsetMap(
    target: LogToClean,
    stats: CleanerStats,
    guard: () => void,
  ): Promise<void> {
    const { map } = this.options;
    // Every key put lies in [firstDirtyOffset, firstUncleanableOffset): no more keys than that.
    map.clear(Number(target.firstUncleanableOffset - target.firstDirtyOffset));
    // The clean section is in the map's reach even when nothing dirty is read, so tombstones
    // past their horizon go in a cleaning with no new records.
    map.latestOffset = Number(target.firstDirtyOffset) - 1;
    const start = Number(target.firstDirtyOffset);
    const end = target.firstUncleanableOffset;
    const sealed = target.log.sealedSegments();
    const dirty = sealed.filter((s, i) => {
      const next = sealed[i + 1]?.baseOffset ?? target.log.activeSegmentBaseOffset;
      return s.baseOffset < end && next > target.firstDirtyOffset;
    });
    // Aborted transactions' records stay out of the map: they must not shadow committed ones.
    const transactions = new CleanedTransactionMetadata();
    transactions.addAbortedTransactions(abortedTxnsOf(target.log, target.firstDirtyOffset, end));
    for (const segment of dirty) {
      for await (const batches of this.chunks(segment, stats, guard)) {
        for (const batch of batches) {
          if (batch.baseOffset >= end) return;
          if (!addBatchToMap(batch, start, map, transactions, stats)) return;
          await this.slicer.maybeYield(guard);
        }
      }
    }
  }

  private chunks(
    segment: LogSegment,
    stats: CleanerStats,
    guard: () => void,
  ): AsyncGenerator<ChunkBatch[]> {
    const { throttler, ioBufferBytes } = this.options;
    return readSegmentBatches(segment, ioBufferBytes, async (bytes) => {
      this.slicer.yielded();
      stats.bytesRead += bytes;
      await throttler.maybeThrottle(bytes);
      guard();
    });
  }

  /** Step 3 for one group: filter into a `.cleaned` segment, then swap it in. */
  private async cleanGroup(
    log: UnifiedLog,
    group: readonly LogSegment[],
    filter: CleanerFilter,
    stats: CleanerStats,
    guard: () => void,
  ): Promise<void> {
    const base = group[0].baseOffset;
    const settings = settingsOf(log.config);
    const cleaned = LogSegment.create(log.dir, base, settings, log.filePool, CLEANED_FILE_SUFFIX);
    try {
      const { indexIntervalBytes } = log.config;
      const output = new CleanedOutput(cleaned, indexIntervalBytes, this.options.ioBufferBytes);
      // The kept ABORT markers' entries go to the cleaned segment's .txnindex as they are met.
      filter.transactions.cleanedIndex = cleaned.txnIndex;
      for (const segment of group) {
        filter.transactions.addAbortedTransactions(
          abortedTxnsOf(log, segment.baseOffset, nextBaseOffset(log, segment)),
        );
        for await (const batches of this.chunks(segment, stats, guard)) {
          let written = 0;
          for (const batch of batches) {
            written += await output.add(batch, filterBatch(batch.bytes, filter), stats, log);
            await this.slicer.maybeYield(guard);
          }
          await this.options.throttler.maybeThrottle(written);
        }
      }
      await output.flush(stats);
      cleaned.onBecomeInactive();
      await cleaned.flushFullyInBackground();
      cleaned.close();
      guard();
      const lastOld = group[group.length - 1];
      const { atime, mtime } = await fs.promises.stat(lastOld.file.filePath);
      await fs.promises.utimes(cleaned.file.filePath, atime, mtime);
      this.checkGroupIsThere(log, group);
    } catch (error) {
      cleaned.close();
      deleteCleanedFiles(log.dir, base, CLEANED_FILE_SUFFIX);
      throw error;
    }
    await this.swapIn(log, group, cleaned, guard);
  }

  private checkGroupIsThere(log: UnifiedLog, group: readonly LogSegment[]): void {
    if (!log.holdsSegments(group)) throw new CleaningAbortedError("retention removed a segment");
  }

  /**
   * Steps 2-4 of segment-swap.ts. The directory fsyncs run on the thread pool; steps 3 and 4 and
   * the segment list update happen in one synchronous stretch, so no request sees a half-swapped
   * log.
   */
  private async swapIn(
    log: UnifiedLog,
    group: readonly LogSegment[],
    cleaned: LogSegment,
    guard: () => void,
  ): Promise<void> {
    const base = group[0].baseOffset;
    try {
      await markCleanedAsSwap(log.dir, base);
      await fsyncDirectoryInBackground(log.dir);
      guard();
      this.checkGroupIsThere(log, group);
    } catch (error) {
      // The .swap files first (the log's, if renamed, before its indexes), then any .cleaned
      // file a failed rename left behind.
      deleteCleanedFiles(log.dir, base, SWAP_FILE_SUFFIX);
      deleteCleanedFiles(log.dir, base, CLEANED_FILE_SUFFIX);
      throw error;
    }
    replaceGroup(log, group, cleaned);
    void fsyncDirectoryInBackground(log.dir).catch((error: unknown) =>
      log.logLine(`fsync after a cleaner swap failed: ${String(error)}`),
    );
  }
}

/**
 * Longest stretch of cleaner work between two turns of the event loop. A 512 KiB chunk of small
 * records takes several ms to filter; yielding within it keeps requests' waits short.
 */
const SLICE_MS = 2;

class Slicer {
  private sinceMs = performance.now();

  /** Lets the event loop run when this slice has lasted SLICE_MS, then checks the log. */
  async maybeYield(guard: () => void): Promise<void> {
    if (performance.now() - this.sinceMs < SLICE_MS) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.yielded();
    guard();
  }

  /** The event loop just ran (an asynchronous read completed). */
  yielded(): void {
    this.sinceMs = performance.now();
  }
}

/**
 * Puts the batch's keyed records at or above `start` into the map; false once it is full.
 * Markers and aborted transactions' batches put nothing.
 */
function addBatchToMap(
  batch: ChunkBatch,
  start: number,
  map: OffsetMap,
  transactions: CleanedTransactionMetadata,
  stats: CleanerStats,
): boolean {
  const bytes = batch.bytes;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const attributes = view.getInt16(21);
  const isControl = (attributes & 0x20) !== 0;
  let aborted = false;
  if (isControl) transactions.onControlBatchRead(bytes, batch.lastOffset);
  else aborted = transactions.onBatchRead(bytes, batch.lastOffset, (attributes & 0x10) !== 0);
  if (batch.lastOffset < BigInt(start)) return true;
  if (!isControl && !aborted) {
    const codec = attributes & 0x07;
    const body =
      codec === CompressionType.None
        ? bytes.subarray(RECORD_BATCH_OVERHEAD)
        : decompress(codec, bytes.subarray(RECORD_BATCH_OVERHEAD), MAX_UNCOMPRESSED_BYTES);
    const baseOffset = Number(batch.baseOffset);
    const cursor = new RecordCursor(body, 0, body.length, view.getInt32(57));
    while (cursor.next()) {
      const offset = baseOffset + cursor.offsetDelta;
      stats.mapRecords++;
      if (cursor.keyLength < 0 || offset < start) continue;
      const key = cursor.key!;
      // A key already in the map does not grow it; a new one needs room.
      if (map.isFull && map.get(key) < 0) return false;
      map.put(key, offset);
    }
  }
  map.latestOffset = Number(batch.lastOffset);
  return true;
}

/**
 * Copies filtered batches into one buffer (the read chunk they may point into is reused) and
 * appends them to the cleaned segment whenever the next one would not fit. The appends are
 * written on the thread pool (LogSegment.appendInBackground): a write that waits for dirty-page
 * writeback stalls only the cleaner.
 */
class CleanedOutput {
  private buffer: Uint8Array;
  private batches: AppendedBatch[] = [];
  private usedBytes = 0;

  constructor(
    private readonly segment: LogSegment,
    private readonly indexIntervalBytes: number,
    bufferBytes: number,
  ) {
    this.buffer = new Uint8Array(bufferBytes);
  }

  /** Adds one filtered batch; returns the bytes appended to the segment to make room. */
  async add(
    batch: ChunkBatch,
    filtered: FilteredBatch,
    stats: CleanerStats,
    log: UnifiedLog,
  ): Promise<number> {
    stats.recordsRead += filtered.recordsRead;
    stats.recordsKept += filtered.recordsKept;
    if (filtered.deleteHorizonMs > log.latestDeleteHorizonMs) {
      log.latestDeleteHorizonMs = filtered.deleteHorizonMs;
    }
    const bytes = filtered.bytes;
    if (bytes === null) return 0;
    let written = 0;
    if (this.usedBytes + bytes.length > this.buffer.length) {
      written = await this.flush(stats);
      if (bytes.length > this.buffer.length) this.buffer = new Uint8Array(bytes.length);
    }
    this.batches.push({
      relativePosition: this.usedBytes,
      sizeBytes: bytes.length,
      lastOffset: batch.lastOffset,
      maxTimestamp: filtered.maxTimestamp,
    });
    this.buffer.set(bytes, this.usedBytes);
    this.usedBytes += bytes.length;
    return written;
  }

  /** Appends what is buffered to the segment; returns the bytes written. */
  async flush(stats: CleanerStats): Promise<number> {
    if (this.usedBytes === 0) return 0;
    const written = this.usedBytes;
    const bytes = this.buffer.subarray(0, written);
    await this.segment.appendInBackground(bytes, this.batches, this.indexIntervalBytes);
    stats.bytesWritten += written;
    this.batches = [];
    this.usedBytes = 0;
    return written;
  }
}

/** Steps 3 and 4 of segment-swap.ts and the segment list update, synchronously. */
function replaceGroup(log: UnifiedLog, group: readonly LogSegment[], cleaned: LogSegment): void {
  const base = group[0].baseOffset;
  const sealed = log.sealedSegments();
  const after = sealed[sealed.indexOf(group[group.length - 1]) + 1];
  const nextOffset = after?.baseOffset ?? log.activeSegmentBaseOffset;
  for (const old of group) {
    void old
      .delete(log.config.fileDeleteDelayMs)
      .catch((error: unknown) => log.logLine(`deleting a cleaned segment: ${error}`));
  }
  finishSwap(log.dir, base);
  const replacement = LogSegment.open(log.dir, base, nextOffset, log.filePool);
  replacement.adoptMaxTimestamp(cleaned);
  log.replaceSegments(group, replacement);
}

/**
 * Kafka's groupSegmentsBySize: consecutive segments whose total log size fits segment.bytes,
 * whose index sizes fit segment.index.bytes, and whose offsets stay within int32 of the group's
 * base offset.
 */
export function groupSegmentsBySize(
  segments: readonly LogSegment[],
  log: UnifiedLog,
  firstUncleanableOffset: bigint,
): LogSegment[][] {
  const maxSize = log.config.segmentBytes;
  const maxIndexSize = log.config.segmentIndexBytes;
  const groups: LogSegment[][] = [];
  let i = 0;
  while (i < segments.length) {
    const group = [segments[i]];
    let logSize = segments[i].sizeBytes;
    let [indexSize, timeIndexSize] = indexBytes(segments[i]);
    i++;
    while (i < segments.length) {
      const next = segments[i];
      const nextEnd = segments[i + 1]?.baseOffset ?? firstUncleanableOffset;
      const [nextIndexSize, nextTimeIndexSize] = indexBytes(next);
      const fits =
        logSize + next.sizeBytes <= maxSize &&
        indexSize + nextIndexSize <= maxIndexSize &&
        timeIndexSize + nextTimeIndexSize <= maxIndexSize &&
        (next.sizeBytes === 0 || nextEnd - 1n - group[0].baseOffset <= INT32_MAX);
      if (!fits) break;
      group.push(next);
      logSize += next.sizeBytes;
      indexSize += nextIndexSize;
      timeIndexSize += nextTimeIndexSize;
      i++;
    }
    groups.push(group);
  }
  return groups;
}

/** The sizes of a segment's offset index and time index files. */
function indexBytes(segment: LogSegment): [number, number] {
  return [
    segment.offsetIndex().entries * OFFSET_INDEX_ENTRY_BYTES,
    segment.timeIndex().entries * TIME_INDEX_ENTRY_BYTES,
  ];
}

/**
 * Kafka's lastRecordsOfActiveProducers: each active producer's last data offset, or its epoch
 * when it has no data batch left, for keeping the batch that holds its last sequence or epoch.
 */
function lastRecordsOfActiveProducers(log: UnifiedLog): {
  lastOffsetOfProducer: Map<bigint, bigint>;
  markerOnlyProducers: Map<bigint, number>;
} {
  const lastOffsetOfProducer = new Map<bigint, bigint>();
  const markerOnlyProducers = new Map<bigint, number>();
  for (const entry of log.producerState.activeProducers()) {
    if (entry.lastDataOffset >= 0n)
      lastOffsetOfProducer.set(entry.producerId, entry.lastDataOffset);
    else markerOnlyProducers.set(entry.producerId, entry.producerEpoch);
  }
  return { lastOffsetOfProducer, markerOnlyProducers };
}

/**
 * The aborted transactions overlapping [from, to), from the .txnindex files of the segment
 * holding `from` on. Their number is bounded by the markers in the log.
 */
function abortedTxnsOf(log: UnifiedLog, from: bigint, to: bigint): AbortedTxn[] {
  return log.collectAbortedTransactions(from, to, Number.MAX_SAFE_INTEGER);
}

/** The offset the segment after `segment` starts at (the active segment's for the last). */
function nextBaseOffset(log: UnifiedLog, segment: LogSegment): bigint {
  const sealed = log.sealedSegments();
  return sealed[sealed.indexOf(segment) + 1]?.baseOffset ?? log.activeSegmentBaseOffset;
}
