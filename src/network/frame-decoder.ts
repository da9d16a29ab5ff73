/**
 * Splits a TCP byte stream into Kafka request frames: a 4-byte big-endian signed size, then that
 * many bytes. Copying is kept to the minimum: a frame wholly inside one received buffer is
 * returned as a view of it (Bun hands every `data` event a fresh buffer, so views stay valid);
 * only a frame split across buffers is assembled, into one buffer allocated at its exact size
 * after the size has been checked against the limit.
 *
 * Frames are pulled one at a time with `next()`, so the connection can stop taking frames when it
 * reaches its in-flight limit and leave the rest of the received bytes here until it resumes.
 *
 * A frame that must be assembled gets its buffer only once its `FrameAllocator` grants the memory
 * (the broker's `queued.max.request.bytes` pool); until then `next()` returns null and the size
 * is kept, so the connection can pause and try again when memory is given back.
 *
 * This class is not thread-safe and allocates nothing per frame on the fast path.
 */
import { AssertionError, assert } from "../util/assert.ts";

/** The smallest request header: api_key int16, api_version int16, correlation_id int32. */
export const REQUEST_HEADER_MIN_BYTES = 8;

/** Why a stream was rejected; the connection must be closed and nothing more read from it. */
export interface FrameError {
  readonly sizeBytes: number;
  readonly reason: string;
}

const SIZE_PREFIX_BYTES = 4;

/** Grants memory for frames assembled from several reads. */
export interface FrameAllocator {
  /** Memory for a frame of `frameBytes` is granted (true) or not yet (false: call next() later). */
  tryReserve(frameBytes: number): boolean;
  /** The frame reserved last is complete and about to be returned. */
  onAssembled(frameBytes: number): void;
}

const UNLIMITED: FrameAllocator = { tryReserve: () => true, onAssembled: () => {} };

export class FrameDecoder {
  /** Received buffers not yet fully consumed, oldest first; `inputs[0]` starts at `inputOffset`. */
  private readonly inputs: Uint8Array[] = [];
  private inputOffset = 0;
  /** Bytes of a size prefix that arrived split across buffers (made at the first such split). */
  private prefix: Uint8Array | null = null;
  private prefixFilledBytes = 0;
  /** A frame being assembled from several buffers, and how much of it has arrived. */
  private partial: Uint8Array | null = null;
  private partialFilledBytes = 0;
  /** The size of a frame whose memory was refused; its prefix is consumed. -1: none. */
  private awaitingFrameBytes = -1;
  /** Bytes in `inputs` not yet consumed. */
  private inputBytes = 0;

  constructor(
    private readonly frameMaxBytes: number,
    private readonly frameMinBytes: number = REQUEST_HEADER_MIN_BYTES,
    private readonly allocator: FrameAllocator = UNLIMITED,
  ) {
    assert(frameMinBytes >= 0, `frameMinBytes must not be negative: ${frameMinBytes}`);
    assert(frameMaxBytes >= frameMinBytes, `frameMaxBytes ${frameMaxBytes} < ${frameMinBytes}`);
  }

  /** Queues received bytes; the decoder keeps a reference, never a copy. */
  push(data: Uint8Array): void {
    if (data.length === 0) return;
    this.inputs.push(data);
    this.inputBytes += data.length;
  }

  /**
   * True if received bytes are waiting to be decoded (not counting a frame under assembly), or a
   * frame waits for memory.
   */
  get hasBufferedInput(): boolean {
    return this.inputs.length > 0 || this.awaitingFrameBytes >= 0;
  }

  /** Received bytes not yet consumed into a frame, including a split size prefix. */
  get bufferedBytes(): number {
    return this.inputBytes + this.prefixFilledBytes;
  }

  /** Bytes still to come for the frame under assembly (0 when none is). */
  get partialRemainingBytes(): number {
    return this.partial === null ? 0 : this.partial.length - this.partialFilledBytes;
  }

