/**
 * The idempotent producers of one partition (Kafka's ProducerStateManager, KIP-98/KIP-360): for
 * each producer id its epoch and last five batches. The leader checks every batch carrying a
 * producer id against it before the batch is written:
 *
 * - the exact sequence range of a retained batch under the same epoch is a duplicate: nothing
 *   is written and the client gets the original offsets;
 * - an epoch below the producer's is INVALID_PRODUCER_EPOCH (since Kafka 2.7 the produce path
 *   answers this rather than PRODUCER_FENCED, which stays the coordinator's answer);
 * - a sequence that does not follow the last one is OUT_OF_ORDER_SEQUENCE_NUMBER, except for a
 *   producer this partition does not know (new, or expired): any sequence is accepted then, as
 *   Kafka 3.9's ProducerAppendInfo.checkSequence does, so the broker never answers
 *   UNKNOWN_PRODUCER_ID on produce;
 * - a new epoch must start at sequence 0.
 *
 * Transactions (KIP-98): a transactional batch opens a transaction for its producer (its first
 * offset is remembered until a marker ends it), a non-transactional batch of a producer with an
 * open transaction is INVALID_TXN_STATE, and an end-transaction marker (origin "coordinator")
 * from an older epoch is INVALID_PRODUCER_EPOCH, from an older coordinator epoch
 * TRANSACTION_COORDINATOR_FENCED. The smallest first offset of the open transactions is the
 * partition's first unstable offset, which bounds the last stable offset (LSO); every marker
 * yields a CompletedTxn so the log can index the aborted ones.
 *
 * Replicated batches (a follower) only update the state. State is kept in snapshot files
 * (producer-state-snapshot.ts) and rebuilt from the log after them on load. Producers expire
 * producer.id.expiration.ms after their last batch's timestamp (Kafka's default, one day);
 * retention moving the log start does not remove them, as in Kafka 3.9.
 *
 * Not thread-safe: used by one UnifiedLog on the event loop.
 */
import * as fs from "node:fs";
import { ControlRecordType } from "../protocol/control-record.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { assert } from "../util/assert.ts";
import type { Logger } from "../util/logger.ts";
import type { PrereadFiles } from "./preread-files.ts";
import {
  type BatchMetadata,
  incrementSequence,
  NO_PRODUCER_EPOCH,
  NO_PRODUCER_ID,
  ProducerStateEntry,
} from "./producer-state-entry.ts";
import {
  CorruptSnapshotError,
  decodeSnapshot,
  encodeSnapshot,
  listSnapshotOffsets,
  snapshotPath,
  writeSnapshotFile,
  writeSnapshotFileInBackground,
} from "./producer-state-snapshot.ts";

/** Kafka's producer.id.expiration.ms default: one day. */
export const PRODUCER_ID_EXPIRATION_MS = 24 * 60 * 60 * 1000;
/**
 * Producers remembered per partition. Kafka has no such cap; Quill needs one so that clients
 * creating producers in a loop cannot grow a partition's memory without bound. Past it the
 * producer with the oldest last batch is forgotten (its next batch is accepted as a new one).
 */
export const PRODUCERS_PER_PARTITION_MAX = 10_000;

/** Who appends: a producer, a follower copying the leader, or the transaction coordinator. */
export type AppendOrigin = "client" | "replication" | "coordinator";

/** The producer fields of one batch header and the offsets the batch got. */
export interface ProducerBatch {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
  /** lastOffset - firstOffset, the header's lastOffsetDelta. */
  readonly offsetDelta: number;
  readonly maxTimestampMs: bigint;
  readonly isTransactional: boolean;
  /** The control record type of a control batch (control-record.ts), null for data. */
  readonly controlType: number | null;
  /** An end-transaction marker's coordinator epoch, else -1. */
  readonly coordinatorEpoch: number;
}

