/**
 * The queue of response bytes for one connection and the code that pushes them into the socket.
 *
 * Bun's `socket.write` is unbuffered: it returns how many bytes the kernel took and silently
 * drops the rest (docs/bun.md, Sockets), and `drain` fires after any short write. So nothing
 * leaves this queue until the kernel has accepted it: each write advances the queue by exactly
 * the count it returned, and a short write stops the flush until `drain`.
 *
 * Small buffers are gathered into one shared scratch buffer per write, so every response made
 * ready by one `data` event goes out in as few `write` calls as possible (there is no corking:
 * each write is one send()). The scratch buffer is only used inside a synchronous flush and the
 * queue keeps the original views until they are written, so a short write needs no copy.
 *
 * Small file ranges are gathered too, read with pread straight into the scratch buffer behind the
 * response header: a long-poll fetch woken by one small append then costs one send instead of a
 * write for the header and a sendfile for the records, and the client gets one segment instead
 * of two. On loopback each send is the expensive part (the kernel runs the receiver's TCP stack
 * in it); a pread of a few KB from the page cache is cheap by comparison. With 1 KiB records at
 * 2,000/s this cut the broker's CPU per record by about a fifth.
 *
 * File ranges are sent with sendfile(2) on the socket's fd. When sendfile meets a full socket
 * (EAGAIN), Bun does not know the socket is full and would never fire `drain`; the only thing
 * that arms it is a `write` of at least one real byte that comes back short. So the next few
 * bytes of the range are read with pread into the scratch buffer and passed to `socket.write`;
 * whatever it takes is counted as sent and the rest is read again next time. pread was chosen
 * over an mmap view because a truncated mmap makes `write` return 0 (looking exactly like
 * backpressure, a drain busy loop) or SIGBUS; a heap buffer cannot. The fallback without sendfile
 * sends whole ranges the same way, a scratch buffer at a time.
 *
 * Send times (Kafka's ResponseSendTimeMs): a response queued with a tag is timed from `enqueue`
 * until the kernel has taken its last byte. The writer counts the bytes queued and written
 * since the connection opened, so a queued response is remembered as the byte count at which
 * it ends: one clock read when it is queued and one per flush that completes any, never per
 * chunk or per write.
 */
import { readSync } from "node:fs";
import type { FileRange, RecordsChunk } from "../protocol/records.ts";
import { AssertionError, assert } from "../util/assert.ts";
import { EAGAIN, ECONNRESET, EINTR, EPIPE, sendfile } from "./sendfile.ts";

/** The socket operations the writer needs: Bun's socket plus its raw fd. */
export interface OutputSocket {
  write(data: Uint8Array, byteOffset?: number, byteLength?: number): number;
  readonly fd: number;
}

/** The socket failed or a file range could not be read; the connection must be closed. */
export class ConnectionIoError extends Error {
  override readonly name = "ConnectionIoError";

  /** `peerGone`: the client closed or reset the connection, which is routine, not news. */
  constructor(
    message: string,
    readonly peerGone = false,
  ) {
    super(message);
  }
}

export type FlushOutcome = "drained" | "blocked";

/**
 * Buffers at least this large are written directly instead of being copied for gathering, and
 * file ranges at least this large go out with sendfile instead of being read into the gather.
 */
const GATHER_PIECE_MAX_BYTES = 32 * 1024;
/** Bytes read to arm `drain` after sendfile meets a full socket. */
const ARM_BYTES = 16 * 1024;
/** Written entries are dropped from the front of the queue once there are this many. */
const COMPACT_MIN_ITEMS = 1024;
/** Shared by every connection: used only within one synchronous flush. */
const scratch = new Uint8Array(1024 * 1024);

const SIZE_PREFIX_BYTES = 4;

function writeInt32(target: Uint8Array, offset: number, value: number): void {
  target[offset] = value >>> 24;
  target[offset + 1] = value >>> 16;
  target[offset + 2] = value >>> 8;
  target[offset + 3] = value;
}

/** A file range being sent, with its progress; releases the range exactly once. */
class PendingFileRange {
  position: number;
  remainingBytes: number;
  private released = false;

