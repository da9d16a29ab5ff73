/**
 * A segment's aborted transactions, Kafka's `.txnindex` file next to the `.log` (same stem):
 * one entry per ABORT marker written into the segment, in log order, each 34 bytes big-endian
 * (Kafka's AbortedTxn, so Kafka's tools read the file):
 *
 *   version int16 (0) | producerId int64 | firstOffset int64 | lastOffset int64
 *   | lastStableOffset int64
 *
 * firstOffset is the transaction's first data offset in the partition, lastOffset the marker's
 * offset, lastStableOffset the partition's LSO once the marker was applied. A read_committed
 * fetch returns the entries overlapping what it read, so the consumer drops the aborted
 * batches. The file is created on the first entry (most segments have none), written without
 * fsync: a missing tail entry is re-added when the log's producer state is rebuilt after a
 * crash, since that replays every marker after the last snapshot.
 *
 * Entries are kept in memory once read: at 34 bytes each, a segment holding a million aborted
 * transactions costs 34 MB, and the entry count is bounded by the segment's size.
 */
import * as fs from "node:fs";
import { assert } from "../util/assert.ts";
import { storageError, writeFully } from "./durable-file.ts";

export const TXN_INDEX_FILE_SUFFIX = ".txnindex";
export const ABORTED_TXN_BYTES = 34;
const ABORTED_TXN_VERSION = 0;

export interface AbortedTxn {
  readonly producerId: bigint;
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
  readonly lastStableOffset: bigint;
}

/** What a search found: the entries, and whether later segments need not be searched. */
export interface TxnIndexSearch {
  readonly aborted: AbortedTxn[];
  readonly complete: boolean;
}

export class TransactionIndex {
  private entries: AbortedTxn[] | null = null;

  constructor(public filePath: string) {}

  /** Appends an entry; markers arrive in offset order, so lastOffset only grows. */
  append(txn: AbortedTxn): void {
    const entries = this.all();
    const last = entries[entries.length - 1];
    if (last !== undefined && txn.lastOffset <= last.lastOffset) {
      assert(
        false,
        `aborted txn at ${txn.lastOffset} not after ${last.lastOffset} in ${this.filePath}`,
      );
    }
    const bytes = encode(txn);
    let fd: number;
    try {
      fd = fs.openSync(this.filePath, "a");
    } catch (error) {
      throw storageError("append to", this.filePath, error);
    }
    try {
      writeFully(fd, bytes, fs.fstatSync(fd).size);
    } catch (error) {
      throw storageError("append to", this.filePath, error);
    } finally {
      fs.closeSync(fd);
    }
    const { producerId, firstOffset, lastOffset, lastStableOffset } = txn;
    entries.push({ producerId, firstOffset, lastOffset, lastStableOffset });
  }

  /** Appends unless an entry at or after this marker exists (a replay after a crash). */
  appendIfMissing(txn: AbortedTxn): void {
    const entries = this.all();
    const last = entries[entries.length - 1];
    if (last === undefined || last.lastOffset < txn.lastOffset) this.append(txn);
  }

  all(): AbortedTxn[] {
    this.entries ??= this.load();
    return this.entries;
  }

  /**
   * Entries of transactions overlapping [fetchOffset, upperBoundOffset). Complete when an entry
   * shows the LSO had already passed the bound, so later segments cannot hold more (Kafka's
   * TransactionIndex.collectAbortedTxns).
   */
  collect(fetchOffset: bigint, upperBoundOffset: bigint): TxnIndexSearch {
    const aborted: AbortedTxn[] = [];
    for (const txn of this.all()) {
      if (txn.lastOffset >= fetchOffset && txn.firstOffset < upperBoundOffset) aborted.push(txn);
      if (txn.lastStableOffset >= upperBoundOffset) return { aborted, complete: true };
    }
    return { aborted, complete: false };
  }

  /** Drops entries whose marker is at or above `offset` (the log was cut there). */
  truncateTo(offset: bigint): void {
    const entries = this.all();
    let keep = entries.length;
    while (keep > 0 && entries[keep - 1].lastOffset >= offset) keep--;
    if (keep === entries.length) return;
    entries.length = keep;
    if (!fs.existsSync(this.filePath)) return;
    fs.truncateSync(this.filePath, keep * ABORTED_TXN_BYTES);
  }

  private load(): AbortedTxn[] {
    let bytes: Uint8Array;
    try {
      bytes = fs.readFileSync(this.filePath);
    } catch (error) {
      if ((error as { code?: string }).code === "ENOENT") return [];
      throw storageError("read of", this.filePath, error);
    }
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const entries: AbortedTxn[] = [];
    // A torn last entry (crash mid-write) is ignored; the replay re-adds it.
    for (let at = 0; at + ABORTED_TXN_BYTES <= bytes.length; at += ABORTED_TXN_BYTES) {
      if (view.getInt16(at) !== ABORTED_TXN_VERSION) break;
      entries.push({
        producerId: view.getBigInt64(at + 2),
        firstOffset: view.getBigInt64(at + 10),
        lastOffset: view.getBigInt64(at + 18),
        lastStableOffset: view.getBigInt64(at + 26),
      });
    }
    if (entries.length * ABORTED_TXN_BYTES !== bytes.length) {
      fs.truncateSync(this.filePath, entries.length * ABORTED_TXN_BYTES);
    }
    return entries;
  }
}

function encode(txn: AbortedTxn): Uint8Array {
  const bytes = new Uint8Array(ABORTED_TXN_BYTES);
  const view = new DataView(bytes.buffer);
  view.setInt16(0, ABORTED_TXN_VERSION);
  view.setBigInt64(2, txn.producerId);
  view.setBigInt64(10, txn.firstOffset);
  view.setBigInt64(18, txn.lastOffset);
  view.setBigInt64(26, txn.lastStableOffset);
  return bytes;
}
