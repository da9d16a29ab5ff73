/**
 * The log of one topic-partition: a directory `<topic>-<partition>/` of segments sorted by base
 * offset (binary-searched to find the segment of an offset; the paper's only index), of which
 * the last is the active one that appends go to.
 *
 * Offsets the log tracks, all exclusive upper bounds or first offsets:
 * - logStartOffset: the first offset a consumer may read; retention moves it forward, and reads
 *   below it fail with OFFSET_OUT_OF_RANGE.
 * - logEndOffset (LEO): the next offset to assign. It moves only after the bytes are written, so
 *   readers never see a partial batch.
 * - highWatermark: set by the replica manager (<= LEO); reads for consumers stop there, and
 *   retention never deletes a segment reaching above it, so the log start offset exposed to
 *   consumers cannot get ahead of the high watermark.
 * - flushedOffset (Kafka's recovery point): everything below it has been fdatasynced; after a
 *   crash only the segments from it onwards need to be validated.
 *
 * Idempotent producers: every batch carrying a producer id is checked against the partition's
 * ProducerStateManager before it is written (a retried batch is answered with its first offsets
 * and not written again), and the state is snapshotted at each roll and at close, then rebuilt
 * from the log after the newest snapshot on load (producer-state-manager.ts).
 *
 * Leader epochs: every batch carries the epoch of the leader that appended it; the first batch
 * of each new epoch is recorded in the log's LeaderEpochFileCache (`leader-epoch-checkpoint`),
 * which replication uses to find where a follower's log diverges, and truncateTo cuts the log
 * (and that cache, and the producer state) back to where it agrees with the leader.
 *
 * Not thread-safe: Quill runs it on one event loop. Only flushAsync and delete are asynchronous.
 */

import * as fs from "node:fs";
import * as path from "node:path";
import type { Offset } from "../common/branded.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import type { FileRange } from "../protocol/records.ts";
import { assert } from "../util/assert.ts";
import { refuseRecordsWithoutKey } from "./compacted-topic-validator.ts";
import { applyCompressionPolicy } from "./compression-policy.ts";
import { fsyncDirectory, fsyncDirectoryInBackground, storageError } from "./durable-file.ts";
import { LeaderEpochFileCache } from "./leader-epoch-file-cache.ts";
import type { LogConfig } from "./log-config.ts";
import { hasDeletePolicy, isCompacted, NEVER } from "./log-config.ts";
import type { LogEnvironment } from "./log-environment.ts";
import {
  installIndexLoader,
  loadSegments,
  recoveredFrom,
  type SegmentLoadParams,
} from "./log-loader.ts";
import type { SegmentSettings } from "./log-segment.ts";
import { LogSegment } from "./log-segment.ts";
import type { ValidatedAppend, ValidatedBatch } from "./log-validator.ts";
import { type TimestampBounds, validateAndAssignOffsets } from "./log-validator.ts";
import type { OpenFilePool } from "./open-file-pool.ts";
import type { BatchMetadata } from "./producer-state-entry.ts";
import { firstOffsetOf } from "./producer-state-entry.ts";
import { producerBatchAt, replayProducerState } from "./producer-state-loader.ts";
import type { AppendOrigin, CompletedTxnWithLso, ProducerBatch } from "./producer-state-manager.ts";
import {
  PRODUCER_ID_EXPIRATION_MS,
  PRODUCERS_PER_PARTITION_MAX,
  ProducerStateManager,
} from "./producer-state-manager.ts";
import type { AbortedTxn } from "./transaction-index.ts";

/** Options of a leader's append; a follower's append takes none. */
export interface LeaderAppendOptions {
  /** The broker's clock for LogAppendTime topics and for the result; defaults to Date.now(). */
  readonly logAppendTimeMs?: number;
  /** Per-batch limit; defaults to the log's max.message.bytes. */
  readonly maxMessageBytes?: number;
  /**
   * Who appends; defaults to "client". The transaction coordinator's markers are appended as
   * "coordinator" (control batches allowed).
   */
  readonly origin?: AppendOrigin;
}

export interface AppendResult {
  /** First offset of the append, -1 when `records` held no batch. */
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  /** The time stamped on the batches for LogAppendTime topics, else -1 (as Kafka reports). */
  readonly logAppendTimeMs: number;
  readonly logStartOffset: bigint;
  readonly recordCount: number;
}

export interface ReadOptions {
  /** Exclusive bound, e.g. the high watermark for consumers or the LEO for followers. */
  readonly maxOffset: Offset;
  /** Return the first batch even if it is larger than maxBytes (KIP-74), so fetches progress. */
  readonly minOneMessage: boolean;
  /**
   * Fill maxBytes even if that ends inside a batch (consumers' fetches, as Kafka; clients drop
   * the partial batch). Off by default: followers and the broker's own readers get whole
   * batches only.
   */
  readonly partialLastBatch?: boolean;
}

export interface ReadResult {
  readonly ranges: FileRange[];
  readonly sizeBytes: number;
}

export interface TimestampAndOffset {
  readonly timestamp: bigint;
  readonly offset: bigint;
}

/** ListOffsets' special timestamps (Kafka's ListOffsetsRequest constants). */
export const EARLIEST_TIMESTAMP = -2n;
export const LATEST_TIMESTAMP = -1n;
export const MAX_TIMESTAMP = -3n;