  constructor(readonly range: FileRange) {
    if (!Number.isSafeInteger(range.position)) {
      assert(false, `bad file range position ${range.position}`);
    }
    if (!(range.position >= 0)) assert(false, `negative file range position ${range.position}`);
    this.position = range.position;
    this.remainingBytes = range.sizeBytes;
  }

  advance(countBytes: number): void {
    if (!(countBytes <= this.remainingBytes)) {
      assert(false, `sent ${countBytes} of ${this.remainingBytes}`);
    }
    this.position += countBytes;
    this.remainingBytes -= countBytes;
  }

  release(): void {
    assert(!this.released, "file range released twice");
    this.released = true;
    this.range.release();
  }
}

/**
 * A queued piece of output. A number is a response's size prefix not yet written: it is encoded
 * straight into the scratch buffer, which saves creating a 4-byte view per response.
 */
type OutgoingItem = Uint8Array | PendingFileRange | number;

/** Told when a tagged response has been written whole; `sendSeconds` as above. */
export interface ResponseSentListener {
  responseSent(tag: number, sendSeconds: number): void;
}

export class ResponseWriter {
  private items: OutgoingItem[] = [];
  private head = 0;
  /** Bytes queued and not yet accepted by the kernel, file ranges included. */
  queuedBytes = 0;
  /** Bytes queued since the connection opened (below 2^53: 9 PB per connection). */
  private totalQueuedBytes = 0;
  /** Tagged responses not yet written whole, in queue order: end byte, queued at, tag. */
  private timed: number[] = [];
  private timedHead = 0;

  constructor(
    private readonly socket: OutputSocket,
    private readonly sendfileEnabled: boolean,
    private readonly onSent: ResponseSentListener | null = null,
  ) {}

  get isEmpty(): boolean {
    return this.head === this.items.length;
  }

  /**
   * Queues one response: its 4-byte size prefix, then its chunks in order. With a `tag` (and a
   * listener) its send time is reported once it is written whole.
   */
  enqueue(chunks: readonly RecordsChunk[], tag?: number): void {
    let sizeBytes = 0;
    for (const chunk of chunks) {
      sizeBytes += chunk instanceof Uint8Array ? chunk.length : chunk.sizeBytes;
    }
    if (sizeBytes > 0x7fffffff) {
      throw new AssertionError(`response of ${sizeBytes} bytes does not fit a size prefix`);
    }
    this.compact();
    this.items.push(sizeBytes);
    for (const chunk of chunks) {
      if (chunk instanceof Uint8Array) {
        if (chunk.length > 0) this.items.push(chunk);
      } else if (chunk.sizeBytes > 0) {
        this.items.push(new PendingFileRange(chunk));
      } else {
        chunk.release();
      }
    }
    this.queuedBytes += SIZE_PREFIX_BYTES + sizeBytes;
    this.totalQueuedBytes += SIZE_PREFIX_BYTES + sizeBytes;
    if (tag !== undefined && this.onSent !== null) {
      this.timed.push(this.totalQueuedBytes, performance.now(), tag);
    }
  }

  /** Writes until the queue is empty or the socket is full; throws ConnectionIoError. */
  flush(): FlushOutcome {
    const outcome = this.writeQueue();
    if (this.timedHead < this.timed.length) this.reportSent();
    return outcome;
  }

  /** Reports the timed responses whose last byte the kernel has taken. */
  private reportSent(): void {
    const writtenBytes = this.totalQueuedBytes - this.queuedBytes;
    const timed = this.timed;
    if (timed[this.timedHead]! > writtenBytes) return;
    const nowMs = performance.now();
    while (this.timedHead < timed.length && timed[this.timedHead]! <= writtenBytes) {
      const queuedAtMs = timed[this.timedHead + 1]!;
      this.onSent!.responseSent(timed[this.timedHead + 2]!, (nowMs - queuedAtMs) / 1000);
      this.timedHead += 3;
    }
    if (this.timedHead === timed.length) {
      this.timed = [];
      this.timedHead = 0;
    } else if (this.timedHead >= COMPACT_MIN_ITEMS * 3) {
      this.timed = timed.slice(this.timedHead);
      this.timedHead = 0;
    }
  }

