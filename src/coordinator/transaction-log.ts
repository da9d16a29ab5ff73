/**
 * Records of the internal compacted topic `__transaction_state`, in Kafka's TransactionLog
 * format (so the bytes mean the same to Kafka's tools), one record per transactional id state
 * change, keyed by the id; a null value (tombstone) forgets an expired id.
 *
 *   key   v0: version int16 (0) | transactional_id string (int16 length)
 *   value v0: version int16 (0) | producer_id int64 | producer_epoch int16
 *             | transaction_timeout_ms int32 | transaction_status int8
 *             | transaction_partitions nullable array (int32 count; -1 null) of
 *                 [topic string | partition_ids array of int32]
 *             | transaction_last_update_timestamp_ms int64 | transaction_start_timestamp_ms int64
 *
 * The partition of an id is Kafka's: abs(Java String.hashCode(id)) % partition count.
 */
import { Reader } from "../protocol/reader.ts";
import { Writer } from "../protocol/writer.ts";
import type { TransactionState } from "./transaction-metadata.ts";

export const TRANSACTION_STATE_TOPIC = "__transaction_state";
const KEY_VERSION = 0;
const VALUE_VERSION = 0;

export interface TxnLogValue {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly txnTimeoutMs: number;
  readonly state: TransactionState;
  readonly partitions: ReadonlyMap<string, readonly number[]>;
  readonly txnLastUpdateTimestampMs: number;
  readonly txnStartTimestampMs: number;
}

/** Java's String.hashCode over UTF-16 code units, as Kafka hashes ids to partitions. */
export function javaStringHash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
  return h;
}

/** Kafka's Utils.abs(hash) % n. */
export function partitionForKey(id: string, partitionCount: number): number {
  const h = javaStringHash(id);
  const abs = h === -0x80000000 ? 0 : Math.abs(h);
  return abs % partitionCount;
}

export function encodeTxnKey(transactionalId: string): Uint8Array {
  const w = new Writer();
  w.int16(KEY_VERSION);
  w.string(transactionalId);
  return w.toBytes();
}

export function encodeTxnValue(v: TxnLogValue): Uint8Array {
  const w = new Writer();
  w.int16(VALUE_VERSION);
  w.int64(v.producerId);
  w.int16(v.producerEpoch);
  w.int32(v.txnTimeoutMs);
  w.int8(v.state);
  w.int32(v.partitions.size);
  for (const [topic, partitions] of v.partitions) {
    w.string(topic);
    w.int32(partitions.length);
    for (const p of partitions) w.int32(p);
  }
  w.int64(BigInt(v.txnLastUpdateTimestampMs));
  w.int64(BigInt(v.txnStartTimestampMs));
  return w.toBytes();
}

/** The transactional id of a key, or null for a key of another version (skipped). */
export function decodeTxnKey(bytes: Uint8Array): string | null {
  const r = new Reader(bytes);
  if (r.int16() !== KEY_VERSION) return null;
  return r.string();
}

/** Decodes a value of version 0 or 1 (1 adds tagged fields Quill ignores). */
export function decodeTxnValue(bytes: Uint8Array): TxnLogValue {
  const r = new Reader(bytes);
  const version = r.int16();
  if (version !== 0 && version !== 1) throw new Error(`transaction log value version ${version}`);
  const flexible = version >= 1;
  const producerId = r.int64();
  const producerEpoch = r.int16();
  const txnTimeoutMs = r.int32();
  const state = r.int8() as TransactionState;
  const partitions = new Map<string, number[]>();
  const count = flexible ? r.unsignedVarint() - 1 : r.int32();
  for (let i = 0; i < count; i++) {
    const topic = flexible ? r.compactString() : r.string();
    const n = flexible ? r.unsignedVarint() - 1 : r.int32();
    const ids: number[] = [];
    for (let j = 0; j < n; j++) ids.push(r.int32());
    if (flexible) r.skipTaggedFields();
    partitions.set(topic, ids);
  }
  const txnLastUpdateTimestampMs = Number(r.int64());
  const txnStartTimestampMs = Number(r.int64());
  return {
    producerId,
    producerEpoch,
    txnTimeoutMs,
    state,
    partitions,
    txnLastUpdateTimestampMs,
    txnStartTimestampMs,
  };
}