const EMPTY_READ: ReadResult = Object.freeze({ ranges: [], sizeBytes: 0 }) as ReadResult;

export interface LoadParams extends SegmentLoadParams {
  readonly topic: string;
  readonly partition: number;
  readonly config: LogConfig;
  /** producer.id.expiration.ms; defaults to Kafka's one day. */
  readonly producerIdExpirationMs?: number;
  /** Where the cleaner stopped last time (cleaner-offset-checkpoint); 0 when unknown. */
  readonly cleanerOffset?: bigint;
}

export class UnifiedLog {
  private configValue: LogConfig;
  private logStartOffsetValue: bigint;
  private highWatermarkValue: bigint;
  private recoveryPoint: bigint;
  private unflushedMessages = 0;
  /**
   * Directories holding entries made since the last flush (this log's directory and files,
   * the log dir's entry for a new log): the next flush syncs them before the recovery point
   * moves, as Kafka's LocalLog.flush does when a flush covers a new segment.
   */
  private readonly unsyncedDirs = new Set<string>();
  private lastFlushMs = Date.now();
  private closed = false;
  /** closeAsync has begun: the log takes no more appends. */
  private closing = false;
  /**
   * Bumped by every change of the segment list other than appends, rolls, retention and
   * cleaning (truncation, emptying, close, delete), so a cleaning started before it gives up.
   */
  private layoutEpochValue = 0;
  /**
   * The LogCleaner's position: everything below it has been cleaned (Kafka's checkpointed
   * "first dirty offset"). Kept here so truncation can lower it; the LogManager persists it.
   */
  cleanerOffset: bigint;
  /** The latest delete horizon the cleaner gave tombstones it kept; -1 when none. */
  latestDeleteHorizonMs = -1;
  dir: string;

  private constructor(
    readonly topic: string,
    readonly partition: number,
    dir: string,
    config: LogConfig,
    private readonly segments: LogSegment[],
    logStartOffset: bigint,
    private readonly env: LogEnvironment,
    private producerStateValue: ProducerStateManager,
    readonly leaderEpochCache: LeaderEpochFileCache,
    private readonly producerIdExpirationMs: number | undefined,
    cleanerOffset: bigint,
  ) {
    assert(segments.length > 0, `log ${dir} has no segment`);
    this.cleanerOffset = cleanerOffset;
    this.dir = dir;
    this.configValue = config;
    const logEndOffset = this.activeSegment.nextOffset;
    this.logStartOffsetValue = logStartOffset < logEndOffset ? logStartOffset : logEndOffset;
    this.highWatermarkValue = logEndOffset;
    this.recoveryPoint = logEndOffset;
    for (const segment of segments) this.installIndexLoader(segment);
  }

  private installIndexLoader(segment: LogSegment): void {
    installIndexLoader(segment, () => settingsOf(this.configValue), this.env.logger);
  }

  /** Opens (and after an unclean shutdown, recovers) the log in `params.dir`. */
  static load(params: LoadParams): UnifiedLog {
    // A listed directory exists (LogManager.openAsync found it in its log dir).
    const created =
      params.createdLogFd !== undefined ||
      (params.listing === undefined && fs.mkdirSync(params.dir, { recursive: true }) !== undefined);
    // A directory just made holds nothing: no files to list or read, only the first segment's.
    const leaderEpochCache = created
      ? LeaderEpochFileCache.empty(params.dir)
      : LeaderEpochFileCache.load(params.dir, params.env.logger, params.preread);
    const segments = loadSegments(
      { ...params, newDir: created },
      settingsOf(params.config),
      leaderEpochCache,
    );
    const first = segments[0].baseOffset;
    const logStartOffset = params.logStartOffset > first ? params.logStartOffset : first;
    const producerState = loadProducerState(params, segments, logStartOffset, created);
    // Recovery may have cut the log below epochs the checkpoint still names.
    leaderEpochCache.truncateFromEnd(segments[segments.length - 1].nextOffset);
    const log = new UnifiedLog(
      params.topic,
      params.partition,
      params.dir,
      params.config,
      segments,
      logStartOffset,
      params.env,
      producerState,
      leaderEpochCache,
      params.producerIdExpirationMs,
      params.cleanerOffset ?? 0n,
    );
    if (!params.cleanShutdown) {
      // Recovered segments are not synced yet (log-loader.ts, recoveredFrom).
      const from = recoveredFrom(segments, params.recoveryPoint);
      if (from < log.recoveryPoint) log.recoveryPoint = from;
      log.unsyncedDirs.add(params.dir);
    }
    // A new partition's directory (and its entry in the log dir) is synced by its first flush
    // with data, not here: a crash before that loses an empty log the broker creates again
    // from the topic's metadata at start, as Kafka's createLogDirectory does not sync either.
    if (created) log.unsyncedDirs.add(params.dir).add(path.dirname(params.dir));
    return log;
  }

  get name(): string {
    return `${this.topic}-${this.partition}`;
  }

  get config(): LogConfig {
    return this.configValue;
  }

  /** Idempotent producers' state; rebuilt (a new object) when the log is truncated. */
  get producerState(): ProducerStateManager {
    return this.producerStateValue;
  }

  /** Applies new topic-level settings; they take effect at the next append/roll/retention. */
  updateConfig(config: LogConfig): void {
    this.configValue = config;
  }

  get logStartOffset(): Offset {
    return this.logStartOffsetValue;
  }

