/**
 * Reads a sealed segment for the cleaner in chunks of whole batches, asynchronously, so the event
 * loop serves requests while the disk works. Each chunk is a positional read (pread) through
 * node:fs on the thread pool, over the segment's fd; a reference is held for the read, so an fd
 * pool eviction or the segment's deletion cannot close the fd meanwhile.
 *
 * Not Bun.file: over an fd, Bun.file(fd).slice(0, n) reads from the fd's current position
 * instead of offset 0 (wrong bytes on a shared fd), and over the path it was slower than pread
 * (docs/log-compaction.md has the figures, scripts/bench-cleaner-read.ts measures them).
 *
 * The bytes were validated when they were appended or recovered, so a length that does not fit
 * means the file changed under us: KAFKA_STORAGE_ERROR, and the cleaning of this log stops.
 */
import * as fs from "node:fs";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { LOG_OVERHEAD, RECORD_BATCH_OVERHEAD } from "../protocol/record-batch.ts";
import type { LogSegment } from "./log-segment.ts";

/** Reads into `buffer` (reused across chunks: the cleaner allocates no buffer per chunk). */
function readChunk(
  fd: number,
  buffer: Uint8Array,
  position: number,
  length: number,
): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    fs.read(fd, buffer, 0, length, position, (error, bytesRead) =>
      error ? reject(error) : resolve(buffer.subarray(0, bytesRead)),
    );
  });
}

/**
 * The buffer chunks are read into. The caller may hand `bytes` away between chunks (to the
 * cleaner's Worker, transferred) as long as it puts a buffer back before asking for the next.
 */
export interface ChunkBuffer {
  bytes: Uint8Array;
}

/**
 * Reads the segment from its start in chunks of at least `chunkBytes` (more when one batch is
 * larger) into `buffer.bytes`, and yields for each how many bytes at its start are whole
 * batches; `onChunk` is awaited after each read (throttling, abort checks). Ends at the
 * segment's size as it was when the walk started.
 */
export async function* readSegmentChunks(
  segment: LogSegment,
  buffer: ChunkBuffer,
  chunkBytes: number,
  onChunk: (bytesRead: number) => Promise<void>,
): AsyncGenerator<number> {
  const endPosition = segment.sizeBytes;
  let position = 0;
  let want = chunkBytes;
  // Each pass consumes at least one whole batch or grows `want` to the batch's size.
  while (position < endPosition) {
    const length = Math.min(want, endPosition - position);
    if (buffer.bytes.length < length) buffer.bytes = new Uint8Array(length);
    const fd = segment.file.acquire();
    let chunk: Uint8Array;
    try {
      chunk = await readChunk(fd, buffer.bytes, position, length);
    } finally {
      segment.file.release();
    }
    if (chunk.length !== length) changed(segment, position, "short read");
    await onChunk(chunk.length);
    const { consumed, nextBatchBytes } = splitChunk(chunk, position, segment);
    if (consumed === 0) {
      // Everything left was read and still holds no whole batch: the file is not what it was.
      if (length === endPosition - position) changed(segment, position, "partial batch");
      want = nextBatchBytes;
      continue;
    }
    want = chunkBytes;
    position += consumed;
    yield consumed;
  }
}

/** How many bytes at the chunk's start are whole batches; the size of the next if none. */
function splitChunk(
  chunk: Uint8Array,
  chunkPosition: number,
  segment: LogSegment,
): { consumed: number; nextBatchBytes: number } {
  const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  let at = 0;
  while (chunk.length - at >= LOG_OVERHEAD) {
    const sizeBytes = LOG_OVERHEAD + view.getInt32(at + 8);
    if (sizeBytes < RECORD_BATCH_OVERHEAD) changed(segment, chunkPosition + at, "bad length");
    if (at + sizeBytes > chunk.length) return { consumed: at, nextBatchBytes: sizeBytes };
    at += sizeBytes;
  }
  return { consumed: at, nextBatchBytes: RECORD_BATCH_OVERHEAD };
}

function changed(segment: LogSegment, position: number, what: string): never {
  throw new KafkaError(
    ErrorCode.KAFKA_STORAGE_ERROR,
    `${segment.file.filePath} changed on disk (${what} at ${position}); cleaning stopped`,
  );
}
