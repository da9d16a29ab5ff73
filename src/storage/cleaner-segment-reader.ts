/**
 * Reads a sealed segment for the cleaner's Worker in chunks of whole batches. The Worker is the
 * cleaner's own thread, so it reads as Kafka's cleaner thread does: a blocking positional read
 * (pread, `fs.readSync`) into one reused buffer, on the fd the event loop lent it (the event
 * loop holds a reference on it until the Worker's reply, so it stays open and is not reused).
 * Reading here instead of on the event loop's thread pool keeps the copies out of the page cache
 * (about 0.4 s of system CPU per GB over both passes) on the Worker's low-priority thread.
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
import type { SegmentSource } from "./cleaner-worker-messages.ts";

/**
 * One reused read buffer (a fresh 512 KiB buffer per chunk once caused GC pauses), grown when a
 * single batch is larger than a chunk.
 */
export class SegmentChunkReader {
  private buffer: Uint8Array;

  constructor(private readonly chunkBytes: number) {
    this.buffer = new Uint8Array(chunkBytes);
  }

  /**
   * Yields the segment's whole batches in chunks of at least `chunkBytes` (more when one batch
   * is larger); a chunk is valid until the next is asked for. `onChunk` is awaited after each
   * read (the throttle). Ends at `source.sizeBytes`, the size when the event loop sent it.
   */
  async *chunks(
    source: SegmentSource,
    onChunk: (bytesRead: number) => Promise<void>,
  ): AsyncGenerator<Uint8Array> {
    const endPosition = source.sizeBytes;
    let position = 0;
    let want = this.chunkBytes;
    // Each pass consumes at least one whole batch or grows `want` to the batch's size.
    while (position < endPosition) {
      const length = Math.min(want, endPosition - position);
      if (this.buffer.length < length) this.buffer = new Uint8Array(length);
      const chunk = this.buffer.subarray(0, length);
      readFully(source, chunk, position);
      await onChunk(length);
      const { consumed, nextBatchBytes } = splitChunk(chunk, position, source);
      if (consumed === 0) {
        // Everything left was read and still holds no whole batch: the file is not what it was.
        if (length === endPosition - position) changed(source, position, "partial batch");
        want = nextBatchBytes;
        continue;
      }
      want = this.chunkBytes;
      position += consumed;
      yield chunk.subarray(0, consumed);
    }
  }
}

function readFully(source: SegmentSource, chunk: Uint8Array, position: number): void {
  let done = 0;
  while (done < chunk.length) {
    const bytesRead = fs.readSync(source.fd, chunk, done, chunk.length - done, position + done);
    if (bytesRead === 0) changed(source, position + done, "short read");
    done += bytesRead;
  }
}

/** How many bytes at the chunk's start are whole batches; the size of the next if none. */
function splitChunk(
  chunk: Uint8Array,
  chunkPosition: number,
  source: SegmentSource,
): { consumed: number; nextBatchBytes: number } {
  const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  let at = 0;
  while (chunk.length - at >= LOG_OVERHEAD) {
    const sizeBytes = LOG_OVERHEAD + view.getInt32(at + 8);
    if (sizeBytes < RECORD_BATCH_OVERHEAD) changed(source, chunkPosition + at, "bad length");
    if (at + sizeBytes > chunk.length) return { consumed: at, nextBatchBytes: sizeBytes };
    at += sizeBytes;
  }
  return { consumed: at, nextBatchBytes: RECORD_BATCH_OVERHEAD };
}

function changed(source: SegmentSource, position: number, what: string): never {
  throw new KafkaError(
    ErrorCode.KAFKA_STORAGE_ERROR,
    `${source.filePath} changed on disk (${what} at ${position}); cleaning stopped`,
  );
}