  /** The memory held for a frame under assembly (its whole size), 0 when none is. */
  get partialBytes(): number {
    return this.partial === null ? 0 : this.partial.length;
  }

  /** The next whole frame, `null` if more bytes are needed, or why the stream is invalid. */
  next(): Uint8Array | FrameError | null {
    if (this.partial !== null) return this.continuePartial();
    const sizeBytes =
      this.awaitingFrameBytes >= 0 ? this.awaitingFrameBytes : this.readSizePrefix();
    if (sizeBytes === null) return null;
    this.awaitingFrameBytes = -1;
    if (sizeBytes < this.frameMinBytes || sizeBytes > this.frameMaxBytes) {
      const reason =
        sizeBytes < this.frameMinBytes
          ? `below the request header minimum ${this.frameMinBytes}`
          : `above socket.request.max.bytes ${this.frameMaxBytes}`;
      return { sizeBytes, reason };
    }
    const input = this.inputs[0];
    if (input !== undefined && input.length - this.inputOffset >= sizeBytes) {
      const frame = input.subarray(this.inputOffset, this.inputOffset + sizeBytes);
      this.consume(sizeBytes);
      return frame;
    }
    if (!this.allocator.tryReserve(sizeBytes)) {
      this.awaitingFrameBytes = sizeBytes;
      return null;
    }
    this.partial = new Uint8Array(sizeBytes);
    this.partialFilledBytes = 0;
    return this.continuePartial();
  }

  /** Reads the 4-byte size, possibly split across buffers; null if it has not all arrived. */
  private readSizePrefix(): number | null {
    const input = this.inputs[0];
    if (input === undefined) return null;
    if (this.prefixFilledBytes === 0 && input.length - this.inputOffset >= SIZE_PREFIX_BYTES) {
      const sizeBytes = readInt32(input, this.inputOffset);
      this.consume(SIZE_PREFIX_BYTES);
      return sizeBytes;
    }
    this.prefix ??= new Uint8Array(SIZE_PREFIX_BYTES);
    while (this.prefixFilledBytes < SIZE_PREFIX_BYTES) {
      const head = this.inputs[0];
      if (head === undefined) return null;
      this.prefix[this.prefixFilledBytes++] = head[this.inputOffset]!;
      this.consume(1);
    }
    this.prefixFilledBytes = 0;
    return readInt32(this.prefix, 0);
  }

  private continuePartial(): Uint8Array | null {
    const partial = this.partial;
    assert(partial !== null, "continuePartial without a frame under assembly");
    while (this.partialFilledBytes < partial.length) {
      const head = this.inputs[0];
      if (head === undefined) return null;
      const available = head.length - this.inputOffset;
      const takeBytes = Math.min(available, partial.length - this.partialFilledBytes);
      const piece = head.subarray(this.inputOffset, this.inputOffset + takeBytes);
      partial.set(piece, this.partialFilledBytes);
      this.partialFilledBytes += takeBytes;
      this.consume(takeBytes);
    }
    this.partial = null;
    this.partialFilledBytes = 0;
    this.allocator.onAssembled(partial.length);
    return partial;
  }

  /** Advances past `countBytes` bytes of the head buffer, which must hold that many. */
  private consume(countBytes: number): void {
    const head = this.inputs[0]!;
    this.inputOffset += countBytes;
    this.inputBytes -= countBytes;
    // Hot path: build the message only on failure.
    if (this.inputOffset > head.length) {
      throw new AssertionError(`consumed to ${this.inputOffset} past a ${head.length}-byte buffer`);
    }
    if (this.inputOffset === head.length) {
      this.inputs.shift();
      this.inputOffset = 0;
    }
  }
}

/** A big-endian signed 32-bit integer, as Kafka encodes a frame size. */
function readInt32(bytes: Uint8Array, offset: number): number {
  return (
    (bytes[offset]! << 24) |
    (bytes[offset + 1]! << 16) |
    (bytes[offset + 2]! << 8) |
    bytes[offset + 3]!
  );
}