  get logEndOffset(): Offset {
    return this.activeSegment.nextOffset;
  }

  get highWatermark(): Offset {
    return this.highWatermarkValue;
  }

  set highWatermark(offset: Offset) {
    // Set on every append: the messages (bigints to text) are built only when a check fails.
    if (offset > this.logEndOffset) {
      assert(false, `high watermark ${offset} above LEO ${this.logEndOffset}`);
    }
    if (offset < 0n) assert(false, `negative high watermark ${offset}`);
    this.highWatermarkValue = offset;
  }

  get flushedOffset(): Offset {
    return this.recoveryPoint;
  }

  get segmentCount(): number {
    return this.segments.length;
  }

  /** Total bytes of all segment files. */
  get sizeBytes(): number {
    let total = 0;
    for (const segment of this.segments) total += segment.sizeBytes;
    return total;
  }

  /** Base offsets of the segments, oldest first (for tests and tools). */
  segmentBaseOffsets(): bigint[] {
    return this.segments.map((s) => s.baseOffset);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** The fd pool, for the segments the cleaner writes beside this log's. */
  get filePool(): OpenFilePool {
    return this.env.pool;
  }

  /** One line in the storage log, prefixed with this log's name. */
  logLine(line: string): void {
    this.env.logger.info(`${this.name}: ${line}`);
  }

  /** See layoutEpochValue: the cleaner compares it before and after each step. */
  get layoutEpoch(): number {
    return this.layoutEpochValue;
  }

  /** Every segment but the active one, oldest first: what the cleaner may read and replace. */
  sealedSegments(): readonly LogSegment[] {
    return this.segments.slice(0, -1);
  }

  get activeSegmentBaseOffset(): bigint {
    return this.activeSegment.baseOffset;
  }

  /**
   * The cleaner's swap: `old` (consecutive sealed segments, still in the log) leave the segment
   * list and `replacement` (covering the same offsets) takes their place, at once, between two
   * requests. The files were already renamed by the caller (cleaner.ts, segment-swap.ts); old
   * segments' fds stay open until readers holding ranges over them release them.
   */
  replaceSegments(old: readonly LogSegment[], replacement: LogSegment): void {
    this.ensureOpen();
    const first = this.segments.indexOf(old[0]);
    assert(first >= 0, `segment ${old[0].baseOffset} is no longer in ${this.name}`);
    for (let i = 0; i < old.length; i++) {
      assert(this.segments[first + i] === old[i], `${this.name}: replaced segments not in order`);
    }
    assert(first + old.length < this.segments.length, "the active segment cannot be replaced");
    assert(replacement.baseOffset === old[0].baseOffset, "replacement must keep the base offset");
    this.installIndexLoader(replacement);
    this.segments.splice(first, old.length, replacement);
  }

  /** True when every one of `segments` is still part of this log, in that order. */
  holdsSegments(segments: readonly LogSegment[]): boolean {
    const first = this.segments.indexOf(segments[0]);
    if (first < 0 || first + segments.length >= this.segments.length) return false;
    return segments.every((s, i) => this.segments[first + i] === s);
  }

  private get activeSegment(): LogSegment {
    return this.segments[this.segments.length - 1];
  }

  /**
   * Appends a producer's (or the transaction coordinator's) batches as the partition leader:
   * offsets are assigned from the log end and every batch is stamped with `leaderEpoch`, both
   * patched in place during the validator's one pass over the batches (Kafka's appendAsLeader).
   */
  appendAsLeader(
    records: Uint8Array,
    leaderEpoch: number,
    opts: LeaderAppendOptions = {},
  ): AppendResult {
    return this.append(records, leaderEpoch, opts);
  }

  /** Appends batches copied from the leader, keeping their offsets and epochs. */
  appendAsFollower(records: Uint8Array): AppendResult {
    return this.append(records, null, {});
  }

  /**
   * Appends one or more whole batches. Every batch is checked (length, magic, CRC, size limit);
   * on the leader (`leaderEpoch` not null) offsets and the epoch are patched in place. The bytes
   * go to the active segment in one write; LEO moves only after it succeeded.
   */
  private append(
    sentRecords: Uint8Array,
    leaderEpoch: number | null,
    opts: LeaderAppendOptions,
  ): AppendResult {
    this.ensureOpen();
    const leader = leaderEpoch !== null;
    const nowMs = opts.logAppendTimeMs ?? Date.now();
    // Only the leader applies compression.type; a follower stores the leader's bytes.
    const records = leader
      ? applyCompressionPolicy(sentRecords, this.configValue.compressionType, this.configValue)
      : sentRecords;
    const validated = validateAndAssignOffsets(records, {
      leaderEpoch,
      nextOffset: this.logEndOffset,
      maxMessageBytes: opts.maxMessageBytes ?? this.configValue.maxMessageBytes,
      segmentBytes: this.configValue.segmentBytes,
      logAppendTimeMs: this.configValue.messageTimestampType === "LogAppendTime" ? nowMs : null,
      timestampBounds: leader ? timestampBounds(this.configValue, nowMs) : null,
    });
    if (validated.batches.length === 0) return this.emptyAppendResult();
    if (leader && isCompacted(this.configValue)) {
      refuseRecordsWithoutKey(records, validated.batches, this.name);
    }
    const prepared = this.producerState.prepareAppend(
      producerBatchesOf(records, validated.batches),
      opts.origin ?? (leader ? "client" : "replication"),
    );
    if (prepared.duplicate !== null) return this.duplicateAppendResult(prepared.duplicate);
    const segment = this.maybeRoll(records.length, validated, nowMs);
    segment.append(records, validated.batches, this.configValue.indexIntervalBytes);
    assert(this.logEndOffset === validated.lastOffset + 1n, "LEO must follow the last append");
    this.recordLeaderEpochs(validated.batches);
    this.indexAbortedTxns(this.producerState.commit(prepared, this.logEndOffset));
    this.unflushedMessages += validated.recordCount;
    this.maybeFlushAfterAppend();
    return {
      baseOffset: validated.baseOffset,
      lastOffset: validated.lastOffset,
      logAppendTimeMs: this.configValue.messageTimestampType === "LogAppendTime" ? nowMs : -1,
      logStartOffset: this.logStartOffsetValue,
      recordCount: validated.recordCount,
    };
  }

  /** ABORT markers just written go to the active segment's `.txnindex`. */
  private indexAbortedTxns(completed: readonly CompletedTxnWithLso[]): void {
    for (const txn of completed) {
      if (!txn.isAborted) continue;
      this.activeSegment.txnIndex.append(txn);
    }
  }

  /**
   * The last stable offset (KIP-98): below it every transaction is decided, so read_committed
   * consumers read up to it. The first offset of the oldest open transaction, capped at the
   * high watermark.
   */
  get lastStableOffset(): bigint {
    const firstUnstable = this.producerState.firstUnstableOffset();
    const hw = this.highWatermarkValue;
    return firstUnstable !== null && firstUnstable < hw ? firstUnstable : hw;
  }

  /**
   * The aborted transactions overlapping [fetchOffset, upperBoundOffset), from the `.txnindex`
   * of the segment holding fetchOffset and those after it, until one shows the LSO had passed
   * the bound (Kafka's UnifiedLog.collectAbortedTransactions). At most `limit` entries.
   */
  collectAbortedTransactions(
    fetchOffset: bigint,
    upperBoundOffset: bigint,
    limit: number,
  ): AbortedTxn[] {
    this.ensureOpen();
    const out: AbortedTxn[] = [];
    for (let i = this.segmentSlotFor(fetchOffset); i < this.segments.length; i++) {
      const found = this.segments[i].txnIndex.collect(fetchOffset, upperBoundOffset);
      for (const txn of found.aborted) if (out.length < limit) out.push(txn);
      if (found.complete || out.length >= limit) break;
    }
    return out;
  }

  /** The first batch of each epoch newer than the cache's latest starts that epoch. */
  private recordLeaderEpochs(batches: readonly ValidatedBatch[]): void {
    for (const b of batches) {
      if (b.leaderEpoch <= this.leaderEpochCache.latestEpoch) continue;
      this.leaderEpochCache.assign(b.leaderEpoch, b.baseOffset);
    }
  }

  /**
   * Follower truncation: removes every batch at or above `offset` (the whole batch holding it,
   * if it falls inside one) so fetching from the new LEO makes this log a copy of the leader's.
   * Later segments are deleted, the one holding `offset` is cut and re-indexed; the leader-epoch
   * cache, the producer state, the high watermark and the recovery point follow the new end.
   */
  truncateTo(offset: Offset): void {
    this.ensureOpen();
    if (offset >= this.logEndOffset) return;
    const target = offset > this.logStartOffsetValue ? offset : this.logStartOffsetValue;
    while (this.segments.length > 1 && this.activeSegment.baseOffset >= target) {
      const gone = this.segments.pop()!;
      void gone.delete().catch((e: unknown) => this.env.logger.warn(`${String(e)}`));
    }
    const last = this.activeSegment;
    const droppedBytes = last.truncateTo(target, settingsOf(this.configValue));
    this.env.logger.info(
      `${this.name}: truncated to offset ${this.logEndOffset} ` +
        `(asked ${offset}; ${droppedBytes} bytes cut from segment ${last.baseOffset})`,
    );
    const end = this.logEndOffset;
    this.layoutEpochValue++;
    if (this.highWatermarkValue > end) this.highWatermarkValue = end;
    if (this.recoveryPoint > end) this.recoveryPoint = end;
    if (this.cleanerOffset > end) this.cleanerOffset = end;
    this.leaderEpochCache.truncateFromEnd(end);
    this.reloadProducerState();
    // A sealed segment cut back is not writable: appends continue in a new active segment.
    if (!last.file.isPinned) this.roll(end);
  }

  /**
   * A follower too far behind (its leader no longer has the offsets it lacks): everything is
   * deleted and the log starts over, empty, at `offset`, the leader's log start offset.
   */
  truncateFullyAndStartAt(offset: Offset): void {
    this.ensureOpen();
    assert(offset >= 0n, `log start ${offset} must not be negative`);
    const old = this.segments.splice(0, this.segments.length);
    let fresh: LogSegment;
    try {
      fresh = LogSegment.create(this.dir, offset, settingsOf(this.configValue), this.env.pool);
    } catch (error) {
      this.segments.push(...old);
      throw storageError("truncation of", this.dir, error);
    }
    for (const segment of old) {
      // The new segment may reuse the name of one that started at `offset`; its files are new.
      if (segment.baseOffset === offset) segment.close();
      else void segment.delete().catch((e: unknown) => this.env.logger.warn(`${String(e)}`));
    }
    this.installIndexLoader(fresh);
    this.segments.push(fresh);
    this.unsyncedDirs.add(this.dir);
    this.logStartOffsetValue = offset;
    this.highWatermarkValue = offset;
    this.recoveryPoint = offset;
    this.cleanerOffset = offset;
    this.layoutEpochValue++;
    this.leaderEpochCache.truncateFromEnd(0n);
    this.producerState.deleteSnapshotsBelow(offset + 1n);
    this.reloadProducerState();
    this.env.logger.info(`${this.name}: emptied, now starting at offset ${offset}`);
  }

  private reloadProducerState(): void {
    this.producerStateValue = loadProducerState(
      {
        dir: this.dir,
        topic: this.topic,
        partition: this.partition,
        env: this.env,
        producerIdExpirationMs: this.producerIdExpirationMs,
      },
      this.segments,
      this.logStartOffsetValue,
      false,
    );
  }

  /** A retried batch already in the log: its first append's offsets, nothing written (KIP-98). */
  private duplicateAppendResult(duplicate: BatchMetadata): AppendResult {
    return {
      baseOffset: firstOffsetOf(duplicate),
      lastOffset: duplicate.lastOffset,
      logAppendTimeMs: -1,
      logStartOffset: this.logStartOffsetValue,
      recordCount: 0,
    };
  }

  private emptyAppendResult(): AppendResult {
    return {
      baseOffset: -1n,
      lastOffset: -1n,
      logAppendTimeMs: -1,
      logStartOffset: this.logStartOffsetValue,
      recordCount: 0,
    };
  }

  private maybeRoll(appendBytes: number, append: ValidatedAppend, nowMs: number): LogSegment {
    const active = this.activeSegment;
    const { maxTimestamp, lastOffset } = append;
    const config = this.configValue;
    // A compacted log rolls by max.compaction.lag.ms too, so the active segment, which is never
    // cleaned, cannot hold dirty records past that lag (Kafka's maxSegmentMs).
    const segmentMs = isCompacted(config)
      ? Math.min(config.segmentMs, config.maxCompactionLagMs)
      : config.segmentMs;
    const rollConfig = {
      segmentBytes: config.segmentBytes,
      segmentMs,
      segmentJitterMs: config.segmentJitterMs,
    };
    if (!active.shouldRoll(appendBytes, maxTimestamp, lastOffset, rollConfig, nowMs)) {
      return active;
    }
    return this.roll(append.baseOffset);
  }

  /**
   * Seals the active segment and starts a new one at `baseOffset` (the LEO, or a follower's
   * next batch when the leader's offsets jump); the sealed one is flushed in the background.
   * An empty active segment is replaced rather than sealed.
   */
  roll(baseOffset = this.logEndOffset): LogSegment {
    this.ensureOpen();
    assert(baseOffset >= this.logEndOffset, `roll to ${baseOffset} below LEO ${this.logEndOffset}`);
    if (this.segments.length >= this.env.maxSegmentsPerLog) {
      throw new KafkaError(
        ErrorCode.KAFKA_STORAGE_ERROR,
        `${this.name} has ${this.segments.length} segments, the limit; check retention settings`,
      );
    }
    const old = this.activeSegment;
    if (old.sizeBytes === 0 && old.baseOffset === baseOffset) return old;
    // Create the new files first: if that fails (full disk), the old segment stays active.
    let segment: LogSegment;
    try {
      const settings = settingsOf(this.configValue);
      segment = LogSegment.create(this.dir, baseOffset, settings, this.env.pool);
    } catch (error) {
      throw storageError("roll of", this.dir, error);
    }
    if (old.sizeBytes === 0) {
      this.segments.pop();
      void old.delete().catch((e: unknown) => this.env.logger.warn(`${String(e)}`));
    } else {
      old.onBecomeInactive();
    }
    this.installIndexLoader(segment);
    this.segments.push(segment);
    this.unsyncedDirs.add(this.dir);
    this.snapshotProducerState("roll");
    void this.flushAsync().catch((error: unknown) =>
      this.env.logger.warn(`${this.name}: flush after roll failed: ${String(error)}`),
    );
    return segment;
  }

  /** Producer state at the LEO, so a restart replays only what follows (Kafka does the same). */
  private snapshotProducerState(reason: string): void {
    this.producerState.advanceMapEndOffset(this.logEndOffset);
    try {
      this.producerState.takeSnapshot();
    } catch (error) {
      // A missing snapshot only lengthens the replay at the next start.
      this.env.logger.warn(`${this.name}: producer snapshot at ${reason} failed: ${error}`);
    }
  }

  private maybeFlushAfterAppend(): void {
    const config = this.configValue;
    if (this.unflushedMessages < config.flushMessages) return;
    this.unflushedMessages = 0;
    void this.flushAsync().catch((error: unknown) =>
      this.env.logger.warn(`${this.name}: flush.messages flush failed: ${String(error)}`),
    );
  }

  /** Called by the LogManager's scheduler: flushes when flush.ms has passed since the last. */
  flushIfDue(nowMs: number): Promise<void> | null {
    if (this.recoveryPoint >= this.logEndOffset) return null;
    if (nowMs - this.lastFlushMs < this.configValue.flushMs) return null;
    return this.flushAsync();
  }

  /**
   * Reads whole batches from `fetchOffset`: ranges over one segment, at most maxBytes unless
   * the first batch alone is bigger and minOneMessage is set, never a batch at or above
   * maxOffset. A fetch offset inside a batch starts at that batch (clients skip the records
   * below their offset). Throws OFFSET_OUT_OF_RANGE below the log start or above the LEO.
   */
  read(fetchOffset: Offset, maxBytes: number, opts: ReadOptions): ReadResult {
    this.ensureOpen();
    const logEndOffset = this.logEndOffset;
    if (fetchOffset < this.logStartOffsetValue || fetchOffset > logEndOffset) {
      throw new KafkaError(
        ErrorCode.OFFSET_OUT_OF_RANGE,
        `offset ${fetchOffset} outside ${this.name} [${this.logStartOffsetValue}, ${logEndOffset}]`,
      );
    }
    assert(maxBytes >= 0, `negative maxBytes ${maxBytes}`);
    const maxOffset = opts.maxOffset < logEndOffset ? opts.maxOffset : logEndOffset;
    if (fetchOffset >= maxOffset) return EMPTY_READ;
    // Offsets can have gaps between segments, so a segment may hold nothing at or after
    // fetchOffset; then the next one is tried. Bounded by the segment count.
    for (let i = this.segmentSlotFor(fetchOffset); i < this.segments.length; i++) {
      const range = this.segments[i].read(
        fetchOffset,
        maxBytes,
        maxOffset,
        opts.minOneMessage,
        opts.partialLastBatch === true,
      );
      if (range === null) continue;
      if (range === "empty") return EMPTY_READ;
      return { ranges: [range], sizeBytes: range.sizeBytes };
    }
    return EMPTY_READ;
  }

  /** Slot of the segment whose base offset is the largest <= offset (0 if below all). */
  private segmentSlotFor(offset: bigint): number {
    let low = 0;
    let high = this.segments.length - 1;
    let found = 0;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      if (this.segments[mid].baseOffset <= offset) {
        found = mid;
        low = mid + 1;
      } else {
        high = mid - 1;
      }
    }
    return found;
  }

