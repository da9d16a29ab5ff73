/**
 * Opens the segments of one partition directory, as Kafka's LogLoader does:
 *
 * 1. Finishes cleaner swaps a crash interrupted (a `.log.swap` file: segment-swap.ts), then
 *    removes leftovers of interrupted operations: `.deleted` (segment deletion), `.cleaned` (a
 *    cleaning that never reached its swap), index `.swap` files without their log, `.tmp`
 *    (checkpoint writes), and index files whose `.log` is gone.
 * 2. After a clean shutdown, trusts the files: it only finds the active segment's next offset
 *    (a short header scan from its last index entry) and reads each sealed segment's largest
 *    timestamp from the end of its time index.
 * 3. After a crash, validates every batch of every segment from the one holding the recovery
 *    point onwards, truncates at the first bad byte, deletes the segments after it, and
 *    rebuilds their indexes and the log's leader epochs from them (the epoch checkpoint is
 *    written only before the recovery point moves: leader-epoch-file-cache.ts). Each
 *    truncation is logged as one line.
 *
 * Indexes that are missing or corrupt are rebuilt from the log, eagerly for the active segment
 * and lazily (on first lookup) for sealed ones. Nothing is mmapped, so truncating is safe.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { assert } from "../util/assert.ts";
import type { Logger } from "../util/logger.ts";
import { CorruptIndexError } from "./corrupt-index-error.ts";
import type { LeaderEpochFileCache } from "./leader-epoch-file-cache.ts";
import type { LogEnvironment } from "./log-environment.ts";
import type { SegmentSettings } from "./log-segment.ts";
import {
  INDEX_FILE_SUFFIX,
  LogSegment,
  logFileStem,
  TIME_INDEX_FILE_SUFFIX,
} from "./log-segment.ts";
import type { PrereadFiles } from "./preread-files.ts";
import type { BatchEntry } from "./segment-batch-reader.ts";
import { recoverInterruptedSwaps } from "./segment-swap.ts";
import { TXN_INDEX_FILE_SUFFIX } from "./transaction-index.ts";

const STRAY_SUFFIXES = [".deleted", ".cleaned", ".swap", ".tmp"];
const SEGMENT_STEM = /^\d{20}$/;
/**
 * After a crash, the base offset of the first segment recovery validated: what is below it was
 * durable before the crash, what is above it is not known to be (LogSegment.recover with
 * `durable` false), so the log's recovery point may go no higher until the next flush.
 */
export function recoveredFrom(segments: readonly LogSegment[], recoveryPoint: bigint): bigint {
  let from = segments[0]!.baseOffset;
  for (const segment of segments)
    if (segment.baseOffset <= recoveryPoint) from = segment.baseOffset;
  return from;
}

/** An upper bound for the last segment's offsets before its real end is known. */
const UNKNOWN_END_OFFSET = 1n << 62n;

/** What loading a log's segments needs; UnifiedLog's LoadParams extends it. */
export interface SegmentLoadParams {
  readonly dir: string;
  readonly recoveryPoint: bigint;
  readonly logStartOffset: bigint;
  readonly cleanShutdown: boolean;
  readonly env: LogEnvironment;
  /** The log's directory was just made: nothing to list or load (LogSegment.createInNewDir). */
  readonly newDir?: boolean;
  /**
   * With newDir: the fd of the first segment's `.log` (base offset 0), created with the
   * directory on the thread pool (LogManager.createLogs).
   */
  readonly createdLogFd?: number;
  /**
   * The names in `dir`, listed on the thread pool before the load (LogManager.openAsync), so
   * the load does not list it again; the directory must not have changed since.
   */
  readonly listing?: readonly string[];
  /** With `listing`: small files of `dir` read ahead with it (preread-files.ts). */
  readonly preread?: PrereadFiles;
}

export function loadSegments(
  params: SegmentLoadParams,
  settings: SegmentSettings,
  epochs: LeaderEpochFileCache,
): LogSegment[] {
  const { dir, env } = params;
  if (params.newDir) {
    const segment = LogSegment.createInNewDir(
      dir,
      params.logStartOffset,
      settings,
      env.pool,
      params.createdLogFd,
    );
    installIndexLoader(segment, () => settings, env.logger);
    return [segment];
  }
  // A finished swap renamed and deleted files: the listing is stale then.
  const swapped = recoverInterruptedSwaps(dir, env.logger, params.listing) > 0;
  const preread = swapped ? undefined : params.preread;
  const baseOffsets = listSegmentBaseOffsets(dir, env.logger, swapped ? undefined : params.listing);
  if (baseOffsets.length > env.maxSegmentsPerLog) {
    env.logger.warn(`${dir}: ${baseOffsets.length} segments exceed the per-log limit`);
  }
  if (baseOffsets.length === 0) {
    const start = params.logStartOffset > 0n ? params.logStartOffset : 0n;
    const segment = LogSegment.create(dir, start, settings, env.pool);
    installIndexLoader(segment, () => settings, env.logger);
    return [segment];
  }
  const segments = baseOffsets.map((baseOffset, i) =>
    LogSegment.open(dir, baseOffset, baseOffsets[i + 1] ?? UNKNOWN_END_OFFSET, env.pool),
  );
  for (const segment of segments) installIndexLoader(segment, () => settings, env.logger);
  // The last segment stays the active one (unless crash recovery cuts an earlier one, which
  // deletes it and so unpins it): opening it read-write now saves a read-only open and close for
  // its scan, and keeps it out of the open-file pool's eviction order. With more logs than the
  // fd cap, an unpinned segment was evicted as soon as its recovery scan released it, and
  // eviction wrote its rebuilt indexes with a synchronous fdatasync: 6.3 s of the event loop's
  // 8 s in a start after kill -9 with 10,000 logs (docs/scaling.md).
  segments[segments.length - 1].file.pin();
  const live = params.cleanShutdown
    ? loadAfterCleanShutdown(segments, settings, env.logger, preread)
    : recoverAfterCrash(segments, params.recoveryPoint, settings, env.logger, epochs);
  live[live.length - 1].file.pin();
  return live;
}

