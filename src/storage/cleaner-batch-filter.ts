/**
 * What the cleaner does to one stored batch (Kafka's MemoryRecords.filterTo with the Cleaner's
 * filter): decides which records survive, then writes the batch back unchanged, rebuilt with
 * only the survivors (same base offset, last offset delta, producer id, epoch, base sequence and
 * leader epoch; compressed again with the batch's own codec), reduced to an empty header, or
 * not at all.
 *
 * A record survives when it lies past the offset map's reach, or when it is the latest record
 * of its key and is either a value or a tombstone still inside its delete horizon. Tombstones
 * first get a horizon when the cleaner first keeps them (KIP-534): the batch is marked with the
 * delete-horizon attribute and its base timestamp becomes `now + delete.retention.ms`, record
 * timestamps being rewritten relative to it so that every record keeps its timestamp. Records
 * without a key cannot be compacted and are dropped, as Kafka does.
 *
 * The last batch of every active idempotent producer is kept even when none of its records
 * survive (as an empty batch), so the producer's last sequence and epoch outlive compaction.
 *
 * Transactions (cleaned-transaction-metadata.ts decides): a batch of an aborted transaction
 * loses all its records; a marker stays while any batch of its transaction does, then gets a
 * delete horizon like a tombstone and goes once the horizon has passed.
 */
import { CompressionType, compress, decompress } from "../protocol/compression.ts";
import { crc32cRange } from "../protocol/crc32c.ts";
import { LOG_OVERHEAD, RECORD_BATCH_OVERHEAD } from "../protocol/record-batch.ts";
import {
  RecordCursor,
  varlongNumberSizeBytes,
  writeVarlongNumber,
} from "../protocol/record-cursor.ts";
import { varintSizeBytes, writeVarint } from "../protocol/varint.ts";
import type { CleanedTransactionMetadata } from "./cleaned-transaction-metadata.ts";
import type { OffsetMap } from "./offset-map.ts";

const ATTRIBUTES_AT = 21;
const LAST_OFFSET_DELTA_AT = 23;
const BASE_TIMESTAMP_AT = 27;
const MAX_TIMESTAMP_AT = 35;
const PRODUCER_ID_AT = 43;
const PRODUCER_EPOCH_AT = 51;
const RECORD_COUNT_AT = 57;
const CRC_AT = 17;
const COMPRESSION_MASK = 0x07;
const TIMESTAMP_TYPE_BIT = 0x08;
const TRANSACTIONAL_BIT = 0x10;
const CONTROL_BIT = 0x20;
export const DELETE_HORIZON_BIT = 0x40;
/** Decompressed batches the cleaner handles; as large as anything the broker accepted. */
const MAX_UNCOMPRESSED_BYTES = 256 * 1024 * 1024;

export interface CleanerFilter {
  readonly map: OffsetMap;
  readonly nowMs: number;
  readonly deleteRetentionMs: number;
  /** Producer id -> last offset of its last data batch, for every active producer. */
  readonly lastOffsetOfProducer: ReadonlyMap<bigint, bigint>;
  /** Producer id -> epoch, for every active producer with no data batch left. */
  readonly markerOnlyProducers: ReadonlyMap<bigint, number>;
  /** Aborted transactions and markers met so far in this cleaning. */
  readonly transactions: CleanedTransactionMetadata;
}

export interface FilteredBatch {
  /** The batch to write, or null when it goes entirely. May be the input itself. */
  readonly bytes: Uint8Array | null;
  readonly recordsRead: number;
  readonly recordsKept: number;
  /** The horizon the written batch carries if it keeps tombstones, else -1. */
  readonly deleteHorizonMs: number;
  readonly maxTimestamp: bigint;
}

