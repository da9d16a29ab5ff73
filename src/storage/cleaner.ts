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
 * The reading, the offset map and the filtering run in the cleaner's Worker
 * (cleaner-worker.ts), one request per segment: the Worker reads the segment through an fd the
 * event loop lends it, chunk by chunk (log.cleaner.io.buffer.size), and writes a group's
 * survivors into the `.cleaned` log; the event loop only indexes what was written, fdatasyncs on
 * the thread pool and swaps segments, so requests are served while a log is cleaned.
 * A change to the log that cleaning cannot survive (truncation, deletion, close, retention
 * removing a segment being cleaned) is noticed at the next reply and abandons the cleaning; its
 * `.cleaned` files are removed.
 */
import * as fs from "node:fs";
import type { CleanerThread } from "./cleaner-thread.ts";
import type {
  CleanerWorkerRequest,
  FilterSegmentReply,
  MapSegmentReply,
  SegmentSource,
  SegmentWork,
} from "./cleaner-worker-messages.ts";
import { fsyncDirectoryInBackground } from "./durable-file.ts";
import { LogSegment } from "./log-segment.ts";
import { OFFSET_INDEX_ENTRY_BYTES } from "./offset-index.ts";
import {
  CLEANED_FILE_SUFFIX,
  deleteCleanedFiles,
  finishSwap,
  markCleanedAsSwap,
  SWAP_FILE_SUFFIX,
} from "./segment-swap.ts";
import { TIME_INDEX_ENTRY_BYTES } from "./time-index.ts";
import type { AbortedTxn } from "./transaction-index.ts";
import type { UnifiedLog } from "./unified-log.ts";
import { settingsOf } from "./unified-log.ts";

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
  /** Time slept by log.cleaner.io.max.bytes.per.second's throttle. */
  throttledMs: number;
}

export interface CleanResult {
  /** Everything below it is clean now: the cleaner's next first dirty offset. */
  readonly endOffset: bigint;
  readonly stats: CleanerStats;
}

/** Thrown when the log changed so that this cleaning cannot finish; nothing was lost. */
export class CleaningAbortedError extends Error {}

export interface CleanerOptions {
  /** The Worker that builds the offset map and filters batches. */
  readonly thread: CleanerThread;
  /** log.cleaner.dedupe.buffer.size and log.cleaner.io.buffer.load.factor: the map's size. */
  readonly dedupeBufferBytes: number;
  readonly loadFactor: number;
  /**
   * log.cleaner.io.max.bytes.per.second (reads plus writes; Infinity: unthrottled) in element 0
   * of shared memory, which the LogCleaner updates on a dynamic change.
   */
  readonly ioMaxBytesPerSecond: Float64Array;
  /** log.cleaner.io.buffer.size: the Worker's chunk. */
  readonly ioBufferBytes: number;
  /** Called around each request to the Worker: true when the cleaner is being stopped. */
  readonly stopping: () => boolean;
}