/** Segment base offsets from the `.log` names, after deleting stray and orphan files. */
function listSegmentBaseOffsets(
  dir: string,
  logger: Logger,
  listing: readonly string[] | undefined,
): bigint[] {
  const names = listing ?? fs.readdirSync(dir);
  const logStems = new Set<string>();
  for (const name of names) {
    if (STRAY_SUFFIXES.some((suffix) => name.endsWith(suffix))) {
      logger.info(`${dir}: removing leftover file ${name}`);
      fs.rmSync(path.join(dir, name), { force: true });
    } else {
      const stem = logFileStem(name);
      if (stem !== null) logStems.add(stem);
    }
  }
  for (const name of names) {
    for (const suffix of [INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX]) {
      const stem = name.endsWith(suffix) ? name.slice(0, -suffix.length) : null;
      if (stem !== null && SEGMENT_STEM.test(stem) && !logStems.has(stem)) {
        logger.info(`${dir}: removing index ${name} without a log file`);
        fs.rmSync(path.join(dir, name), { force: true });
      }
    }
  }
  return [...logStems].map((stem) => BigInt(stem)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

function loadAfterCleanShutdown(
  segments: LogSegment[],
  settings: SegmentSettings,
  logger: Logger,
  preread: PrereadFiles | undefined,
): LogSegment[] {
  for (const segment of segments.slice(0, -1)) {
    try {
      segment.loadMaxTimestamp();
    } catch (error) {
      rebuild(segment, settings, logger, error);
    }
  }
  const active = segments[segments.length - 1];
  try {
    active.loadActiveState(settings, preread);
  } catch (error) {
    rebuild(active, settings, logger, error);
  }
  return segments;
}

function recoverAfterCrash(
  segments: LogSegment[],
  recoveryPoint: bigint,
  settings: SegmentSettings,
  logger: Logger,
  epochs: LeaderEpochFileCache,
): LogSegment[] {
  const from = recoveredFrom(segments, recoveryPoint);
  const firstUnflushed = segments.findIndex((s) => s.baseOffset === from);
  // The checkpoint may lack epochs of the batches from here on, or hold ones they contradict.
  epochs.discardFrom(from);
  const rebuildEpochs = (batch: BatchEntry) => {
    if (batch.leaderEpoch > epochs.latestEpoch) epochs.assign(batch.leaderEpoch, batch.baseOffset);
  };
  for (const segment of segments.slice(0, firstUnflushed)) {
    try {
      segment.loadMaxTimestamp();
    } catch (error) {
      rebuild(segment, settings, logger, error);
    }
  }
  for (let i = firstUnflushed; i < segments.length; i++) {
    const segment = segments[i];
    const sizeBeforeBytes = segment.sizeBytes;
    const result = segment.recover(settings, false, rebuildEpochs);
    if (result.problem === null) continue;
    const position = sizeBeforeBytes - result.truncatedBytes;
    logger.warn(
      `${segment.file.filePath}: truncated at position ${position}` +
        ` (${result.truncatedBytes} bytes removed): ${result.problem}`,
    );
    for (const later of segments.slice(i + 1)) {
      logger.info(`${later.file.filePath}: deleted, it follows a truncated segment`);
      void later.delete().catch((error: unknown) => logger.warn(`${String(error)}`));
    }
    segments = segments.slice(0, i + 1);
    break;
  }
  assert(segments.length > 0, "recovery removed every segment");
  return segments;
}

function rebuild(
  segment: LogSegment,
  settings: SegmentSettings,
  logger: Logger,
  cause: unknown,
): void {
  if (!(cause instanceof CorruptIndexError) && (cause as { code?: string }).code !== "ENOENT") {
    throw cause;
  }
  logger.info(`${segment.file.filePath}: rebuilding indexes: ${(cause as Error).message}`);
  const result = segment.recover(settings);
  if (result.problem !== null) {
    logger.warn(
      `${segment.file.filePath}: truncated ${result.truncatedBytes} bytes while ` +
        `rebuilding: ${result.problem}`,
    );
  }
}

/**
 * Sealed segments load their indexes on first use; a missing or corrupt index is rebuilt
 * from the log (a full validating scan) and written out again.
 */
export function installIndexLoader(
  segment: LogSegment,
  settings: () => SegmentSettings,
  logger: Logger,
): void {
  segment.lazyIndexLoader = () => {
    try {
      segment.loadIndexes(settings());
    } catch (error) {
      rebuild(segment, settings(), logger, error);
    }
  };
}
