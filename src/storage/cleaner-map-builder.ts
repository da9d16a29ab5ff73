/**
 * Step 1 of a cleaning for one chunk of the dirty section: its keyed records' offsets into the
 * OffsetMap (runs in the cleaner's Worker, cleaner-worker.ts). Markers and aborted transactions'
 * batches put nothing, so an aborted value never shadows a committed one.
 */
import { CompressionType, decompress } from "../protocol/compression.ts";
import { LOG_OVERHEAD, RECORD_BATCH_OVERHEAD } from "../protocol/record-batch.ts";
import { RecordCursor } from "../protocol/record-cursor.ts";
import type { CleanedTransactionMetadata } from "./cleaned-transaction-metadata.ts";
import type { OffsetMap } from "./offset-map.ts";

const MAX_UNCOMPRESSED_BYTES = 256 * 1024 * 1024;
const ATTRIBUTES_AT = 21;
const LAST_OFFSET_DELTA_AT = 23;
const RECORD_COUNT_AT = 57;

/** Calls `each` for every batch of `chunk` (whole batches, checked by the reader) until false. */
export function forEachBatch(
  chunk: Uint8Array,
  each: (batch: Uint8Array, baseOffset: bigint, lastOffset: bigint) => boolean,
): void {
  const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  let at = 0;
  while (at < chunk.length) {
    const sizeBytes = LOG_OVERHEAD + view.getInt32(at + 8);
    const baseOffset = view.getBigInt64(at);
    const lastOffset = baseOffset + BigInt(view.getInt32(at + LAST_OFFSET_DELTA_AT));
    if (!each(chunk.subarray(at, at + sizeBytes), baseOffset, lastOffset)) return;
    at += sizeBytes;
  }
}

export interface MapBuild {
  readonly map: OffsetMap;
  /** The first dirty offset: records below it are not put. */
  readonly start: number;
  /** The first uncleanable offset: the build ends at the first batch starting there. */
  readonly end: bigint;
  readonly transactions: CleanedTransactionMetadata;
  mapRecords: number;
  /** The map filled or the end was met: later chunks put nothing. */
  done: boolean;
}

/** Puts the chunk's batches into the map; true when the build is done (map full or end met). */
export function addChunkToMap(chunk: Uint8Array, build: MapBuild): boolean {
  let done = false;
  forEachBatch(chunk, (batch, baseOffset, lastOffset) => {
    done = baseOffset >= build.end || !addBatchToMap(batch, baseOffset, lastOffset, build);
    return !done;
  });
  return done;
}

/** Puts the batch's keyed records at or above `start` into the map; false once it is full. */
function addBatchToMap(
  bytes: Uint8Array,
  batchBaseOffset: bigint,
  lastOffset: bigint,
  build: MapBuild,
): boolean {
  const { map, start, transactions } = build;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const attributes = view.getInt16(ATTRIBUTES_AT);
  const isControl = (attributes & 0x20) !== 0;
  let aborted = false;
  if (isControl) transactions.onControlBatchRead(bytes, lastOffset);
  else aborted = transactions.onBatchRead(bytes, lastOffset, (attributes & 0x10) !== 0);
  if (lastOffset < BigInt(start)) return true;
  if (!isControl && !aborted) {
    const codec = attributes & 0x07;
    const body =
      codec === CompressionType.None
        ? bytes.subarray(RECORD_BATCH_OVERHEAD)
        : decompress(codec, bytes.subarray(RECORD_BATCH_OVERHEAD), MAX_UNCOMPRESSED_BYTES);
    const baseOffset = Number(batchBaseOffset);
    const cursor = new RecordCursor(body, 0, body.length, view.getInt32(RECORD_COUNT_AT));
    while (cursor.next()) {
      const offset = baseOffset + cursor.offsetDelta;
      build.mapRecords++;
      if (cursor.keyLength < 0 || offset < start) continue;
      const { keyStart, keyLength } = cursor;
      // A key already in the map does not grow it; a new one needs room.
      if (map.isFull && map.get(body, keyStart, keyLength) < 0) return false;
      map.put(body, keyStart, keyLength, offset);
    }
  }
  map.latestOffset = Number(lastOffset);
  return true;
}