/** A transaction a marker ended in this partition (Kafka's CompletedTxn). */
export interface CompletedTxn {
  readonly producerId: bigint;
  readonly firstOffset: bigint;
  /** The marker's offset. */
  readonly lastOffset: bigint;
  readonly isAborted: boolean;
}

/** A completed transaction with the LSO right after its marker (for the `.txnindex`). */
export interface CompletedTxnWithLso extends CompletedTxn {
  readonly lastStableOffset: bigint;
}

interface StagedProducer {
  readonly producerId: bigint;
  readonly known: boolean;
  epoch: number;
  lastSeq: number;
  txnFirstOffset: bigint;
  coordinatorEpoch: number;
  lastTimestampMs: bigint;
  readonly batches: BatchMetadata[];
  readonly completed: CompletedTxn[];
}

/** The outcome of checking an append: a duplicate to answer with, or updates to commit. */
export interface PreparedAppend {
  readonly duplicate: BatchMetadata | null;
  readonly staged: readonly StagedProducer[];
}

const NOTHING_STAGED: PreparedAppend = Object.freeze({ duplicate: null, staged: [] });

export interface ProducerStateOptions {
  readonly dir: string;
  readonly name: string;
  readonly expirationMs: number;
  readonly maxProducers: number;
  readonly logger: Logger;
}

export class ProducerStateManager {
  private readonly producers = new Map<bigint, ProducerStateEntry>();
  /** Producers with an open transaction here, and its first offset (a subset of producers). */
  private readonly ongoing = new Map<bigint, bigint>();
  /** The state reflects every batch below this offset. */
  private mapEndOffsetValue = 0n;
  private snapshotOffsets: bigint[] = [];

  constructor(private readonly options: ProducerStateOptions) {
    assert(options.maxProducers > 0, `maxProducers ${options.maxProducers}`);
    assert(options.expirationMs > 0, `expirationMs ${options.expirationMs}`);
  }

  get name(): string {
    return this.options.name;
  }

  get mapEndOffset(): bigint {
    return this.mapEndOffsetValue;
  }

  get producerCount(): number {
    return this.producers.size;
  }

  /** The entry of a producer, for DescribeProducers and tests. */
  entry(producerId: bigint): ProducerStateEntry | undefined {
    return this.producers.get(producerId);
  }

  activeProducers(): IterableIterator<ProducerStateEntry> {
    return this.producers.values();
  }

  /**
   * Checks the batches of one append in order (each against the state the earlier ones leave).
   * Returns the duplicate if the client resent a retained batch; throws KafkaError otherwise.
   */
  prepareAppend(batches: readonly ProducerBatch[], origin: AppendOrigin): PreparedAppend {
    // An append holds one batch (produce) or a few (replication), from few producers, so a
    // linear search of a small array beats a map on this per-batch path.
    let staged: StagedProducer[] | null = null;
    for (const batch of batches) {
      if (batch.producerId === NO_PRODUCER_ID) continue;
      const current = this.producers.get(batch.producerId);
      const offsetDelta = batch.offsetDelta;
      const lastSeq = incrementSequence(batch.baseSequence, offsetDelta);
      if (origin === "client" && batch.controlType === null) {
        checkSequencePresent(batch);
        const duplicate = current?.findDuplicate(batch.producerEpoch, batch.baseSequence, lastSeq);
        if (duplicate !== undefined && duplicate !== null) return { duplicate, staged: [] };
      }
      staged ??= [];
      let s = staged.find((candidate) => candidate.producerId === batch.producerId);
      if (s === undefined) {
        s = stagedFrom(batch.producerId, current);
        staged.push(s);
      }
      if (batch.maxTimestampMs > s.lastTimestampMs) s.lastTimestampMs = batch.maxTimestampMs;
      if (batch.controlType !== null) {
        this.stageMarker(s, batch, origin);
        continue;
      }
      if (origin === "client") this.checkBatch(s, batch);
      if (batch.isTransactional) {
        if (s.txnFirstOffset < 0n) s.txnFirstOffset = batch.firstOffset;
      } else if (origin === "client" && s.txnFirstOffset >= 0n) {
        throw new KafkaError(
          ErrorCode.INVALID_TXN_STATE,
          `Expected transactional write from producer ${batch.producerId} at offset ` +
            `${batch.firstOffset} in partition ${this.options.name}`,
        );
      }
      s.epoch = batch.producerEpoch;
      s.lastSeq = lastSeq;
      s.batches.push({
        lastSeq,
        lastOffset: batch.lastOffset,
        offsetDelta,
        timestampMs: batch.maxTimestampMs,
      });
    }
    return staged === null ? NOTHING_STAGED : { duplicate: null, staged };
  }