/** Filters the whole batch `batch` (one entry, CRC already checked when it was stored). */
export function filterBatch(batch: Uint8Array, filter: CleanerFilter): FilteredBatch {
  const view = new DataView(batch.buffer, batch.byteOffset, batch.byteLength);
  const attributes = view.getInt16(ATTRIBUTES_AT);
  const lastOffset = view.getBigInt64(0) + BigInt(view.getInt32(LAST_OFFSET_DELTA_AT));
  if ((attributes & CONTROL_BIT) !== 0) return filterMarker(batch, view, lastOffset, filter);
  const transactional = (attributes & TRANSACTIONAL_BIT) !== 0;
  if (filter.transactions.onBatchRead(batch, lastOffset, transactional)) {
    return dropRecords(batch, view, lastOffset, filter); // an aborted transaction's batch
  }
  const maxTimestamp = view.getBigInt64(MAX_TIMESTAMP_AT);
  const recordCount = view.getInt32(RECORD_COUNT_AT);
  const codec = attributes & COMPRESSION_MASK;
  const body =
    codec === CompressionType.None
      ? batch.subarray(RECORD_BATCH_OVERHEAD)
      : decompress(codec, batch.subarray(RECORD_BATCH_OVERHEAD), MAX_UNCOMPRESSED_BYTES);
  const baseOffset = Number(view.getBigInt64(0));
  const baseTimestamp = Number(view.getBigInt64(BASE_TIMESTAMP_AT));
  const horizon = (attributes & DELETE_HORIZON_BIT) !== 0 ? baseTimestamp : -1;
  const kept: number[] = []; // record starts, ends and timestamps, flattened
  let keptTombstone = false;
  const cursor = new RecordCursor(body, 0, body.length, recordCount);
  while (cursor.next()) {
    if (!shouldRetain(cursor, baseOffset, horizon, filter)) continue;
    kept.push(cursor.recordStart, cursor.recordEnd, baseTimestamp + cursor.timestampDelta);
    if (cursor.valueLength < 0) keptTombstone = true;
  }
  const keptCount = kept.length / 3;
  const needHorizon = keptTombstone && horizon < 0;
  if (keptCount === recordCount && !needHorizon) {
    return unchanged(batch, recordCount, keptTombstone ? horizon : -1, maxTimestamp);
  }
  if (keptCount === 0) return dropRecords(batch, view, lastOffset, filter);
  const newHorizon = needHorizon ? filter.nowMs + filter.deleteRetentionMs : horizon;
  const rebuilt = rebuildBatch(batch, view, body, kept, newHorizon);
  return {
    bytes: rebuilt.bytes,
    recordsRead: recordCount,
    recordsKept: keptCount,
    deleteHorizonMs: keptTombstone ? newHorizon : -1,
    maxTimestamp: rebuilt.maxTimestamp,
  };
}

/**
 * A transaction marker (Kafka's cleaner, KIP-98 with KIP-534's horizon): kept while a batch of
 * its transaction remains; then given a delete horizon, as a tombstone is; dropped once the
 * horizon has passed (reduced to an empty batch if it is an active producer's last word).
 */
function filterMarker(
  batch: Uint8Array,
  view: DataView,
  lastOffset: bigint,
  filter: CleanerFilter,
): FilteredBatch {
  const discardable = filter.transactions.onControlBatchRead(batch, lastOffset);
  const recordCount = view.getInt32(RECORD_COUNT_AT);
  const maxTimestamp = view.getBigInt64(MAX_TIMESTAMP_AT);
  if (!discardable) return unchanged(batch, recordCount, -1, maxTimestamp);
  const attributes = view.getInt16(ATTRIBUTES_AT);
  const baseTimestamp = Number(view.getBigInt64(BASE_TIMESTAMP_AT));
  const horizon = (attributes & DELETE_HORIZON_BIT) !== 0 ? baseTimestamp : -1;
  if (recordCount === 0 || (horizon >= 0 && horizon <= filter.nowMs)) {
    return dropRecords(batch, view, lastOffset, filter);
  }
  if (horizon >= 0) return unchanged(batch, recordCount, horizon, maxTimestamp);
  // Control batches are never compressed.
  const body = batch.subarray(RECORD_BATCH_OVERHEAD);
  const kept: number[] = [];
  const cursor = new RecordCursor(body, 0, body.length, recordCount);
  while (cursor.next()) {
    kept.push(cursor.recordStart, cursor.recordEnd, baseTimestamp + cursor.timestampDelta);
  }
  const newHorizon = filter.nowMs + filter.deleteRetentionMs;
  const rebuilt = rebuildBatch(batch, view, body, kept, newHorizon);
  return {
    bytes: rebuilt.bytes,
    recordsRead: recordCount,
    recordsKept: recordCount,
    deleteHorizonMs: newHorizon,
    maxTimestamp: rebuilt.maxTimestamp,
  };
}

