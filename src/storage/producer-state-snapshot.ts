/**
 * Producer state snapshot files, one per offset, next to a partition's segments:
 * `<offset, 20 digits>.snapshot` holds the state of every producer after the log's batches
 * below that offset (Kafka's `.snapshot` files, same naming). Loading starts from the newest
 * usable snapshot and replays only the batches after it.
 *
 * Format (big-endian), loosely Kafka's ProducerSnapshot v1 but keeping all five retained
 * batches of each producer rather than only the last, so that after a restart a retry of any
 * batch still in flight is recognised as a duplicate:
 *
 *   version int16 (2) | crc uint32: CRC-32C of every byte after it | producerCount int32
 *   per producer:  producerId int64 | producerEpoch int16 | lastTimestampMs int64
 *                  | coordinatorEpoch int32 | currentTxnFirstOffset int64 (-1: none)
 *                  | batchCount int8 (0..5)
 *   per batch:     lastSequence int32 | lastOffset int64 | offsetDelta int32 | timestampMs int64
 *
 * Version 2 added the two transaction fields (as Kafka's v1 has them) and allows producers
 * known only from a marker (no batch); version 1 files (no transaction fields, 1..5 batches)
 * still load.
 *
 * Snapshots are derived data: they are written (tmp file, rename) without fsync, and a torn or
 * corrupt one fails its CRC and is skipped, which only costs a longer replay.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { crc32cRange } from "../protocol/crc32c.ts";
import { assert } from "../util/assert.ts";
import { segmentFileStem } from "./log-segment.ts";
import { BATCHES_RETAINED_MAX, ProducerStateEntry } from "./producer-state-entry.ts";

export const SNAPSHOT_FILE_SUFFIX = ".snapshot";
const SNAPSHOT_VERSION = 2;
const SNAPSHOT_V1 = 1;
const HEADER_BYTES = 2 + 4 + 4;
const PRODUCER_BYTES_V1 = 8 + 2 + 8 + 1;
const TXN_FIELDS_BYTES = 4 + 8;
const PRODUCER_BYTES = PRODUCER_BYTES_V1 + TXN_FIELDS_BYTES;
const BATCH_BYTES = 4 + 8 + 4 + 8;
const SNAPSHOT_STEM = /^(\d{20})\.snapshot$/;

/** A snapshot whose bytes do not parse or fail their CRC (Kafka's CorruptSnapshotException). */
export class CorruptSnapshotError extends Error {
  override readonly name = "CorruptSnapshotError";
}

export function snapshotPath(dir: string, offset: bigint): string {
  return path.join(dir, segmentFileStem(offset) + SNAPSHOT_FILE_SUFFIX);
}

/** Offsets of the snapshot files in `dir` (or in its `listing`), ascending. */
export function listSnapshotOffsets(
  dir: string,
  listing: readonly string[] = fs.readdirSync(dir),
): bigint[] {
  const offsets: bigint[] = [];
  for (const name of listing) {
    const match = SNAPSHOT_STEM.exec(name);
    if (match !== null) offsets.push(BigInt(match[1]));
  }
  return offsets.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

export function encodeSnapshot(entries: readonly ProducerStateEntry[]): Uint8Array {
  let sizeBytes = HEADER_BYTES;
  for (const e of entries) sizeBytes += PRODUCER_BYTES + e.batches.length * BATCH_BYTES;
  const out = new Uint8Array(sizeBytes);
  const view = new DataView(out.buffer);
  view.setInt16(0, SNAPSHOT_VERSION);
  view.setInt32(6, entries.length);
  let at = HEADER_BYTES;
  for (const e of entries) {
    view.setBigInt64(at, e.producerId);
    view.setInt16(at + 8, e.producerEpoch);
    view.setBigInt64(at + 10, e.lastTimestampMs);
    view.setInt32(at + 18, e.coordinatorEpoch);
    view.setBigInt64(at + 22, e.currentTxnFirstOffset);
    view.setInt8(at + 30, e.batches.length);
    at += PRODUCER_BYTES;
    for (const b of e.batches) {
      view.setInt32(at, b.lastSeq);
      view.setBigInt64(at + 4, b.lastOffset);
      view.setInt32(at + 12, b.offsetDelta);
      view.setBigInt64(at + 16, b.timestampMs);
      at += BATCH_BYTES;
    }
  }
  assert(at === sizeBytes, `snapshot wrote ${at} of ${sizeBytes} bytes`);
  view.setUint32(2, crc32cRange(out, 6, out.length));
  return out;
}

export function decodeSnapshot(bytes: Uint8Array): ProducerStateEntry[] {
  if (bytes.length < HEADER_BYTES) throw new CorruptSnapshotError(`${bytes.length} bytes`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getInt16(0);
  if (version !== SNAPSHOT_VERSION && version !== SNAPSHOT_V1) {
    throw new CorruptSnapshotError(`version ${version}`);
  }
  if (view.getUint32(2) !== crc32cRange(bytes, 6, bytes.length)) {
    throw new CorruptSnapshotError("CRC mismatch");
  }
  const producerBytes = version === SNAPSHOT_V1 ? PRODUCER_BYTES_V1 : PRODUCER_BYTES;
  const minBatches = version === SNAPSHOT_V1 ? 1 : 0;
  const count = view.getInt32(6);
  const entries: ProducerStateEntry[] = [];
  let at = HEADER_BYTES;
  for (let i = 0; i < count; i++) {
    if (at + producerBytes > bytes.length) throw new CorruptSnapshotError("truncated producer");
    const entry = new ProducerStateEntry(view.getBigInt64(at), view.getInt16(at + 8));
    const lastTimestampMs = view.getBigInt64(at + 10);
    if (version !== SNAPSHOT_V1) {
      entry.coordinatorEpoch = view.getInt32(at + 18);
      entry.currentTxnFirstOffset = view.getBigInt64(at + 22);
    }
    const batchCount = view.getInt8(at + producerBytes - 1);
    if (batchCount < minBatches || batchCount > BATCHES_RETAINED_MAX) {
      throw new CorruptSnapshotError(`producer ${entry.producerId} has ${batchCount} batches`);
    }
    at += producerBytes;
    if (at + batchCount * BATCH_BYTES > bytes.length) {
      throw new CorruptSnapshotError("truncated batches");
    }
    for (let j = 0; j < batchCount; j++, at += BATCH_BYTES) {
      entry.addBatch(entry.producerEpoch, {
        lastSeq: view.getInt32(at),
        lastOffset: view.getBigInt64(at + 4),
        offsetDelta: view.getInt32(at + 12),
        timestampMs: view.getBigInt64(at + 16),
      });
    }
    entry.lastTimestampMs = lastTimestampMs;
    entries.push(entry);
  }
  if (at !== bytes.length) throw new CorruptSnapshotError(`${bytes.length - at} trailing bytes`);
  return entries;
}

/** Writes a snapshot through a tmp file and a rename (no fsync: see the file comment). */
export function writeSnapshotFile(filePath: string, bytes: Uint8Array): void {
  const tmpPath = `${filePath}.tmp`;
  fs.writeFileSync(tmpPath, bytes);
  fs.renameSync(tmpPath, filePath);
}

/** writeSnapshotFile on the thread pool. */
export async function writeSnapshotFileInBackground(
  filePath: string,
  bytes: Uint8Array,
): Promise<void> {
  const tmpPath = `${filePath}.tmp`;
  await fs.promises.writeFile(tmpPath, bytes);
  await fs.promises.rename(tmpPath, filePath);
}
