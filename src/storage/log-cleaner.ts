/**
 * The LogCleaner (Kafka's LogCleaner and LogCleanerManager, one cleaner thread): a background
 * loop that repeatedly picks the compacted log most in need of cleaning and cleans it
 * (cleaner.ts), then backs off for log.cleaner.backoff.ms when nothing needs it.
 *
 * Choosing (Kafka's grabFilthiestCompactedLog): for each log whose cleanup.policy includes
 * compact, the dirty section runs from its cleaner offset (cleaner-offset-checkpoint) to the
 * first uncleanable offset: the active segment, the last stable offset, or the first segment with a
 * record younger than min.compaction.lag.ms, whichever is lowest. A log is a candidate when its
 * dirty ratio (dirty bytes / all bytes) exceeds min.cleanable.dirty.ratio, or when a dirty
 * record is older than max.compaction.lag.ms; the highest ratio goes first. When no log is a
 * candidate, a log holding tombstones whose delete horizon has passed is cleaned to drop them
 * (Quill's choice, so deletes finish without new writes; see docs/log-compaction.md).
 *
 * A cleaning's reads, offset map, filtering and writes run in a Worker (cleaner-worker.ts); the
 * event loop indexes what it wrote and swaps segments (cleaner.ts), so requests are served while
 * a log is cleaned.
 * A log whose cleaning fails for another reason than a concurrent change is marked uncleanable
 * until restart, as Kafka does, and the others go on.
 */
import { assert } from "../util/assert.ts";
import type { Logger } from "../util/logger.ts";
import type { CleanResult, LogToClean } from "./cleaner.ts";
import { Cleaner, CleaningAbortedError } from "./cleaner.ts";
import { CleanerThread } from "./cleaner-thread.ts";
import { isCompacted } from "./log-config.ts";
import type { UnifiedLog } from "./unified-log.ts";

export interface LogCleanerConfig {
  /** log.cleaner.enable */
  readonly enable: boolean;
  /** log.cleaner.dedupe.buffer.size: the offset map's memory. */
  readonly dedupeBufferBytes: number;
  /** log.cleaner.io.buffer.load.factor */
  readonly loadFactor: number;
  /** log.cleaner.io.buffer.size: bytes read (and written) per slice. */
  readonly ioBufferBytes: number;
  /** log.cleaner.io.max.bytes.per.second (reads plus writes); Infinity: unthrottled. */
  readonly ioMaxBytesPerSecond: number;
  /** log.cleaner.backoff.ms: the pause when no log needs cleaning. */
  readonly backoffMs: number;
}

/** Kafka 3.9's defaults (one cleaner thread gets the whole dedupe buffer). */
export const DEFAULT_LOG_CLEANER_CONFIG: LogCleanerConfig = Object.freeze({
  enable: true,
  dedupeBufferBytes: 128 * 1024 * 1024,
  loadFactor: 0.9,
  ioBufferBytes: 512 * 1024,
  ioMaxBytesPerSecond: Infinity,
  backoffMs: 15_000,
});

function checkCleanerConfig(config: LogCleanerConfig): void {
  assert(config.ioBufferBytes > 0, `log.cleaner.io.buffer.size ${config.ioBufferBytes}`);
  assert(config.backoffMs > 0, `log.cleaner.backoff.ms ${config.backoffMs}`);
  assert(
    config.ioMaxBytesPerSecond > 0,
    `log.cleaner.io.max.bytes.per.second ${config.ioMaxBytesPerSecond}`,
  );
}

/** A candidate with what made it one (for choosing and for the log line). */
export interface CleanableLog extends LogToClean {
  readonly cleanableRatio: number;
  readonly needCompactionNow: boolean;
  readonly tombstonesExpired: boolean;
}

export interface LogCleanerHooks {
  /** Called (and awaited) after each cleaning so the cleaner offsets get checkpointed. */
  readonly onCleaned?: (log: UnifiedLog, result: CleanResult) => void | Promise<void>;
}

export class LogCleaner {
  /** Started on first use, so a broker without compacted topics never starts the Worker. */
  private thread: CleanerThread | null = null;
  /**
   * log.cleaner.io.max.bytes.per.second, shared with the Worker, whose throttle reads it at every
   * check: a dynamic change reaches the cleaning in progress, as Kafka's updates its throttler.
   */
  private readonly ioMaxBytesPerSecond = new Float64Array(new SharedArrayBuffer(8));
  private readonly uncleanable = new WeakSet<UnifiedLog>();
  private loop: Promise<void> | null = null;
  /**
   * The cleaning running (or the last one): the next waits for it. The Worker holds one
   * cleaning's offset map, so a second cleaning beside the first would begin a new map between
   * its segments.
   */
  private cleaning: Promise<unknown> = Promise.resolve();
  private cleaningsQueued = 0;
  private stopRequested = false;
  private wakeUp: (() => void) | null = null;