  /**
   * ListOffsets: EARLIEST_TIMESTAMP (-2) gives the log start offset, LATEST_TIMESTAMP (-1) the
   * LEO (the caller caps it at the high watermark for consumers), MAX_TIMESTAMP (-3) the record
   * with the largest timestamp, and a timestamp >= 0 the first record at or after it. Null when
   * no record qualifies (Kafka then answers offset -1).
   */
  offsetForTimestamp(timestamp: bigint): TimestampAndOffset | null {
    this.ensureOpen();
    if (timestamp === EARLIEST_TIMESTAMP) return { timestamp: -1n, offset: this.logStartOffset };
    if (timestamp === LATEST_TIMESTAMP) return { timestamp: -1n, offset: this.logEndOffset };
    if (timestamp === MAX_TIMESTAMP) return this.maxTimestampRecord();
    if (timestamp < 0n) return null;
    for (const segment of this.segments) {
      const max = segment.maxTimestampAndOffset();
      if (max === null || max.timestamp < timestamp) continue;
      const found = segment.findOffsetByTimestamp(timestamp, this.logStartOffsetValue);
      if (found !== null) return found;
    }
    return null;
  }

  private maxTimestampRecord(): TimestampAndOffset | null {
    let best: LogSegment | null = null;
    let bestTimestamp = -1n;
    for (const segment of this.segments) {
      const max = segment.maxTimestampAndOffset();
      if (max !== null && max.timestamp > bestTimestamp) {
        best = segment;
        bestTimestamp = max.timestamp;
      }
    }
    if (best === null) return null;
    return best.findOffsetByTimestamp(bestTimestamp, this.logStartOffsetValue);
  }