function unchanged(
  batch: Uint8Array,
  recordCount: number,
  deleteHorizonMs: number,
  maxTimestamp: bigint,
): FilteredBatch {
  return {
    bytes: batch,
    recordsRead: recordCount,
    recordsKept: recordCount,
    deleteHorizonMs,
    maxTimestamp,
  };
}

/**
 * None of the batch's records stay. The batch goes too, unless it holds an active producer's
 * last sequence (its last data batch) or, for a producer with no data batch left, its last
 * epoch (its marker): then its empty header stays (Kafka's BatchRetention.RETAIN_EMPTY).
 */
function dropRecords(
  batch: Uint8Array,
  view: DataView,
  lastOffset: bigint,
  filter: CleanerFilter,
): FilteredBatch {
  const producerId = view.getBigInt64(PRODUCER_ID_AT);
  const isMarker = (view.getInt16(ATTRIBUTES_AT) & CONTROL_BIT) !== 0;
  const keep =
    producerId >= 0n &&
    (isMarker
      ? filter.markerOnlyProducers.get(producerId) === view.getInt16(PRODUCER_EPOCH_AT)
      : filter.lastOffsetOfProducer.get(producerId) === lastOffset);
  return {
    bytes: keep ? emptyBatch(batch, view) : null,
    recordsRead: view.getInt32(RECORD_COUNT_AT),
    recordsKept: 0,
    deleteHorizonMs: -1,
    maxTimestamp: view.getBigInt64(MAX_TIMESTAMP_AT),
  };
}

function shouldRetain(
  cursor: RecordCursor,
  baseOffset: number,
  horizon: number,
  filter: CleanerFilter,
): boolean {
  const offset = baseOffset + cursor.offsetDelta;
  if (offset > filter.map.latestOffset) return true;
  if (cursor.keyLength < 0) return false;
  if (offset < filter.map.get(cursor.body, cursor.keyStart, cursor.keyLength)) return false;
  if (cursor.valueLength >= 0) return true;
  return horizon < 0 || filter.nowMs < horizon;
}

/**
 * The survivors in a new batch. Offset deltas are kept; timestamp deltas are recomputed from
 * the new base timestamp (the first survivor's, or the delete horizon when one is set).
 */