  constructor(
    private settings: LogCleanerConfig,
    private readonly logs: () => Iterable<UnifiedLog>,
    private readonly logger: Logger,
    private readonly hooks: LogCleanerHooks = {},
  ) {
    checkCleanerConfig(settings);
    this.ioMaxBytesPerSecond[0] = settings.ioMaxBytesPerSecond;
  }

  get config(): LogCleanerConfig {
    return this.settings;
  }

  /**
   * New settings (Kafka's LogCleaner.reconfigure, from a dynamic config change): the next
   * cleaning uses them; one in progress finishes with the map and buffers it started with, but
   * takes a new log.cleaner.io.max.bytes.per.second at its next throttle check.
   * `enable` stays as it was at start, as in Kafka.
   */
  reconfigure(config: Omit<LogCleanerConfig, "enable">): void {
    const next = { ...config, enable: this.settings.enable };
    checkCleanerConfig(next);
    // A new map size reaches the Worker with the next cleaning's first request, a new rate now.
    this.ioMaxBytesPerSecond[0] = next.ioMaxBytesPerSecond;
    this.settings = next;
  }

  /** Starts the background loop (log.cleaner.enable=false: never). */
  start(): void {
    if (!this.config.enable || this.loop !== null) return;
    this.stopRequested = false;
    this.loop = this.run();
  }

  /** Stops the loop; a cleaning in progress is abandoned at its next slice. */
  async stop(): Promise<void> {
    this.requestStop();
    await this.loop;
    this.loop = null;
  }

  /** Asks a stop without waiting (the LogManager's synchronous close). */
  requestStop(): void {
    this.stopRequested = true;
    this.wakeUp?.();
    // The segment in the Worker is not waited for: the cleaning in progress fails as abandoned.
    this.thread?.terminate();
    this.thread = null;
  }

  /** The Worker's thread id, the chunks it has handled, whether it is working (for tests). */
  get workerActivity(): { threadId: number; chunks: number; busy: boolean } {
    const thread = this.thread;
    return {
      threadId: thread?.workerThreadId ?? -1,
      chunks: thread?.chunksDone ?? 0,
      busy: thread?.busy ?? false,
    };
  }

  private async run(): Promise<void> {
    while (!this.stopRequested) {
      let cleaned = false;
      try {
        cleaned = (await this.cleanOnce()) !== null;
      } catch (error) {
        this.logger.warn(`unexpected failure: ${String(error)}`);
      }
      if (!cleaned && !this.stopRequested) await this.backOff();
    }
  }

