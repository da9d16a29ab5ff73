/**
 * Moving a replica between the log dirs of this broker while it serves (KIP-113; Kafka's
 * ReplicaManager.alterReplicaLogDirs, ReplicaAlterLogDirsManager and ReplicaAlterLogDirsThread).
 *
 * AlterReplicaLogDirs creates the partition's future log, `<topic>-<partition>.<uuid>-future`,
 * empty, in the target dir; a move then copies into it from the current log as a follower
 * copies from its leader: whole batches read from the current log's segment files (positional
 * reads on the thread pool, at most `replica.fetch.max.bytes` per slice, so the event loop
 * serves requests between slices) and appended with appendAsFollower, which keeps their
 * offsets and epochs and rebuilds the producer state and leader-epoch cache from them. Between
 * slices the future log follows the current one: its high watermark and log start offset, a
 * truncation of the current log (the future is cut where their epochs part), and a log start
 * beyond the future's end (it starts over there).
 *
 * Once the last slice read to the current log's end, the future log is flushed on the thread
 * pool, then the rest (what was appended meanwhile) is copied synchronously and the logs are
 * swapped in the same event-loop turn, so no append comes between (Kafka takes the partition's
 * lock): LogManager.replaceCurrentWithFutureLog.
 *
 * Copies are throttled by `replica.alter.log.dirs.io.max.bytes.per.second` (dynamic; Kafka's
 * AlterLogDirs quota over the same 11-second window as the replication throttles).
 *
 * Reads go through Bun.file, over `/proc/self/fd/<n>` of the range's fd: Bun.file(fd).slice
 * reads from the fd's current position, not the range's (docs/bun.md), and the segment's path
 * may be renamed or deleted under the read, while the /proc name opens the file the fd holds.
 * It read 1 MiB chunks 2-10 times faster than pread on the thread pool (docs/bun.md). The last
 * step before the swap reads synchronously (pread), from the page cache.
 */
import * as fs from "node:fs";
import type { FileRange } from "../protocol/records.ts";
import type { LogManager } from "../storage/log-manager.ts";
import type { UnifiedLog } from "../storage/unified-log.ts";
import type { Logger } from "../util/logger.ts";
import type { ReplicationQuota } from "./replication-quota.ts";

/** Whether an open fd's file can be opened again by its /proc name (Linux). */
const PROC_FD_NAMES = process.platform === "linux";
/** How long a throttled move waits before it asks the quota again. */
const QUOTA_BACKOFF_MS = 100;
/**
 * Bytes a move copies between two flushes of its future log on the thread pool. Without them
 * the kernel let a fast copy's dirty pages pile up and then held the event loop's writes while
 * it wrote them back (hundreds of ms, scripts/bench-alter-log-dirs.ts).
 */
const FLUSH_INTERVAL_BYTES = 32 * 1024 * 1024;
/** The most the last, synchronous step copies (from the page cache) before the swap. */
const TAIL_BYTES_MAX = 256 * 1024;

export interface AlterLogDirsHost {
  readonly logs: LogManager;
  /** Bytes per slice (replica.fetch.max.bytes, as Kafka's thread fetches). */
  readonly sliceBytes: number;
  readonly quota: ReplicationQuota;
  /** The move finished: the partition's state serves `log` from now on. */
  onLogReplaced(topic: string, partition: number, log: UnifiedLog): void;
  readonly logger: Logger;
}

interface Move {
  readonly topic: string;
  readonly partition: number;
  readonly future: UnifiedLog;
  stopped: boolean;
  /** Bytes appended to the future log since its last flush. */
  unflushedBytes: number;
  /** The move's read buffer, grown to the largest slice read. */
  buffer: Uint8Array;
  done: Promise<void>;
}

interface LogPair {
  readonly source: UnifiedLog;
  readonly future: UnifiedLog;
}

export class ReplicaAlterLogDirsManager {
  /** One per future log; bounded by the logs this broker holds. */
  private readonly moves = new Map<string, Move>();

  constructor(private readonly host: AlterLogDirsHost) {}

  /** Starts copying into the partition's future log, unless that move runs already. */
  start(topic: string, partition: number): void {
    const future = this.host.logs.getFutureLog(topic, partition);
    if (future === undefined) return;
    const key = `${topic}-${partition}`;
    if (this.moves.get(key)?.future === future) return;
    this.stop(topic, partition);
    const move: Move = {
      topic,
      partition,
      future,
      stopped: false,
      unflushedBytes: 0,
      buffer: new Uint8Array(0),
      done: Promise.resolve(),
    };
    this.moves.set(key, move);
    move.done = this.run(move)
      .catch((error: unknown) => this.onMoveError(move, error))
      .finally(() => {
        if (this.moves.get(key) === move) this.moves.delete(key);
      });
  }

