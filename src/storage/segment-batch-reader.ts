/**
 * Reads record batches out of a segment's `.log` file with positional reads (fs.readSync) into
 * reused buffers. Two kinds of walks:
 *
 * - scanBatchHeaders: the fetch and lookup path. Reads only headers (fixed 61-byte prefix of
 *   every batch), in chunks so that small batches cost one syscall per chunk, not per batch.
 *   The bytes were validated when appended or recovered, so a bad header here means the disk
 *   changed under us and is reported as KAFKA_STORAGE_ERROR.
 * - scanValidBatches: the recovery path. Reads every byte, checks length, magic, CRC and
 *   offsets, and stops at the first bad byte so the caller can truncate there.
 *
 * Nothing is mmapped (no SIGBUS risk after truncation, docs/bun.md, File I/O).
 * Single-threaded: the shared buffers are only used within one synchronous call.
 */
import * as fs from "node:fs";
import { crc32cRange } from "../protocol/crc32c.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, verifyBatchCrc } from "../protocol/record-batch.ts";

/** Where a batch is and what it covers; enough for indexes, reads and time lookups. */
export interface BatchEntry {
  readonly position: number;
  readonly sizeBytes: number;
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  readonly maxTimestamp: bigint;
  readonly recordCount: number;
  /** The epoch of the leader that appended the batch (partitionLeaderEpoch). */
  readonly leaderEpoch: number;
}

/**
 * Header reads fetch this much at once: several small batches' headers per syscall, and little
 * wasted copying when batches are large (a fetch reads at most two header chunks of them).
 */
const HEADER_CHUNK_BYTES = 4 * 1024;
const RECOVERY_CHUNK_BYTES = 1024 * 1024;
const MAGIC_V2 = 2;

const headerChunk = new Uint8Array(HEADER_CHUNK_BYTES);
const headerView = new DataView(headerChunk.buffer);
const recoveryChunk = new Uint8Array(RECOVERY_CHUNK_BYTES);
const recoveryView = new DataView(recoveryChunk.buffer);
/** The v2 header's CRC field, and the first byte it covers (attributes). */
const CRC_AT = 17;
const CRC_COVERED_FROM = 21;

