/**
 * What the cleaner knows about transactions while it walks a log in offset order (Kafka's
 * CleanedTransactionMetadata). Fed the aborted transactions of the `.txnindex` files covering
 * what is read, it answers for every batch:
 *
 * - a data batch: whether it belongs to an aborted transaction (its records go, and stay out of
 *   the offset map, so aborted values never shadow committed ones);
 * - a marker: whether it may be discarded. An ABORT marker is kept while a batch of its
 *   transaction was seen in this walk (and its `.txnindex` entry is then written to the cleaned
 *   segment's index); a COMMIT marker is kept while a batch of its transaction was seen. A marker
 *   that may be discarded is not dropped at once: the caller gives it a delete horizon, as a
 *   tombstone gets, and drops it after delete.retention.ms, so a consumer reading within that
 *   time still sees the transaction end.
 *
 * One instance serves one pass over the log (the offset-map build, or all groups of a cleaning:
 * a transaction may start in one group and end in the next).
 */
import { ControlRecordType, readControlRecord } from "../protocol/control-record.ts";
import type { AbortedTxn } from "./transaction-index.ts";

const PRODUCER_ID_AT = 43;
const RECORD_COUNT_AT = 57;

interface OngoingAbortedTxn {
  readonly txn: AbortedTxn;
  /** A batch of this transaction was read in this walk. */
  batchSeen: boolean;
}

export class CleanedTransactionMetadata {
  /** Producers with a transactional batch read whose marker has not been read yet. */
  private readonly ongoingCommitted = new Set<bigint>();
  private readonly ongoingAborted = new Map<bigint, OngoingAbortedTxn>();
  /** Aborted transactions not yet reached, by first offset; consumed from `next`. */
  private pending: AbortedTxn[] = [];
  private next = 0;
  /** Markers (their offsets) already queued: adjacent segments' searches overlap. */
  private readonly queued = new Set<bigint>();
  /** Where the entries of aborted transactions whose marker is kept go (the cleaned .txnindex). */
  cleanedIndex: { append(txn: AbortedTxn): void } | null = null;

  addAbortedTransactions(txns: readonly AbortedTxn[]): void {
    const fresh = txns.filter((t) => !this.queued.has(t.lastOffset));
    if (fresh.length === 0) return;
    for (const t of fresh) this.queued.add(t.lastOffset);
    this.pending = this.pending.slice(this.next).concat(fresh);
    this.pending.sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : 1));
    this.next = 0;
  }

  /** A data batch was read; true when it belongs to an aborted transaction. */
  onBatchRead(batch: Uint8Array, lastOffset: bigint, isTransactional: boolean): boolean {
    this.consumeUpTo(lastOffset);
    if (!isTransactional) return false;
    const producerId = producerIdOf(batch);
    const aborted = this.ongoingAborted.get(producerId);
    if (aborted !== undefined) {
      aborted.batchSeen = true;
      return true;
    }
    this.ongoingCommitted.add(producerId);
    return false;
  }

  /** A control batch was read; true when it may be discarded (once past its horizon). */
  onControlBatchRead(batch: Uint8Array, lastOffset: bigint): boolean {
    this.consumeUpTo(lastOffset);
    const view = new DataView(batch.buffer, batch.byteOffset, batch.byteLength);
    // An empty control batch is one an earlier cleaning already emptied.
    if (view.getInt32(RECORD_COUNT_AT) === 0) return true;
    const producerId = view.getBigInt64(PRODUCER_ID_AT);
    const { type } = readControlRecord(view, 0, batch.byteLength);
    if (type === ControlRecordType.ABORT) {
      const aborted = this.ongoingAborted.get(producerId);
      this.ongoingAborted.delete(producerId);
      if (aborted === undefined || !aborted.batchSeen) return true;
      this.cleanedIndex?.append(aborted.txn);
      return false;
    }
    if (type === ControlRecordType.COMMIT) return !this.ongoingCommitted.delete(producerId);
    // A control type Quill does not know is kept, as Kafka's cleaner keeps it.
    return false;
  }

  /** Aborted transactions that started at or before `offset` become ongoing. */
  private consumeUpTo(offset: bigint): void {
    while (this.next < this.pending.length && this.pending[this.next].firstOffset <= offset) {
      const txn = this.pending[this.next++];
      if (!this.ongoingAborted.has(txn.producerId)) {
        this.ongoingAborted.set(txn.producerId, { txn, batchSeen: false });
      }
    }
  }
}

function producerIdOf(batch: Uint8Array): bigint {
  return new DataView(batch.buffer, batch.byteOffset, batch.byteLength).getBigInt64(PRODUCER_ID_AT);
}
