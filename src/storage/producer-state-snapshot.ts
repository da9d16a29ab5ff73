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
 *   version int16 (1) | crc uint32: CRC-32C of every byte after it | producerCount int32
 *   per producer:  producerId int64 | producerEpoch int16 | lastTimestampMs int64
 *                  | batchCount int8 (1..5)
 *   per batch:     lastSequence int32 | lastOffset int64 | offsetDelta int32 | timestampMs int64
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
const SNAPSHOT_VERSION = 1;
const HEADER_BYTES = 2 + 4 + 4;
const PRODUCER_BYTES = 8 + 2 + 8 + 1;
const BATCH_BYTES = 4 + 8 + 4 + 8;
const SNAPSHOT_STEM = /^(\d{20})\.snapshot$/;

/** A snapshot whose bytes do not parse or fail their CRC (Kafka's CorruptSnapshotException). */
export class CorruptSnapshotError extends Error {
  override readonly name = "CorruptSnapshotError";
}

export function snapshotPath(dir: string, offset: bigint): string {
  return path.join(dir, segmentFileStem(offset) + SNAPSHOT_FILE_SUFFIX);
}

/** Offsets of the snapshot files in `dir`, ascending. */
export function listSnapshotOffsets(dir: string): bigint[] {
  const offsets: bigint[] = [];
  for (const name of fs.readdirSync(dir)) {
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
    assert(e.batches.length > 0, `producer ${e.producerId} has no batch to snapshot`);
    view.setBigInt64(at, e.producerId);
    view.setInt16(at + 8, e.producerEpoch);
    view.setBigInt64(at + 10, e.lastTimestampMs);
    view.setInt8(at + 18, e.batches.length);
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
  if (version !== SNAPSHOT_VERSION) throw new CorruptSnapshotError(`version ${version}`);
  if (view.getUint32(2) !== crc32cRange(bytes, 6, bytes.length)) {
    throw new CorruptSnapshotError("CRC mismatch");
  }
  const count = view.getInt32(6);
  const entries: ProducerStateEntry[] = [];
  let at = HEADER_BYTES;
  for (let i = 0; i < count; i++) {
    if (at + PRODUCER_BYTES > bytes.length) throw new CorruptSnapshotError("truncated producer");
    const entry = new ProducerStateEntry(view.getBigInt64(at), view.getInt16(at + 8));
    const batchCount = view.getInt8(at + 18);
    if (batchCount < 1 || batchCount > BATCHES_RETAINED_MAX) {
      throw new CorruptSnapshotError(`producer ${entry.producerId} has ${batchCount} batches`);
    }
    at += PRODUCER_BYTES;
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
    entry.lastTimestampMs = view.getBigInt64(at - batchCount * BATCH_BYTES - PRODUCER_BYTES + 10);
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