  /**
   * fdatasync of everything appended so far, the leader epochs and the new directory entries;
   * the recovery point moves to the LEO.
   */
  flush(): void {
    this.ensureOpen();
    const target = this.logEndOffset;
    for (let i = this.segmentSlotFor(this.recoveryPoint); i < this.segments.length; i++) {
      this.segments[i].flush();
    }
    if (target > 0n) {
      this.leaderEpochCache.writeIfDirty();
      for (const dir of this.unsyncedDirs) fsyncDirectory(dir);
      this.unsyncedDirs.clear();
    }
    this.flushed(target);
  }

  /** Like flush, with the fdatasyncs on the thread pool so the event loop keeps serving. */
  async flushAsync(): Promise<void> {
    const target = this.logEndOffset;
    const pending: Promise<void>[] = [];
    for (let i = this.segmentSlotFor(this.recoveryPoint); i < this.segments.length; i++) {
      pending.push(this.segments[i].flushAsync());
    }
    // Nothing written yet: a crash loses only an empty log (see load), so nothing to sync.
    const dirs = target > 0n ? [...this.unsyncedDirs] : [];
    for (const dir of dirs) this.unsyncedDirs.delete(dir);
    try {
      if (target > 0n) pending.push(this.leaderEpochCache.writeIfDirtyInBackground());
      await Promise.all(pending);
      await Promise.all(dirs.map(fsyncDirectoryInBackground));
    } catch (error) {
      for (const dir of dirs) this.unsyncedDirs.add(dir);
      throw error;
    }
    this.flushed(target);
  }