  /** An end-transaction marker: checks its epochs and ends the producer's transaction. */
  private stageMarker(s: StagedProducer, batch: ProducerBatch, origin: AppendOrigin): void {
    if (origin === "client") {
      throw new KafkaError(
        ErrorCode.INVALID_RECORD,
        "Clients are not allowed to write control " +
          `records (producer ${batch.producerId}, partition ${this.options.name})`,
      );
    }
    if (origin === "coordinator") {
      if (batch.producerEpoch < s.epoch) {
        throw new KafkaError(
          ErrorCode.INVALID_PRODUCER_EPOCH,
          `Epoch of producer ${batch.producerId} in marker is ${batch.producerEpoch}, which is ` +
            `smaller than the last seen epoch ${s.epoch} in ${this.options.name}`,
        );
      }
      if (batch.coordinatorEpoch < s.coordinatorEpoch) {
        throw new KafkaError(
          ErrorCode.TRANSACTION_COORDINATOR_FENCED,
          `Invalid coordinator epoch for producer ${batch.producerId}: ${batch.coordinatorEpoch}` +
            ` (marker) vs ${s.coordinatorEpoch} (current) in ${this.options.name}`,
        );
      }
    }
    if (batch.producerEpoch !== s.epoch) s.batches.length = 0;
    s.epoch = batch.producerEpoch;
    if (
      batch.controlType !== ControlRecordType.ABORT &&
      batch.controlType !== ControlRecordType.COMMIT
    )
      return;
    s.coordinatorEpoch = batch.coordinatorEpoch;
    s.completed.push({
      producerId: batch.producerId,
      firstOffset: s.txnFirstOffset >= 0n ? s.txnFirstOffset : batch.firstOffset,
      lastOffset: batch.firstOffset,
      isAborted: batch.controlType === ControlRecordType.ABORT,
    });
    s.txnFirstOffset = -1n;
  }

  private checkBatch(s: StagedProducer, batch: ProducerBatch): void {
    const where =
      `producer ${batch.producerId} at offset ${batch.firstOffset} in ` + this.options.name;
    if (batch.producerEpoch < s.epoch) {
      throw new KafkaError(
        ErrorCode.INVALID_PRODUCER_EPOCH,
        `Epoch of ${where} is ${batch.producerEpoch}, which is smaller than the last seen ` +
          `epoch ${s.epoch}`,
      );
    }
    if (batch.producerEpoch !== s.epoch) {
      if (batch.baseSequence !== 0 && s.epoch !== NO_PRODUCER_EPOCH) {
        throw new KafkaError(
          ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
          `Invalid sequence number for new epoch of ${where}: ${batch.producerEpoch} (request ` +
            `epoch), ${batch.baseSequence} (seq. number), ${s.epoch} (current producer epoch)`,
        );
      }
      return;
    }
    // A producer this partition has no state for may start anywhere (KIP-360).
    if (!s.known && s.batches.length === 0) return;
    if (!inSequence(s.lastSeq, batch.baseSequence)) {
      throw new KafkaError(
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        `Out of order sequence number for ${where}: ${batch.baseSequence} (incoming seq. ` +
          `number), ${s.lastSeq} (current end sequence number)`,
      );
    }
  }

