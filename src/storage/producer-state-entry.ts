/**
 * What one partition remembers about one idempotent producer (Kafka's ProducerStateEntry and
 * BatchMetadata): its current epoch and the sequence ranges and offsets of its last five
 * batches, so a retried batch is answered with its original offsets instead of being written
 * twice. Five is the most batches a producer may have in flight per partition
 * (max.in.flight.requests.per.connection <= 5 with idempotence), so any retry is among them.
 */
import { assert } from "../util/assert.ts";

/** Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN. */
export const BATCHES_RETAINED_MAX = 5;
/** RecordBatch.NO_PRODUCER_ID / NO_PRODUCER_EPOCH / NO_SEQUENCE. */
export const NO_PRODUCER_ID = -1n;
export const NO_PRODUCER_EPOCH = -1;
export const NO_SEQUENCE = -1;
const INT32_MAX = 0x7fffffff;

/** One appended batch of a producer: its sequence range and where it landed in the log. */
export interface BatchMetadata {
  readonly lastSeq: number;
  readonly lastOffset: bigint;
  /** lastOffset - firstOffset, which is also lastSeq - firstSeq (modulo wrap-around). */
  readonly offsetDelta: number;
  readonly timestampMs: bigint;
}

export const firstSeqOf = (b: BatchMetadata): number => decrementSequence(b.lastSeq, b.offsetDelta);
export const firstOffsetOf = (b: BatchMetadata): bigint => b.lastOffset - BigInt(b.offsetDelta);

/** Sequences wrap from Int32.MAX to 0 (DefaultRecordBatch.incrementSequence). */
export function incrementSequence(sequence: number, increment: number): number {
  if (sequence > INT32_MAX - increment) return increment - (INT32_MAX - sequence) - 1;
  return sequence + increment;
}

function decrementSequence(sequence: number, decrement: number): number {
  if (sequence < decrement) return INT32_MAX - (decrement - sequence) + 1;
  return sequence - decrement;
}

export class ProducerStateEntry {
  /** Oldest first; at most BATCHES_RETAINED_MAX. */
  readonly batches: BatchMetadata[] = [];
  lastTimestampMs = -1n;
  /** The first offset of this producer's open transaction in the partition, else -1. */
  currentTxnFirstOffset = -1n;
  /** The coordinator epoch of the last marker written for it, else -1 (fences old ones). */
  coordinatorEpoch = -1;

  constructor(
    readonly producerId: bigint,
    public producerEpoch: number,
  ) {
    assert(producerId >= 0n, `producer id ${producerId} is negative`);
  }

  get lastSeq(): number {
    return this.batches.length === 0 ? NO_SEQUENCE : this.batches[this.batches.length - 1].lastSeq;
  }

  get lastDataOffset(): bigint {
    return this.batches.length === 0 ? -1n : this.batches[this.batches.length - 1].lastOffset;
  }

  /**
   * Records a batch appended under `epoch`. A new epoch forgets the old epoch's batches: their
   * sequences restart at 0 and can no longer be duplicates (ProducerStateEntry.addBatch).
   */
  addBatch(epoch: number, batch: BatchMetadata): void {
    this.setEpoch(epoch);
    this.batches.push(batch);
    if (this.batches.length > BATCHES_RETAINED_MAX) this.batches.shift();
    this.lastTimestampMs = batch.timestampMs;
    assert(this.batches.length <= BATCHES_RETAINED_MAX, "producer entry holds too many batches");
  }

  /** A new epoch forgets the old epoch's batches (also when a marker bumps it). */
  setEpoch(epoch: number): void {
    if (epoch === this.producerEpoch) return;
    this.batches.length = 0;
    this.producerEpoch = epoch;
  }

  /** The retained batch with exactly this sequence range under `epoch`, if any. */
  findDuplicate(epoch: number, firstSeq: number, lastSeq: number): BatchMetadata | null {
    if (epoch !== this.producerEpoch) return null;
    for (const b of this.batches) {
      if (b.lastSeq === lastSeq && firstSeqOf(b) === firstSeq) return b;
    }
    return null;
  }
}