  private writeQueue(): FlushOutcome {
    while (this.head < this.items.length) {
      const item = this.items[this.head]!;
      if (!(item instanceof PendingFileRange) || isGatherableRange(item)) {
        if (!this.writeBuffers()) return "blocked";
        continue;
      }
      const sent = this.sendfileEnabled ? this.sendRange(item) : this.copyRange(item, Infinity);
      if (!sent) return "blocked";
      item.release();
      this.items[this.head++] = EMPTY;
    }
    this.items.length = 0;
    this.head = 0;
    if (this.queuedBytes !== 0) {
      throw new AssertionError(`queue empty but ${this.queuedBytes} bytes counted`);
    }
    return "drained";
  }

  /** Releases every file range still queued; called once when the connection dies. */
  releaseAll(): void {
    for (let i = this.head; i < this.items.length; i++) {
      const item = this.items[i]!;
      if (item instanceof PendingFileRange) item.release();
    }
    this.items = [];
    this.head = 0;
    this.queuedBytes = 0;
    // Responses never written whole are not timed (as Kafka times only completed sends).
    this.timed = [];
    this.timedHead = 0;
  }

  /** Drops written entries when they are the larger part of a queue that never empties. */
  private compact(): void {
    if (this.head < COMPACT_MIN_ITEMS || this.head * 2 < this.items.length) return;
    this.items.splice(0, this.head);
    this.head = 0;
  }

  /** Writes the buffers at the head; false if the socket took less than offered. */
  private writeBuffers(): boolean {
    const first = this.items[this.head]!;
    // A large buffer goes out as it is; small ones and prefixes are gathered into one write.
    const data = first instanceof Uint8Array && !isGatherable(first) ? first : scratch;
    const lengthBytes = data === scratch ? this.gather() : data.length;
    assert(lengthBytes > 0, "nothing gathered for a write");
    const writtenBytes = this.socket.write(data, 0, lengthBytes);
    if (writtenBytes < 0) throw new ConnectionIoError("socket closed while writing", true);
    this.advanceBuffers(writtenBytes);
    return writtenBytes === lengthBytes;
  }

  /** Copies the small items at the head into the scratch buffer without consuming them. */
  private gather(): number {
    let filledBytes = 0;
    for (let i = this.head; i < this.items.length; i++) {
      const item = this.items[i]!;
      if (typeof item === "number") {
        if (filledBytes + SIZE_PREFIX_BYTES > scratch.length) break;
        writeInt32(scratch, filledBytes, item);
        filledBytes += SIZE_PREFIX_BYTES;
        continue;
      }
      if (item instanceof PendingFileRange) {
        if (!isGatherableRange(item) || filledBytes + item.remainingBytes > scratch.length) break;
        readWholeRange(item, filledBytes);
        filledBytes += item.remainingBytes;
        continue;
      }
      if (!isGatherable(item) || filledBytes + item.length > scratch.length) break;
      scratch.set(item, filledBytes);
      filledBytes += item.length;
    }
    return filledBytes;
  }

  /** Drops `countBytes` written bytes from the head, keeping a view of a partial buffer. */
  private advanceBuffers(countBytes: number): void {
    this.queuedBytes -= countBytes;
    let leftBytes = countBytes;
    while (leftBytes > 0) {
      let item = this.items[this.head]!;
      if (typeof item === "number") {
        if (leftBytes >= SIZE_PREFIX_BYTES) {
          leftBytes -= SIZE_PREFIX_BYTES;
          this.items[this.head++] = EMPTY;
          continue;
        }
        // A short write split this prefix: keep its unwritten bytes as a buffer.
        const prefix = new Uint8Array(SIZE_PREFIX_BYTES);
        writeInt32(prefix, 0, item);
        item = prefix;
      }
      if (item instanceof PendingFileRange) {
        // A gathered range: what was written is sent; a cut range stays, to be read again.
        assert(isGatherableRange(item), "advanced buffers into a range sent with sendfile");
        const sentBytes = Math.min(leftBytes, item.remainingBytes);
        item.advance(sentBytes);
        leftBytes -= sentBytes;
        if (item.remainingBytes > 0) return;
        item.release();
        this.items[this.head++] = EMPTY;
        continue;
      }
      if (item.length > leftBytes) {
        this.items[this.head] = item.subarray(leftBytes);
        return;
      }
      leftBytes -= item.length;
      this.items[this.head++] = EMPTY;
    }
  }