  /**
   * Applies a prepared append once its bytes are in the log; `endOffset` is the new LEO.
   * Returns the transactions its markers ended, each with the LSO right after it.
   */
  commit(prepared: PreparedAppend, endOffset: bigint): CompletedTxnWithLso[] {
    assert(prepared.duplicate === null, "a duplicate append must not be committed");
    if (endOffset < this.mapEndOffsetValue) {
      assert(
        false,
        `producer state end ${endOffset} below ${this.mapEndOffsetValue} in ${this.options.name}`,
      );
    }
    let anyCompleted = false;
    for (const s of prepared.staged) {
      let entry = this.producers.get(s.producerId);
      if (entry === undefined) {
        this.evictIfFull();
        entry = new ProducerStateEntry(s.producerId, s.epoch);
        this.producers.set(s.producerId, entry);
      }
      entry.setEpoch(s.epoch);
      for (const b of s.batches) entry.addBatch(s.epoch, b);
      if (s.lastTimestampMs > entry.lastTimestampMs) entry.lastTimestampMs = s.lastTimestampMs;
      entry.coordinatorEpoch = s.coordinatorEpoch;
      entry.currentTxnFirstOffset = s.txnFirstOffset;
      // A transaction a marker of this append ends stays open until completeInOrder reaches it.
      const open = s.completed.length > 0 ? openFrom(s.completed[0]!) : s.txnFirstOffset;
      if (open >= 0n) this.ongoing.set(s.producerId, open);
      else this.ongoing.delete(s.producerId);
      if (s.completed.length > 0) anyCompleted = true;
    }
    this.mapEndOffsetValue = endOffset;
    return anyCompleted ? this.completeInOrder(prepared.staged) : NO_COMPLETED;
  }

  /**
   * Ends the transactions an append's markers closed, in offset order, each with the LSO right
   * after its marker, as Kafka does once every producer of the append is applied: a follower's
   * append holds several producers' batches, and a transaction another producer opened earlier
   * in it (or still open from before) must bound the LSO of a marker written after it, or the
   * `.txnindex` entry claims a stable offset the log never had and a read_committed fetch stops
   * collecting aborted transactions too early.
   */
  private completeInOrder(staged: readonly StagedProducer[]): CompletedTxnWithLso[] {
    const ends = staged.flatMap((s) => s.completed.map((txn, i) => ({ s, txn, i })));
    ends.sort((a, b) => (a.txn.lastOffset < b.txn.lastOffset ? -1 : 1));
    const completed: CompletedTxnWithLso[] = [];
    for (const { s, txn, i } of ends) {
      completed.push({ ...txn, lastStableOffset: this.lastStableOffsetAfter(txn) });
      const later = s.completed[i + 1];
      const next = later !== undefined ? openFrom(later) : s.txnFirstOffset;
      if (next >= 0n) this.ongoing.set(s.producerId, next);
      else this.ongoing.delete(s.producerId);
    }
    return completed;
  }

  /** Kafka's ProducerStateManager.lastStableOffset(completedTxn). */
  private lastStableOffsetAfter(txn: CompletedTxn): bigint {
    let first = -1n;
    for (const [producerId, offset] of this.ongoing) {
      if (producerId !== txn.producerId && (first < 0n || offset < first)) first = offset;
    }
    return first >= 0n ? first : txn.lastOffset + 1n;
  }

  /** The first offset of the oldest open transaction, or null when none is open. */
  firstUnstableOffset(): bigint | null {
    let first: bigint | null = null;
    // Open transactions per partition are few (one per transactional producer writing here).
    for (const offset of this.ongoing.values())
      if (first === null || offset < first) first = offset;
    return first;
  }

  /** The producers with an open transaction and its first offset (DescribeProducers). */
  ongoingTransactions(): ReadonlyMap<bigint, bigint> {
    return this.ongoing;
  }

  /** Moves the end without a producer batch (an append of plain batches). */
  advanceMapEndOffset(endOffset: bigint): void {
    if (endOffset > this.mapEndOffsetValue) this.mapEndOffsetValue = endOffset;
  }