  /** Stops the partition's move (its future log is the caller's to keep or drop). */
  stop(topic: string, partition: number): void {
    const key = `${topic}-${partition}`;
    const move = this.moves.get(key);
    if (move === undefined) return;
    move.stopped = true;
    this.moves.delete(key);
  }

  get activeMoves(): number {
    return this.moves.size;
  }

  /** Stops every move and waits until none touches a log any more. */
  async shutdown(): Promise<void> {
    const moves = [...this.moves.values()];
    for (const move of moves) move.stopped = true;
    this.moves.clear();
    await Promise.all(moves.map((m) => m.done));
  }

  private onMoveError(move: Move, error: unknown): void {
    const logs = this.host.logs;
    const source = logs.getLog(move.topic, move.partition);
    // An I/O error fails the dir it came from (KIP-112); the move ends with it.
    if (source !== undefined && logs.maybeFailLogDirOf(move.future, error)) return;
    this.host.logger.error(`moving ${move.topic}-${move.partition} failed: ${String(error)}`);
  }

  private async run(move: Move): Promise<void> {
    let nearEnd = false;
    while (!move.stopped) {
      const pair = this.pair(move);
      if (pair === null) return;
      this.followSource(pair);
      if (nearEnd || pair.future.logEndOffset === pair.source.logEndOffset) {
        // Flushed on the thread pool first, so the swap's own flush covers only the tail.
        if (pair.future.flushedOffset < pair.future.logEndOffset) {
          await pair.future.flushAsync();
          continue;
        }
        if (this.copyTailAndSwap(move, pair)) return;
      }
      while (!move.stopped && this.host.quota.isExceeded(Date.now())) {
        await Bun.sleep(QUOTA_BACKOFF_MS);
      }
      if (move.stopped) return;
      nearEnd = await this.copySlice(move);
      if (move.unflushedBytes >= FLUSH_INTERVAL_BYTES) {
        move.unflushedBytes = 0;
        await pair.future.flushAsync();
      }
    }
  }

  /** The current and future logs of the move, or null once either is gone or replaced. */
  private pair(move: Move): LogPair | null {
    const logs = this.host.logs;
    const source = logs.getLog(move.topic, move.partition);
    const future = logs.getFutureLog(move.topic, move.partition);
    if (source === undefined || future !== move.future || future.isClosed) return null;
    return { source, future };
  }

  /**
   * What the follower learns from its leader's answers: the future log is cut where it parts
   * from the current one (a truncation there), starts over at the current log start when it
   * fell below it, and takes its high watermark and log start offset.
   */
  private followSource({ source, future }: LogPair): void {
    if (future.logEndOffset > source.logEndOffset) future.truncateTo(source.logEndOffset);
    const epoch = future.leaderEpochCache.latestEpoch;
    if (epoch >= 0) {
      const { endOffset } = source.leaderEpochCache.endOffsetFor(epoch, source.logEndOffset);
      if (endOffset >= 0n && endOffset < future.logEndOffset) future.truncateTo(endOffset);
    }
    if (future.logEndOffset < source.logStartOffset) {
      future.truncateFullyAndStartAt(source.logStartOffset);
    }
    const hw =
      source.highWatermark < future.logEndOffset ? source.highWatermark : future.logEndOffset;
    future.highWatermark = hw;
    const start = source.logStartOffset < hw ? source.logStartOffset : hw;
    future.maybeIncrementLogStartOffset(start, "the moving replica's log start offset");
  }