export class Cleaner {
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
      throttledMs: 0,
    };
    const { log } = target;
    const epoch = log.layoutEpoch;
    const guard = (): void => this.checkStillValid(log, epoch);
    const latestOffset = await this.buildOffsetMap(target, stats, guard);
    const endOffset = BigInt(latestOffset) + 1n;
    const filterBegin: CleanerWorkerRequest = {
      type: "filter-begin",
      nowMs,
      deleteRetentionMs: log.config.deleteRetentionMs,
      ...lastRecordsOfActiveProducers(log),
    };
    await this.call(filterBegin, guard);
    const segments = log.sealedSegments().filter((s) => s.baseOffset < endOffset);
    for (const group of groupSegmentsBySize(segments, log, target.firstUncleanableOffset)) {
      await this.cleanGroup(log, group, stats, guard);
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

  /**
   * One request to the Worker. The log is checked before (a stopped cleaner starts no Worker)
   * and after; a failure while the cleaner stops or the log went is an abandoned cleaning.
   */
  private async call<T>(request: CleanerWorkerRequest, guard: () => void): Promise<T> {
    guard();
    let reply: T;
    try {
      reply = await this.options.thread.request<T>(request);
    } catch (error) {
      guard();
      throw error;
    }
    guard();
    return reply;
  }

  /**
   * A request over one segment: its fd is lent to the Worker with a reference held until the
   * request is answered or has failed (which is only once the Worker's thread is gone), so an
   * fd pool eviction or the segment's deletion cannot close it under the Worker.
   */
  private async segmentCall<T extends SegmentWork>(
    segment: LogSegment,
    request: (source: SegmentSource) => CleanerWorkerRequest,
    stats: CleanerStats,
    guard: () => void,
  ): Promise<T> {
    guard();
    const fd = segment.file.acquire();
    let reply: T;
    try {
      const source = { fd, sizeBytes: segment.sizeBytes, filePath: segment.file.filePath };
      reply = await this.call<T>(request(source), guard);
    } finally {
      segment.file.release();
    }
    stats.bytesRead += reply.bytesRead;
    stats.throttledMs += reply.throttledMs;
    return reply;
  }

  /**
   * Step 1: the dirty section's keys into the Worker's map, until it is read or the map is full.
   * Returns the map's latest offset (the last offset of the last batch wholly in it).
   */
  private async buildOffsetMap(
    target: LogToClean,
    stats: CleanerStats,
    guard: () => void,
  ): Promise<number> {
    const start = Number(target.firstDirtyOffset);
    const end = target.firstUncleanableOffset;
    const sealed = target.log.sealedSegments();
    const dirty = sealed.filter((s, i) => {
      const next = sealed[i + 1]?.baseOffset ?? target.log.activeSegmentBaseOffset;
      return s.baseOffset < end && next > target.firstDirtyOffset;
    });
    const begin: CleanerWorkerRequest = {
      type: "map-begin",
      bufferBytes: this.options.dedupeBufferBytes,
      loadFactor: this.options.loadFactor,
      // Every key put lies in [firstDirtyOffset, firstUncleanableOffset): no more keys than that.
      keysMax: Number(end - target.firstDirtyOffset),
      start,
      end,
      abortedTxns: abortedTxnsOf(target.log, target.firstDirtyOffset, end),
      chunkBytes: this.options.ioBufferBytes,
      ioMaxBytesPerSecond: this.options.ioMaxBytesPerSecond,
    };
    await this.call(begin, guard);
    let latestOffset = start - 1;
    for (const segment of dirty) {
      const reply = await this.segmentCall<MapSegmentReply>(
        segment,
        (source) => ({ type: "map-segment", source }),
        stats,
        guard,
      );
      stats.mapRecords += reply.mapRecords;
      latestOffset = reply.latestOffset;
      if (reply.done) break;
    }
    return latestOffset;
  }

  /** Step 3 for one group: filter into a `.cleaned` segment, then swap it in. */
  private async cleanGroup(
    log: UnifiedLog,
    group: readonly LogSegment[],
    stats: CleanerStats,
    guard: () => void,
  ): Promise<void> {
    const base = group[0].baseOffset;
    const settings = settingsOf(log.config);
    const cleaned = LogSegment.create(log.dir, base, settings, log.filePool, CLEANED_FILE_SUFFIX);
    try {
      for (const segment of group) {
        const next = nextBaseOffset(log, segment);
        const abortedTxns = abortedTxnsOf(log, segment.baseOffset, next);
        const reply = await this.segmentCall<FilterSegmentReply>(
          segment,
          (source) => ({
            type: "filter-segment",
            source,
            abortedTxns,
            outputFd: cleaned.file.writeFd(),
            outputPosition: cleaned.sizeBytes,
          }),
          stats,
          guard,
        );
        this.adopt(log, cleaned, reply, stats);
      }
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

  /** What the Worker wrote for one segment: into the cleaned segment's indexes and the stats. */
  private adopt(
    log: UnifiedLog,
    cleaned: LogSegment,
    reply: FilterSegmentReply,
    stats: CleanerStats,
  ): void {
    stats.recordsRead += reply.recordsRead;
    stats.recordsKept += reply.recordsKept;
    stats.bytesWritten += reply.bytesWritten;
    if (reply.deleteHorizonMs > log.latestDeleteHorizonMs) {
      log.latestDeleteHorizonMs = reply.deleteHorizonMs;
    }
    // The kept ABORT markers' entries, for the cleaned segment's .txnindex.
    for (const txn of reply.keptAbortedTxns) cleaned.txnIndex.append(txn);
    if (reply.batches.length > 0) {
      cleaned.adoptWrittenBatches(reply.bytesWritten, reply.batches, log.config.indexIntervalBytes);
    }
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