  /**
   * At the cap, forgets the producer whose last batch is oldest. The scan is linear, but only a
   * new producer on a full partition pays it, which keeps the per-batch path free of reordering.
   */
  private evictIfFull(): void {
    if (this.producers.size < this.options.maxProducers) return;
    let oldest: ProducerStateEntry | null = null;
    for (const entry of this.producers.values()) {
      // An open transaction keeps its producer: forgetting it would lose the LSO bound.
      if (entry.currentTxnFirstOffset >= 0n) continue;
      if (oldest === null || entry.lastTimestampMs < oldest.lastTimestampMs) oldest = entry;
    }
    if (oldest === null) return; // every one has an open transaction; the cap is exceeded
    this.producers.delete(oldest.producerId);
    this.options.logger.warn(
      `${this.options.name}: forgot producer ${oldest.producerId}, ` +
        `the least recent of ${this.options.maxProducers}`,
    );
  }

  /** Forgets producers whose last batch is older than the expiration (Kafka's check). */
  removeExpiredProducers(nowMs: number): number {
    let removed = 0;
    const cutoffMs = BigInt(nowMs - this.options.expirationMs);
    for (const [producerId, entry] of this.producers) {
      if (entry.lastTimestampMs > cutoffMs || entry.currentTxnFirstOffset >= 0n) continue;
      this.producers.delete(producerId);
      removed++;
    }
    return removed;
  }

  /**
   * Loads the newest usable snapshot at or below `logEndOffset` (deleting those above it, left
   * by a log that lost its tail, and corrupt ones) and returns the offset replay starts at.
   * `listing` is the directory's names when the caller has them.
   */
  loadSnapshot(
    logStartOffset: bigint,
    logEndOffset: bigint,
    nowMs: number,
    listing?: readonly string[],
    preread?: PrereadFiles,
  ): bigint {
    this.producers.clear();
    this.ongoing.clear();
    const { dir, logger, name } = this.options;
    const offsets = listSnapshotOffsets(dir, listing);
    for (const offset of offsets) {
      if (offset > logEndOffset || offset < logStartOffset) this.deleteSnapshotFile(offset);
    }
    this.snapshotOffsets = offsets.filter((o) => o >= logStartOffset && o <= logEndOffset);
    while (this.snapshotOffsets.length > 0) {
      const offset = this.snapshotOffsets[this.snapshotOffsets.length - 1];
      try {
        const filePath = snapshotPath(dir, offset);
        const bytes = preread?.take(filePath) ?? fs.readFileSync(filePath);
        for (const entry of decodeSnapshot(bytes)) {
          this.producers.set(entry.producerId, entry);
          if (entry.currentTxnFirstOffset >= 0n) {
            this.ongoing.set(entry.producerId, entry.currentTxnFirstOffset);
          }
        }
        this.removeExpiredProducers(nowMs);
        this.mapEndOffsetValue = offset;
        return offset;
      } catch (error) {
        if (!(error instanceof CorruptSnapshotError)) throw error;
        logger.warn(`${name}: skipping producer snapshot ${offset}: ${error.message}`);
        this.producers.clear();
        this.ongoing.clear();
        this.snapshotOffsets.pop();
        this.deleteSnapshotFile(offset);
      }
    }
    this.mapEndOffsetValue = logStartOffset;
    return logStartOffset;
  }

  /**
   * Replays one batch read back from the log (no checks: it was checked when appended); returns
   * the transactions it ended (a marker), for the caller to re-index aborted ones.
   */
  replay(batch: ProducerBatch): CompletedTxnWithLso[] {
    let completed = NO_COMPLETED;
    if (batch.producerId !== NO_PRODUCER_ID) {
      completed = this.commit(this.prepareAppend([batch], "replication"), batch.lastOffset + 1n);
    }
    this.advanceMapEndOffset(batch.lastOffset + 1n);
    return completed;
  }