function rebuildBatch(
  batch: Uint8Array,
  view: DataView,
  body: Uint8Array,
  kept: readonly number[],
  horizon: number,
): { bytes: Uint8Array; maxTimestamp: bigint } {
  const attributes = view.getInt16(ATTRIBUTES_AT);
  const logAppendTime = (attributes & TIMESTAMP_TYPE_BIT) !== 0;
  const baseTimestamp = horizon >= 0 ? horizon : kept[2];
  let maxTimestamp = -Infinity;
  let sizeBytes = 0;
  for (let i = 0; i < kept.length; i += 3) {
    sizeBytes += rewrittenRecordSize(body, kept[i], kept[i + 1], kept[i + 2] - baseTimestamp);
    if (kept[i + 2] > maxTimestamp) maxTimestamp = kept[i + 2];
  }
  const codec = (attributes & COMPRESSION_MASK) as CompressionType;
  // Uncompressed records are written in place after the header: one large allocation, not two
  // (each fresh one costs a page fault per 4 KiB, most of the filtering's system time).
  const plainAt = codec === CompressionType.None ? RECORD_BATCH_OVERHEAD : 0;
  const plain = new Uint8Array(plainAt + sizeBytes);
  let pos = plainAt;
  for (let i = 0; i < kept.length; i += 3) {
    pos = rewriteRecord(body, kept[i], kept[i + 1], kept[i + 2] - baseTimestamp, plain, pos);
  }
  let out = plain;
  if (codec !== CompressionType.None) {
    const records = compress(codec, plain);
    out = new Uint8Array(RECORD_BATCH_OVERHEAD + records.length);
    out.set(records, RECORD_BATCH_OVERHEAD);
  }
  out.set(batch.subarray(0, RECORD_BATCH_OVERHEAD));
  const dv = new DataView(out.buffer);
  dv.setInt32(8, out.length - LOG_OVERHEAD);
  dv.setInt16(ATTRIBUTES_AT, horizon >= 0 ? attributes | DELETE_HORIZON_BIT : attributes);
  dv.setBigInt64(BASE_TIMESTAMP_AT, BigInt(baseTimestamp));
  const max = logAppendTime ? view.getBigInt64(MAX_TIMESTAMP_AT) : BigInt(maxTimestamp);
  dv.setBigInt64(MAX_TIMESTAMP_AT, max);
  dv.setInt32(RECORD_COUNT_AT, kept.length / 3);
  dv.setUint32(CRC_AT, crc32cRange(out, ATTRIBUTES_AT, out.length));
  return { bytes: out, maxTimestamp: max };
}

/** Size of the record at [start, end) of `body` once its timestamp delta is `delta`. */
function rewrittenRecordSize(body: Uint8Array, start: number, end: number, delta: number): number {
  const inner = innerSize(body, start, end, delta);
  return varintSizeBytes(inner) + inner;
}

function innerSize(body: Uint8Array, start: number, end: number, delta: number): number {
  const cursor = tailOf(body, start, end);
  return 1 + varlongNumberSizeBytes(delta) + (end - cursor.afterTimestamp);
}

function rewriteRecord(
  body: Uint8Array,
  start: number,
  end: number,
  delta: number,
  out: Uint8Array,
  pos: number,
): number {
  const { afterTimestamp } = tailOf(body, start, end);
  pos = writeVarint(out, pos, innerSize(body, start, end, delta));
  out[pos++] = 0; // record attributes: unused
  pos = writeVarlongNumber(out, pos, delta);
  out.set(body.subarray(afterTimestamp, end), pos);
  return pos + (end - afterTimestamp);
}

/** Where the fields after the timestamp delta start in the record at [start, end). */
function tailOf(body: Uint8Array, start: number, end: number): { afterTimestamp: number } {
  let pos = start;
  while (body[pos] & 0x80) pos++; // length varint
  pos += 2; // its last byte, then attributes
  while (body[pos] & 0x80) pos++; // timestamp delta varlong
  pos++;
  if (pos > end) throw new RangeError(`record at ${start} ends before its timestamp`);
  return { afterTimestamp: pos };
}

/** Kafka's writeEmptyHeader: the batch's header with no records, uncompressed. */
function emptyBatch(batch: Uint8Array, view: DataView): Uint8Array {
  const out = new Uint8Array(RECORD_BATCH_OVERHEAD);
  out.set(batch.subarray(0, RECORD_BATCH_OVERHEAD));
  const dv = new DataView(out.buffer);
  const attributes = view.getInt16(ATTRIBUTES_AT);
  const maxTimestamp = view.getBigInt64(MAX_TIMESTAMP_AT);
  dv.setInt32(8, RECORD_BATCH_OVERHEAD - LOG_OVERHEAD);
  dv.setInt16(ATTRIBUTES_AT, attributes & ~COMPRESSION_MASK & ~DELETE_HORIZON_BIT);
  dv.setBigInt64(BASE_TIMESTAMP_AT, maxTimestamp);
  dv.setInt32(RECORD_COUNT_AT, 0);
  dv.setUint32(CRC_AT, crc32cRange(out, ATTRIBUTES_AT, out.length));
  return out;
}