/** Fills `buf[0, want)` from `fd` at `position`; returns the count actually read (less at EOF). */
function readAt(fd: number, buf: Uint8Array, want: number, position: number): number {
  let got = 0;
  // Each pass reads at least one byte or stops at end of file.
  while (got < want) {
    const n = fs.readSync(fd, buf, got, want - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}

/**
 * The BatchEntry of the batch header at byte `at` of `view` (which must hold the whole 61-byte
 * header), reported at file `position`. Reads the v2 header fields directly: baseOffset @0,
 * batchLength @8, partitionLeaderEpoch @12, lastOffsetDelta @23, maxTimestamp @35, recordCount
 * @57 (record-batch.ts).
 */
export function batchEntryAt(view: DataView, at: number, position: number): BatchEntry {
  const baseOffset = view.getBigInt64(at);
  return {
    position,
    sizeBytes: LOG_OVERHEAD + view.getInt32(at + 8),
    baseOffset,
    lastOffset: baseOffset + BigInt(view.getInt32(at + 23)),
    maxTimestamp: view.getBigInt64(at + 35),
    recordCount: view.getInt32(at + 57),
    leaderEpoch: view.getInt32(at + 12),
  };
}

/**
 * Calls `visit` for each batch header from `startPosition` (a batch boundary) up to
 * `endPosition` (the end of the committed bytes), until `visit` returns false.
 */
export function scanBatchHeaders(
  fd: number,
  startPosition: number,
  endPosition: number,
  visit: (entry: BatchEntry) => boolean,
): void {
  let chunkStart = 0;
  let chunkEnd = 0;
  let position = startPosition;
  // Every pass advances by a whole batch (at least RECORD_BATCH_OVERHEAD bytes) or throws.
  while (position < endPosition) {
    if (position < chunkStart || position + RECORD_BATCH_OVERHEAD > chunkEnd) {
      const want = Math.min(HEADER_CHUNK_BYTES, endPosition - position);
      chunkStart = position;
      chunkEnd = position + readAt(fd, headerChunk, want, position);
    }
    if (position + RECORD_BATCH_OVERHEAD > chunkEnd) corruptHeader(position, "truncated header");
    const entry = batchEntryAt(headerView, position - chunkStart, position);
    if (headerChunk[position - chunkStart + 16] !== MAGIC_V2) corruptHeader(position, "bad magic");
    if (entry.sizeBytes < RECORD_BATCH_OVERHEAD || position + entry.sizeBytes > endPosition) {
      corruptHeader(position, `bad batch size ${entry.sizeBytes}`);
    }
    if (!visit(entry)) return;
    position += entry.sizeBytes;
  }
}

function corruptHeader(position: number, reason: string): never {
  throw new KafkaError(
    ErrorCode.KAFKA_STORAGE_ERROR,
    `segment data changed on disk: ${reason} at position ${position}`,
  );
}

/** The outcome of a recovery scan: bytes that hold whole valid batches, and why it stopped. */
export interface RecoveryScan {
  readonly validBytes: number;
  /** Null when the whole file is valid; otherwise what is wrong at `validBytes`. */
  readonly problem: string | null;
}

/**
 * Reads the file from position 0 to `fileSizeBytes`, validating each batch: a whole header,
 * a length that fits the file, magic 2, a matching CRC, offsets strictly increasing from
 * `baseOffset` with a relative offset that fits int32. Calls `visit` for each valid batch and
 * returns where the valid prefix ends. Memory stays at one RECOVERY_CHUNK_BYTES buffer: a batch
 * larger than that has its CRC computed piece by piece, so a corrupt length cannot force a
 * large allocation.
 */
export function scanValidBatches(
  fd: number,
  fileSizeBytes: number,
  baseOffset: bigint,
  visit: (entry: BatchEntry) => void,
): RecoveryScan {
  const chunk = { start: 0, end: 0 };
  let position = 0;
  let nextOffset = baseOffset;
  // Every pass advances by a whole batch or returns.
  while (position < fileSizeBytes) {
    const remaining = fileSizeBytes - position;
    if (remaining < RECORD_BATCH_OVERHEAD) return invalid(position, `${remaining} trailing bytes`);
    if (position + RECORD_BATCH_OVERHEAD > chunk.end) {
      fillRecoveryChunk(fd, position, chunk, remaining);
      if (position + RECORD_BATCH_OVERHEAD > chunk.end) return invalid(position, "short read");
    }
    const at = position - chunk.start;
    const entry = batchEntryAt(recoveryView, at, position);
    if (entry.sizeBytes < RECORD_BATCH_OVERHEAD || entry.sizeBytes > remaining) {
      return invalid(position, `batch size ${entry.sizeBytes} with ${remaining} bytes left`);
    }
    const problem =
      checkHeader(recoveryChunk[at + 16], entry, nextOffset, baseOffset) ??
      checkCrc(fd, position, entry.sizeBytes, chunk, remaining);
    if (problem !== null) return invalid(position, problem);
    visit(entry);
    nextOffset = entry.lastOffset + 1n;
    position += entry.sizeBytes;
  }
  return { validBytes: position, problem: null };
}

/** The file range [start, end) currently held in recoveryChunk. */
interface ChunkWindow {
  start: number;
  end: number;
}

/** Reads as much of the file from `position` as the chunk holds. */
function fillRecoveryChunk(
  fd: number,
  position: number,
  chunk: ChunkWindow,
  remaining: number,
): void {
  const want = Math.min(RECOVERY_CHUNK_BYTES, remaining);
  chunk.start = position;
  chunk.end = position + readAt(fd, recoveryChunk, want, position);
}

function checkHeader(
  magic: number | undefined,
  entry: BatchEntry,
  nextOffset: bigint,
  segmentBaseOffset: bigint,
): string | null {
  if (magic !== MAGIC_V2) return `magic ${magic}`;
  if (entry.baseOffset < nextOffset) {
    return `base offset ${entry.baseOffset} below expected ${nextOffset}`;
  }
  if (entry.lastOffset < entry.baseOffset) return `last offset ${entry.lastOffset} below base`;
  if (entry.lastOffset - segmentBaseOffset > 0x7fffffffn) {
    return `offset ${entry.lastOffset} too far above the segment base`;
  }
  return null;
}

/**
 * Checks the CRC of the batch at `position`: in the chunk when it fits there (reading it in if
 * needed), else by streaming it through the chunk. Leaves the chunk holding the batch's start
 * or, after streaming, nothing useful (the caller refills it).
 */
function checkCrc(
  fd: number,
  position: number,
  sizeBytes: number,
  chunk: ChunkWindow,
  remaining: number,
): string | null {
  if (position + sizeBytes > chunk.end && sizeBytes <= RECOVERY_CHUNK_BYTES) {
    fillRecoveryChunk(fd, position, chunk, remaining);
    if (position + sizeBytes > chunk.end) return "short read";
  }
  if (position + sizeBytes <= chunk.end) {
    const at = position - chunk.start;
    return verifyBatchCrc(recoveryChunk.subarray(at, at + sizeBytes)) ? null : "CRC mismatch";
  }
  const storedCrc = recoveryView.getUint32(position - chunk.start + CRC_AT);
  let crc = 0;
  let from = position + CRC_COVERED_FROM;
  const end = position + sizeBytes;
  // Each pass hashes at least one byte read from the file, or stops at a short read.
  while (from < end) {
    const got = readAt(fd, recoveryChunk, Math.min(RECOVERY_CHUNK_BYTES, end - from), from);
    if (got === 0) return "short read";
    crc = crc32cRange(recoveryChunk, 0, got, crc);
    from += got;
  }
  chunk.end = chunk.start; // The chunk now holds the batch's tail, not the window it claims.
  return crc === storedCrc ? null : "CRC mismatch";
}

function invalid(position: number, problem: string): RecoveryScan {
  return { validBytes: position, problem };
}