  private flushed(target: bigint): void {
    if (target > this.recoveryPoint) this.recoveryPoint = target;
    this.lastFlushMs = Date.now();
    this.unflushedMessages = 0;
  }

  /**
   * Moves the log start offset forward to `offset` (DeleteRecords on the leader, the leader's
   * start learnt by a follower) and deletes the segments wholly below it at once. Never moves
   * it back, nor past the high watermark: nothing a consumer has not been allowed to read may
   * disappear. True when it moved.
   */
  maybeIncrementLogStartOffset(offset: Offset, reason: string): boolean {
    this.ensureOpen();
    if (offset > this.highWatermarkValue) {
      throw new KafkaError(
        ErrorCode.OFFSET_OUT_OF_RANGE,
        `${this.name}: log start offset ` +
          `${offset} above the high watermark ${this.highWatermarkValue}`,
      );
    }
    if (offset <= this.logStartOffsetValue) return false;
    this.logStartOffsetValue = offset;
    this.deleteSegmentsWhile(
      (_s, next) => next.baseOffset <= this.logStartOffsetValue,
      `below the log start offset (${reason})`,
    );
    this.producerState.deleteSnapshotsBelow(this.logStartOffsetValue);
    return true;
  }

  /**
   * Retention: deletes the oldest sealed segments that are past retention.ms, that make the log
   * larger than retention.bytes, or that lie wholly below the log start offset. The active
   * segment and segments reaching above the high watermark are kept. Returns how many went.
   */
  deleteOldSegments(nowMs: number): number {
    this.ensureOpen();
    const config = this.configValue;
    // Segments below the log start offset go whatever the policy, as in Kafka.
    let deleted = this.deleteSegmentsWhile(
      (_s, next) => next.baseOffset <= this.logStartOffsetValue,
      "below the log start offset",
    );
    if (!hasDeletePolicy(config)) return deleted;
    if (config.retentionMs >= 0) {
      deleted += this.deleteSegmentsWhile(
        (s) => nowMs - s.largestTimestampMs() > config.retentionMs,
        `retention.ms ${config.retentionMs} breached`,
      );
    }
    if (config.retentionBytes >= 0) {
      let excessBytes = this.sizeBytes - config.retentionBytes;
      deleted += this.deleteSegmentsWhile((s) => {
        if (excessBytes - s.sizeBytes < 0) return false;
        excessBytes -= s.sizeBytes;
        return true;
      }, `retention.bytes ${config.retentionBytes} breached`);
    }
    this.producerState.deleteSnapshotsBelow(this.logStartOffsetValue);
    this.producerState.removeExpiredProducers(nowMs);
    return deleted;
  }