  /** Sends a range with sendfile; false if the socket filled up (drain is then armed). */
  private sendRange(item: PendingFileRange): boolean {
    while (item.remainingBytes > 0) {
      const result = sendfile(this.socket.fd, item.range.fd, item.position, item.remainingBytes);
      if (result > 0) {
        item.advance(result);
        this.queuedBytes -= result;
      } else if (result === 0) {
        throw pastEndOfFile(item);
      } else if (result === -EAGAIN) {
        // Write real bytes so that Bun sees the full socket and fires drain.
        if (!this.copyRange(item, ARM_BYTES)) return false;
      } else if (result !== -EINTR) {
        const peerGone = result === -ECONNRESET || result === -EPIPE;
        throw new ConnectionIoError(`sendfile failed with errno ${-result}`, peerGone);
      }
    }
    return true;
  }

  /**
   * Sends up to `limitBytes` of a range (Infinity: all of it) through pread into the scratch
   * buffer and write; false if the socket took less than offered.
   */
  private copyRange(item: PendingFileRange, limitBytes: number): boolean {
    let leftBytes = limitBytes;
    while (item.remainingBytes > 0 && leftBytes > 0) {
      const wantBytes = Math.min(item.remainingBytes, leftBytes, scratch.length);
      const readBytes = readRange(item, wantBytes);
      const writtenBytes = this.socket.write(scratch, 0, readBytes);
      if (writtenBytes < 0) throw new ConnectionIoError("socket closed while writing", true);
      item.advance(writtenBytes);
      this.queuedBytes -= writtenBytes;
      if (writtenBytes < readBytes) return false;
      leftBytes -= writtenBytes;
    }
    return true;
  }
}

const EMPTY = new Uint8Array(0);

/** Reads the next bytes of a range into the scratch buffer; an I/O error ends the connection. */
function readRange(item: PendingFileRange, wantBytes: number): number {
  let readBytes: number;
  try {
    readBytes = readSync(item.range.fd, scratch, 0, wantBytes, item.position);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new ConnectionIoError(`reading fd ${item.range.fd} at ${item.position}: ${message}`);
  }
  if (readBytes === 0) throw pastEndOfFile(item);
  return readBytes;
}

/** Reads all that is left of a gathered range into the scratch buffer at `offset`. */
function readWholeRange(item: PendingFileRange, offset: number): void {
  let doneBytes = 0;
  while (doneBytes < item.remainingBytes) {
    let readBytes: number;
    try {
      readBytes = readSync(
        item.range.fd,
        scratch,
        offset + doneBytes,
        item.remainingBytes - doneBytes,
        item.position + doneBytes,
      );
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new ConnectionIoError(`reading fd ${item.range.fd} at ${item.position}: ${message}`);
    }
    if (readBytes === 0) throw pastEndOfFile(item);
    doneBytes += readBytes;
  }
}

/** Small enough to copy into the scratch buffer rather than write on its own. */
function isGatherable(item: OutgoingItem): item is Uint8Array {
  return item instanceof Uint8Array && item.length < GATHER_PIECE_MAX_BYTES;
}

/** Small enough to read into the scratch buffer rather than sendfile on its own. */
function isGatherableRange(item: PendingFileRange): boolean {
  return item.remainingBytes < GATHER_PIECE_MAX_BYTES;
}

/**
 * A range reaching past the end of its file (e.g. a segment truncated after the read): sendfile
 * or pread return 0, which must end the connection rather than be retried as backpressure.
 */
function pastEndOfFile(item: PendingFileRange): ConnectionIoError {
  const where = `fd ${item.range.fd} at ${item.position}`;
  return new ConnectionIoError(`file range ends past the end of ${where}`);
}