  /**
   * Copies one slice off the event loop: whole batches from the future's end. True when it
   * reached what was the current log's end when the read began (false also when the logs
   * changed meanwhile and the slice was dropped).
   */
  private async copySlice(move: Move): Promise<boolean> {
    const pair = this.pair(move);
    if (pair === null) return false;
    const { source, future } = pair;
    const from = future.logEndOffset;
    const end = source.logEndOffset;
    const layout = source.layoutEpoch;
    const read = source.read(from, this.host.sliceBytes, { maxOffset: end, minOneMessage: true });
    let bytes: Uint8Array | null;
    try {
      const buffer = () => bufferOf(move, read.sizeBytes, this.host.sliceBytes);
      bytes = await readRanges(read.ranges, read.sizeBytes, buffer);
    } catch (error) {
      this.host.logs.maybeFailLogDirOf(source, error);
      throw error;
    } finally {
      for (const range of read.ranges) range.release();
    }
    const now = this.pair(move);
    // A truncation meanwhile (a short read, a new layout): the slice is read again.
    if (now === null || now.source !== source || source.layoutEpoch !== layout) return false;
    if (bytes === null || future.logEndOffset !== from) return false;
    if (read.sizeBytes > 0) {
      future.appendAsFollower(bytes);
      move.unflushedBytes += read.sizeBytes;
      this.host.quota.record(read.sizeBytes, Date.now());
      this.followSource(now);
    }
    return future.logEndOffset >= end;
  }

  /**
   * The end of the move, in one event-loop turn: what the current log holds beyond the future
   * (appended since the last slice, in the page cache) is copied synchronously, then the logs
   * are swapped. False when more than TAIL_BYTES_MAX were missing: the slices go on.
   */
  private copyTailAndSwap(move: Move, { source, future }: LogPair): boolean {
    let copied = 0;
    while (future.logEndOffset < source.logEndOffset && copied < TAIL_BYTES_MAX) {
      const read = source.read(future.logEndOffset, TAIL_BYTES_MAX - copied, {
        maxOffset: source.logEndOffset,
        minOneMessage: true,
      });
      const buffer = bufferOf(move, read.sizeBytes, this.host.sliceBytes);
      try {
        let at = 0;
        for (const range of read.ranges) {
          at += readFully(range, buffer, at);
        }
      } finally {
        for (const range of read.ranges) range.release();
      }
      future.appendAsFollower(buffer.subarray(0, read.sizeBytes));
      copied += read.sizeBytes;
    }
    this.host.quota.record(copied, Date.now());
    if (future.logEndOffset !== source.logEndOffset) return false;
    const log = this.host.logs.replaceCurrentWithFutureLog(move.topic, move.partition);
    if (log !== undefined) this.host.onLogReplaced(move.topic, move.partition, log);
    return true;
  }
}

/** The move's buffer, at least `sizeBytes` long (a batch may exceed the slice size). */
function bufferOf(move: Move, sizeBytes: number, sliceBytes: number): Uint8Array {
  if (move.buffer.length < sizeBytes) {
    move.buffer = new Uint8Array(Math.max(sizeBytes, sliceBytes));
  }
  return move.buffer;
}

/**
 * The bytes of `ranges`, one after another, read off the event loop; null when a range came
 * back short (the file was cut meanwhile). On Linux through Bun.file over the fd's
 * `/proc/self/fd/<n>` name, which opens the very file the range's fd holds open (renamed or
 * deleted meanwhile or not) and reads it from the range's position; elsewhere with pread on
 * the thread pool.
 */
async function readRanges(
  ranges: readonly FileRange[],
  sizeBytes: number,
  buffer: () => Uint8Array,
): Promise<Uint8Array | null> {
  const parts = await Promise.all(ranges.map(readRange));
  if (parts.some((part, i) => part.length !== ranges[i]!.sizeBytes)) return null;
  if (parts.length === 1) return parts[0]!;
  const out = buffer().subarray(0, sizeBytes);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

async function readRange(range: FileRange): Promise<Uint8Array> {
  const end = range.position + range.sizeBytes;
  if (PROC_FD_NAMES) {
    return await Bun.file(`/proc/self/fd/${range.fd}`).slice(range.position, end).bytes();
  }
  const bytes = new Uint8Array(range.sizeBytes);
  return await new Promise<Uint8Array>((resolve, reject) => {
    fs.read(range.fd, bytes, 0, range.sizeBytes, range.position, (error, bytesRead) => {
      if (error) reject(error);
      else resolve(bytes.subarray(0, bytesRead));
    });
  });
}

function readFully(range: FileRange, buffer: Uint8Array, offset: number): number {
  const bytesRead = fs.readSync(range.fd, buffer, offset, range.sizeBytes, range.position);
  if (bytesRead !== range.sizeBytes) throw shortRead(range, bytesRead);
  return bytesRead;
}

function shortRead(range: FileRange, bytesRead: number): Error {
  return new Error(`read ${bytesRead} of ${range.sizeBytes} bytes at ${range.position}`);
}