  private deleteSegmentsWhile(
    predicate: (segment: LogSegment, next: LogSegment) => boolean,
    reason: string,
  ): number {
    let deleted = 0;
    // Bounded by the segment count; the active (last) segment is never deleted.
    while (this.segments.length > 1) {
      const [segment, next] = [this.segments[0], this.segments[1]];
      if (next.baseOffset > this.highWatermarkValue) break;
      if (!predicate(segment, next)) break;
      this.segments.shift();
      if (next.baseOffset > this.logStartOffsetValue) this.logStartOffsetValue = next.baseOffset;
      this.env.logger.info(
        `${this.name}: deleting segment ${segment.baseOffset} ` +
          `(${segment.sizeBytes} bytes): ${reason}; log start offset ${this.logStartOffsetValue}`,
      );
      void segment
        .delete(this.configValue.fileDeleteDelayMs)
        .catch((error: unknown) =>
          this.env.logger.info(`${this.name}: deleting segment failed: ${String(error)}`),
        );
      deleted++;
    }
    return deleted;
  }

  /** Flushes and closes the files; ranges still held keep their fds until released. */
  close(): void {
    if (this.closed || this.closing) return;
    this.flush();
    this.snapshotProducerState("close");
    this.activeSegment.onBecomeInactive();
    this.activeSegment.flush();
    this.closeSegments();
  }

  /**
   * close with the syncs on the thread pool, so a broker stopping with thousands of logs can
   * flush many at once (LogManager.closeAsync). Appends are refused from the first await on.
   */
  async closeAsync(): Promise<void> {
    if (this.closed || this.closing) return;
    this.closing = true;
    // Flushed below with the log and the other index, all on the thread pool at once.
    this.activeSegment.sealTimeIndex();
    await this.flushAsync();
    this.producerState.advanceMapEndOffset(this.logEndOffset);
    try {
      await this.producerState.takeSnapshotInBackground();
    } catch (error) {
      this.env.logger.warn(`${this.name}: producer snapshot at close failed: ${error}`);
    }
    this.closeSegments();
  }

  /**
   * The first half of a clean stop that syncs whole file systems (LogManager.closeAsync): writes
   * what closeAsync would (index tails, leader epochs, the producer snapshot) on the thread pool
   * without syncing any of it. Appends are refused from here on; finishStop ends the close.
   */
  async writeForStop(): Promise<void> {
    if (this.closed || this.closing) return;
    this.closing = true;
    this.activeSegment.sealTimeIndex();
    const writes: Promise<void>[] = [];
    for (let i = this.segmentSlotFor(this.recoveryPoint); i < this.segments.length; i++) {
      writes.push(this.segments[i].writeIndexesUnsynced());
    }
    // Nothing written yet: a crash loses only an empty log (see load), so no epochs to keep.
    if (this.logEndOffset > 0n) writes.push(this.leaderEpochCache.writeIfDirtyInBackground(false));
    await Promise.all(writes);
    this.producerState.advanceMapEndOffset(this.logEndOffset);
    try {
      await this.producerState.takeSnapshotInBackground();
    } catch (error) {
      this.env.logger.warn(`${this.name}: producer snapshot at close failed: ${error}`);
    }
  }