  /** Writes a snapshot at the map end offset unless one exists there already. */
  takeSnapshot(): void {
    const offset = this.mapEndOffsetValue;
    if (!this.snapshotDue(offset)) return;
    const bytes = encodeSnapshot([...this.producers.values()]);
    writeSnapshotFile(snapshotPath(this.options.dir, offset), bytes);
    this.snapshotOffsets.push(offset);
  }

  /**
   * takeSnapshot with the file written on the thread pool, for a log that takes no more
   * appends (UnifiedLog.closeAsync): thousands of logs closing write theirs side by side.
   */
  async takeSnapshotInBackground(): Promise<void> {
    const offset = this.mapEndOffsetValue;
    if (!this.snapshotDue(offset)) return;
    const bytes = encodeSnapshot([...this.producers.values()]);
    await writeSnapshotFileInBackground(snapshotPath(this.options.dir, offset), bytes);
    this.snapshotOffsets.push(offset);
  }

  /**
   * Only past the latest snapshot, and (as Kafka's takeSnapshot, whose last snapshot offset
   * starts at 0) never at offset 0: nothing to replay before it, and a stop with 10,000 empty
   * partitions would write 10,000 files for nothing.
   */
  private snapshotDue(offset: bigint): boolean {
    const latest = this.snapshotOffsets[this.snapshotOffsets.length - 1] ?? 0n;
    return offset > latest;
  }

  /**
   * Writes this state, at the map end offset, as a snapshot in another log's directory (a
   * moved replica's new log, which then loads exactly this state).
   */
  writeSnapshotInto(dir: string): void {
    const bytes = encodeSnapshot([...this.producers.values()]);
    writeSnapshotFile(snapshotPath(dir, this.mapEndOffsetValue), bytes);
  }

  /** Retention moved the log start: snapshots below it can no longer be replayed from. */
  deleteSnapshotsBelow(logStartOffset: bigint): void {
    while (this.snapshotOffsets.length > 0 && this.snapshotOffsets[0] < logStartOffset) {
      this.deleteSnapshotFile(this.snapshotOffsets.shift()!);
    }
  }

  snapshotOffsetsOnDisk(): readonly bigint[] {
    return this.snapshotOffsets;
  }

  private deleteSnapshotFile(offset: bigint): void {
    fs.rmSync(snapshotPath(this.options.dir, offset), { force: true });
  }
}

const NO_COMPLETED: CompletedTxnWithLso[] = [];

/** Where a transaction a marker ends was open from; -1 for a marker with no transaction open. */
const openFrom = (txn: CompletedTxn): bigint =>
  txn.firstOffset < txn.lastOffset ? txn.firstOffset : -1n;

function stagedFrom(producerId: bigint, current: ProducerStateEntry | undefined): StagedProducer {
  return {
    producerId,
    known: current !== undefined && current.producerEpoch !== NO_PRODUCER_EPOCH,
    epoch: current?.producerEpoch ?? NO_PRODUCER_EPOCH,
    lastSeq: current?.lastSeq ?? -1,
    txnFirstOffset: current?.currentTxnFirstOffset ?? -1n,
    coordinatorEpoch: current?.coordinatorEpoch ?? -1,
    lastTimestampMs: current?.lastTimestampMs ?? -1n,
    batches: [],
    completed: [],
  };
}

function inSequence(lastSeq: number, nextSeq: number): boolean {
  return nextSeq === lastSeq + 1 || (nextSeq === 0 && lastSeq === 0x7fffffff);
}

/** Kafka's LogValidator: a batch with a producer id must carry a sequence. */
function checkSequencePresent(batch: ProducerBatch): void {
  if (batch.baseSequence < 0) {
    throw new KafkaError(
      ErrorCode.INVALID_RECORD,
      `Invalid sequence number ${batch.baseSequence} in record batch with producerId ` +
        `${batch.producerId}`,
    );
  }
}