  private backOff(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.config.backoffMs);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = () => {
        this.wakeUp = null;
        done();
      };
    });
  }

  /**
   * Cleans the filthiest log once. Returns what was cleaned, or null when no log needed it or
   * the cleaning was abandoned. Used by the loop and directly by tests.
   */
  cleanOnce(nowMs = Date.now()): Promise<CleanResult | null> {
    // With none running it starts in this turn (its choice and throttle period start now).
    const next =
      this.cleaningsQueued === 0
        ? this.cleanFilthiest(nowMs)
        : this.cleaning.then(() => this.cleanFilthiest(nowMs));
    this.cleaningsQueued++;
    this.cleaning = next
      .catch(() => {})
      .finally(() => {
        this.cleaningsQueued--;
      });
    return next;
  }

  private async cleanFilthiest(nowMs: number): Promise<CleanResult | null> {
    const target = this.grabFilthiestLog(nowMs);
    if (target === null) return null;
    const { log } = target;
    const startedMs = performance.now();
    this.thread ??= new CleanerThread();
    const cleaner = new Cleaner({
      thread: this.thread,
      dedupeBufferBytes: this.config.dedupeBufferBytes,
      loadFactor: this.config.loadFactor,
      ioMaxBytesPerSecond: this.ioMaxBytesPerSecond,
      ioBufferBytes: this.config.ioBufferBytes,
      stopping: () => this.stopRequested,
    });
    let result: CleanResult;
    try {
      log.latestDeleteHorizonMs = -1;
      result = await cleaner.clean(target, nowMs);
    } catch (error) {
      this.failed(log, error);
      return null;
    }
    await this.finished(target, result, performance.now() - startedMs);
    return result;
  }

  private failed(log: UnifiedLog, error: unknown): void {
    if (error instanceof CleaningAbortedError) {
      this.logger.warn(`cleaning of ${log.name} abandoned: ${error.message}`);
      return;
    }
    this.uncleanable.add(log);
    this.logger.warn(`${log.name} marked uncleanable until restart: ${String(error)}`);
  }

  private async finished(
    target: CleanableLog,
    result: CleanResult,
    elapsedMs: number,
  ): Promise<void> {
    const { log } = target;
    const dirtyBytes = target.firstUncleanableOffset > target.firstDirtyOffset;
    if (result.endOffset <= target.firstDirtyOffset && dirtyBytes && !target.tombstonesExpired) {
      this.uncleanable.add(log);
      this.logger.warn(
        `${log.name} marked uncleanable: one batch at offset ` +
          `${target.firstDirtyOffset} has more keys than log.cleaner.dedupe.buffer.size holds`,
      );
      return;
    }
    if (result.endOffset > log.cleanerOffset) log.cleanerOffset = result.endOffset;
    const s = result.stats;
    const mb = (n: number): string => (n / 1048576).toFixed(1);
    const rate = mb((s.bytesRead * 1000) / Math.max(1, elapsedMs));
    this.logger.info(
      `cleaned ${log.name} (dirty section [${target.firstDirtyOffset}, ` +
        `${result.endOffset})): ${mb(s.bytesRead)} MB read, ${mb(s.bytesWritten)} MB written in ` +
        `${(elapsedMs / 1000).toFixed(1)} s (${rate} ` +
        `MB/s); ${s.recordsKept} of ${s.recordsRead} records kept; ${s.segmentsCleaned} ` +
        `segments into ${s.groups}` +
        (s.throttledMs > 0 ? `; throttled ${(s.throttledMs / 1000).toFixed(1)} s` : ""),
    );
    await this.hooks.onCleaned?.(log, result);
  }

  /** The compacted log most in need of cleaning, or null. */
  grabFilthiestLog(nowMs: number): CleanableLog | null {
    let best: CleanableLog | null = null;
    let expired: CleanableLog | null = null;
    for (const log of this.logs()) {
      if (log.isClosed || !isCompacted(log.config) || this.uncleanable.has(log)) continue;
      const candidate = cleanableOf(log, nowMs);
      const eligible =
        (candidate.needCompactionNow &&
          candidate.firstUncleanableOffset > candidate.firstDirtyOffset) ||
        candidate.cleanableRatio > log.config.minCleanableDirtyRatio;
      if (eligible && (best === null || candidate.cleanableRatio > best.cleanableRatio)) {
        best = candidate;
      } else if (!eligible && candidate.tombstonesExpired) {
        expired ??= candidate;
      }
    }
    return best ?? expired;
  }
}

/** Kafka's LogCleanerManager.cleanableOffsets and the ratio of one log. */
export function cleanableOf(log: UnifiedLog, nowMs: number): CleanableLog {
  const start = log.logStartOffset;
  const end = log.logEndOffset;
  // A checkpoint outside the log (the log was emptied or truncated meanwhile) starts over.
  const checkpoint = log.cleanerOffset;
  const firstDirtyOffset = checkpoint < start || checkpoint > end ? start : checkpoint;
  const sealed = log.sealedSegments();
  const activeBase = log.activeSegmentBaseOffset;
  // The last stable offset (the high watermark, or an open transaction's first offset below it):
  // records of undecided transactions are not cleaned, as in Kafka.
  const stable = log.lastStableOffset;
  let firstUncleanableOffset = activeBase < stable ? activeBase : stable;
  const minLagMs = Math.max(0, log.config.minCompactionLagMs);
  let earliestDirtyTimestamp = Infinity;
  let cleanBytes = 0;
  let cleanableBytes = 0;
  for (let i = 0; i < sealed.length; i++) {
    const segment = sealed[i];
    const next = sealed[i + 1]?.baseOffset ?? activeBase;
    if (next <= firstDirtyOffset) {
      cleanBytes += segment.sizeBytes;
      continue;
    }
    if (
      minLagMs > 0 &&
      segment.largestTimestampMs() > nowMs - minLagMs &&
      segment.baseOffset < firstUncleanableOffset
    ) {
      firstUncleanableOffset =
        segment.baseOffset > firstDirtyOffset ? segment.baseOffset : firstDirtyOffset;
    }
    if (segment.baseOffset < firstUncleanableOffset) cleanableBytes += segment.sizeBytes;
    const first = Number(segment.firstBatchTimestamp());
    if (first > 0 && first < earliestDirtyTimestamp) earliestDirtyTimestamp = first;
  }
  if (firstUncleanableOffset < firstDirtyOffset) firstUncleanableOffset = firstDirtyOffset;
  const total = cleanBytes + cleanableBytes;
  const maxLagMs = Math.max(0, log.config.maxCompactionLagMs);
  return {
    log,
    firstDirtyOffset,
    firstUncleanableOffset,
    cleanableRatio: total === 0 ? 0 : cleanableBytes / total,
    needCompactionNow: earliestDirtyTimestamp < nowMs - maxLagMs,
    tombstonesExpired: log.latestDeleteHorizonMs >= 0 && log.latestDeleteHorizonMs <= nowMs,
  };
}