  /**
   * Closes a log after writeForStop. `synced`: the file system holding it was synced since, so
   * everything written is durable and the recovery point moves to the log end; otherwise it
   * stays, and the next start recovers what lies above it.
   */
  finishStop(synced: boolean): void {
    if (this.closed) return;
    if (synced) {
      this.unsyncedDirs.clear();
      this.flushed(this.logEndOffset);
    }
    this.closeSegments();
  }

  /**
   * Closes the files without flushing anything (Kafka's closeHandlers): the log's dir failed,
   * so nothing more may be written there; ranges still held keep their fds until released.
   */
  closeHandlers(): void {
    if (this.closed) return;
    this.closeSegments();
  }

  private closeSegments(): void {
    for (const segment of this.segments) segment.close();
    this.closed = true;
    this.layoutEpochValue++;
  }

  /**
   * Deletes the whole partition without blocking for long: the files are closed (or retired
   * until their ranges are released), the directory is renamed to `<dir>.<uuid>-delete` at once
   * so a restart will not load it, and removed in the background.
   */
  async delete(): Promise<void> {
    if (!this.closed) {
      for (const segment of this.segments) segment.close();
      this.closed = true;
      this.layoutEpochValue++;
    }
    const deletedDir = `${this.dir}.${crypto.randomUUID().replaceAll("-", "")}-delete`;
    fs.renameSync(this.dir, deletedDir);
    this.dir = deletedDir;
    await fs.promises.rm(deletedDir, { recursive: true, force: true });
  }

  private ensureOpen(): void {
    if (this.closed || this.closing) {
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `log ${this.name} is closed`);
    }
  }
}

/** The producer state of a log being loaded: newest snapshot, then the batches after it. */
function loadProducerState(
  params: Pick<
    LoadParams,
    "dir" | "topic" | "partition" | "env" | "producerIdExpirationMs" | "listing" | "preread"
  >,
  segments: readonly LogSegment[],
  logStartOffset: bigint,
  newDir: boolean,
): ProducerStateManager {
  const state = new ProducerStateManager({
    dir: params.dir,
    name: partitionDirName(params.topic, params.partition),
    expirationMs: params.producerIdExpirationMs ?? PRODUCER_ID_EXPIRATION_MS,
    maxProducers: PRODUCERS_PER_PARTITION_MAX,
    logger: params.env.logger,
  });
  const logEndOffset = segments[segments.length - 1].nextOffset;
  if (newDir) {
    state.advanceMapEndOffset(logEndOffset);
    return state;
  }
  const nowMs = Date.now();
  const from = state.loadSnapshot(
    logStartOffset,
    logEndOffset,
    nowMs,
    params.listing,
    params.preread,
  );
  let replayed = 0;
  try {
    replayed = replayProducerState(state, segments, from);
  } catch (error) {
    // Bytes that changed on disk after recovery fail their reads too; the partition stays
    // usable, with the producers seen so far (others count as new, as after expiry).
    if (!(error instanceof KafkaError)) throw error;
    params.env.logger.warn(`${state.name}: producer state rebuild stopped: ${error.message}`);
  }
  state.advanceMapEndOffset(logEndOffset);
  state.removeExpiredProducers(nowMs);
  if (replayed > 0) {
    params.env.logger.info(
      `${state.name}: producer state rebuilt from ${replayed} ` +
        `batches after offset ${from} (${state.producerCount} producers)`,
    );
  }
  return state;
}

/** The producer fields of each validated batch of `records` (only idempotent ones matter). */
function producerBatchesOf(
  records: Uint8Array,
  batches: readonly { readonly relativePosition: number; readonly sizeBytes: number }[],
): ProducerBatch[] {
  const view = new DataView(records.buffer, records.byteOffset, records.byteLength);
  const out: ProducerBatch[] = [];
  for (const b of batches) {
    // Plain batches (producer id -1) are skipped without building anything.
    if (view.getBigInt64(b.relativePosition + 43) === -1n) continue;
    out.push(producerBatchAt(view, b.relativePosition, b.relativePosition + b.sizeBytes));
  }
  return out;
}

export function settingsOf(config: LogConfig): SegmentSettings {
  return {
    indexIntervalBytes: config.indexIntervalBytes,
    segmentIndexBytes: config.segmentIndexBytes,
  };
}

/** `<topic>-<partition>`, Kafka's partition directory name. */
export function partitionDirName(topic: string, partition: number): string {
  return `${topic}-${partition}`;
}

/** The CreateTime bounds a leader checks, or null when the topic sets none. */
function timestampBounds(config: LogConfig, nowMs: number): TimestampBounds | null {
  const { messageTimestampBeforeMaxMs: beforeMaxMs, messageTimestampAfterMaxMs: afterMaxMs } =
    config;
  if (config.messageTimestampType !== "CreateTime") return null;
  if (beforeMaxMs >= NEVER && afterMaxMs >= NEVER) return null;
  return { nowMs, beforeMaxMs, afterMaxMs };
}
