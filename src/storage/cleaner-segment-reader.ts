/**
 * Reads a sealed segment for the cleaner in chunks of whole batches, asynchronously, so the event
 * loop serves requests while the disk works, one chunk ahead of the cleaner's Worker. Each chunk
 * is a positional read (pread) through node:fs on the thread pool, over the segment's fd; a
 * reference is held for the read, so an fd pool eviction or the segment's deletion cannot close
 * the fd meanwhile.
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

/** Reads `length` bytes at `position` into `buffer`, holding a reference on the fd meanwhile. */
function readChunk(
  segment: LogSegment,
  buffer: Uint8Array,
  position: number,
  length: number,
): Promise<ReadChunk> {
  const fd = segment.file.acquire();
  return new Promise<ReadChunk>((resolve, reject) => {
    fs.read(fd, buffer, 0, length, position, (error, bytesRead) => {
      segment.file.release();
      if (error) reject(error);
      else resolve({ buffer, bytesRead });
    });
  });
}

interface ReadChunk {
  readonly buffer: Uint8Array;
  readonly bytesRead: number;
}

/**
 * The cleaner's read buffers, reused for a whole cleaning (a fresh 512 KiB buffer per chunk
 * once caused GC pauses). A chunk's buffer comes back with `give` once its bytes are used; the
 * consumer may hand it away meanwhile (to the cleaner's Worker, transferred). At most `kept`
 * are kept for reuse: as many as the cleaner has in use at once (chunks in flight, read-ahead).
 */
export class ChunkBuffers {
  private readonly free: Uint8Array[] = [];

  constructor(
    private readonly chunkBytes: number,
    private readonly kept: number,
  ) {}

  take(minBytes: number): Uint8Array {
    const buffer = this.free.pop();
    if (buffer !== undefined && buffer.length >= minBytes) return buffer;
    return new Uint8Array(Math.max(this.chunkBytes, minBytes));
  }

  give(buffer: Uint8Array): void {
    if (this.free.length < this.kept) this.free.push(buffer);
  }
}

/** Whole batches in `buffer[0, length)`; `buffer` is to be given back to the ChunkBuffers. */
export interface SegmentChunk {
  readonly buffer: Uint8Array;
  readonly length: number;
}

/**
 * Reads the segment from its start in chunks of at least `chunkBytes` (more when one batch is
 * larger) and yields each as whole batches; `onChunk` is awaited after each read (throttling,
 * abort checks). The next chunk is read while the caller works on the current one, so the disk
 * and the Worker overlap. Ends at the segment's size as it was when the walk started.
 */
export async function* readSegmentChunks(
  segment: LogSegment,
  buffers: ChunkBuffers,
  chunkBytes: number,
  onChunk: (bytesRead: number) => Promise<void>,
): AsyncGenerator<SegmentChunk> {
  const endPosition = segment.sizeBytes;
  let position = 0;
  let want = chunkBytes;
  let ahead: Promise<ReadChunk> | null = null;
  try {
    // Each pass consumes at least one whole batch or grows `want` to the batch's size.
    while (position < endPosition) {
      const length = Math.min(want, endPosition - position);
      const read = ahead ?? readChunk(segment, buffers.take(length), position, length);
      ahead = null;
      const { buffer, bytesRead } = await read;
      if (bytesRead !== length) changed(segment, position, "short read");
      await onChunk(bytesRead);
      const { consumed, nextBatchBytes } = splitChunk(
        buffer.subarray(0, length),
        position,
        segment,
      );
      if (consumed === 0) {
        buffers.give(buffer);
        // Everything left was read and still holds no whole batch: the file is not what it was.
        if (length === endPosition - position) changed(segment, position, "partial batch");
        want = nextBatchBytes;
        continue;
      }
      want = chunkBytes;
      position += consumed;
      if (position < endPosition) {
        const next = Math.min(want, endPosition - position);
        ahead = readChunk(segment, buffers.take(next), position, next);
      }
      yield { buffer, length: consumed };
    }
  } finally {
    // A walk ended early (map full, cleaning abandoned) leaves its read-ahead to finish alone.
    ahead?.then(
      (chunk) => buffers.give(chunk.buffer),
      () => {},
    );
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
