import { assert } from "../util/assert.ts";
import { EncodeError } from "./errors.ts";
import type { FileRange, Records, RecordsChunk } from "./records.ts";

export { EncodeError } from "./errors.ts";

/** The most bytes one writer will hold; Kafka frames carry an int32 size, so 1 GiB is ample. */
export const WRITER_MAX_BYTES = 1 << 30;
/** Byte arrays at least this long are appended as their own chunk instead of being copied. */
export const WRITER_ZERO_COPY_MIN_BYTES = 4096;
const INITIAL_CAPACITY_BYTES = 4096;
const INT16_MAX = 0x7fff;

const utf8 = new TextEncoder();

/** How many bytes `n` takes as an unsigned varint. */
export function unsignedVarintSizeBytes(n: number): number {
  let sizeBytes = 1;
  for (let v = n >>> 0; v >= 0x80; v >>>= 7) sizeBytes++;
  return sizeBytes;
}

/**
 * Writes Kafka primitives into a growable buffer that is kept across `reset()`, so a writer
 * reused per connection stops allocating once it has grown to the largest message it has seen.
 * Large records (FileRanges, and byte arrays of WRITER_ZERO_COPY_MIN_BYTES or more) are not
 * copied: the bytes so far become a chunk, the records become the next chunk, and writing goes
 * on in the buffer. The chunks returned by `finish()` view the writer's buffer, so they are
 * valid until the next `reset()`.
 */
export class Writer {
  private buf: Uint8Array;
  private view: DataView;
  private pos = 0;
  /** Where the bytes not yet handed out as a chunk begin. */
  private segmentStart = 0;
  private chunks: RecordsChunk[] = [];
  /** Bytes already handed out as chunks (buffer segments, file ranges, zero-copy arrays). */
  private chunkedBytes = 0;
  private finished = false;
  private readonly maxBytes: number;

  constructor(initialCapacityBytes = INITIAL_CAPACITY_BYTES, maxBytes = WRITER_MAX_BYTES) {
    assert(initialCapacityBytes > 0, `initialCapacityBytes ${initialCapacityBytes} <= 0`);
    assert(maxBytes >= initialCapacityBytes, `maxBytes ${maxBytes} < initial capacity`);
    this.buf = new Uint8Array(initialCapacityBytes);
    this.view = new DataView(this.buf.buffer);
    this.maxBytes = maxBytes;
  }

  /** Empties the writer, keeping its buffer. Chunks from an earlier `finish()` become invalid. */
  reset(): this {
    this.pos = 0;
    this.segmentStart = 0;
    this.chunks = [];
    this.chunkedBytes = 0;
    this.finished = false;
    return this;
  }

  /**
   * Starts a new message after everything written so far, in the same buffer. Unlike `reset()`,
   * chunks handed out by earlier `finish()` calls stay valid, because their bytes are never
   * written again; so one buffer can carry many small messages, one allocation for all of them.
   * Bytes of a message abandoned without `finish()` are skipped. Use `freeBytes` to decide when a
   * fresh writer is cheaper than growing this one.
   */
  startNext(): this {
    this.segmentStart = this.pos;
    this.chunks = [];
    this.chunkedBytes = 0;
    this.finished = false;
    return this;
  }

  /** Bytes the buffer can still take before it has to grow. */
  get freeBytes(): number {
    return this.buf.length - this.pos;
  }

  /** Total bytes written so far, including records chunks that were not copied. */
  get length(): number {
    return this.chunkedBytes + this.pos - this.segmentStart;
  }

  private ensure(sizeBytes: number): void {
    assert(!this.finished, "write after finish() without reset()");
    const needBytes = this.pos + sizeBytes;
    if (needBytes <= this.buf.length) return;
    if (this.chunkedBytes + needBytes - this.segmentStart > this.maxBytes) {
      throw new EncodeError(`message exceeds ${this.maxBytes} bytes`);
    }
    let capacityBytes = this.buf.length * 2;
    while (capacityBytes < needBytes) capacityBytes *= 2;
    const grown = new Uint8Array(capacityBytes);
    // Earlier chunks keep viewing the old buffer, whose bytes never change again.
    grown.set(this.buf.subarray(this.segmentStart, this.pos), this.segmentStart);
    this.buf = grown;
    this.view = new DataView(grown.buffer);
  }

  int8(v: number): void {
    this.ensure(1);
    this.view.setInt8(this.pos, v);
    this.pos += 1;
  }

  int16(v: number): void {
    this.ensure(2);
    this.view.setInt16(this.pos, v);
    this.pos += 2;
  }

  uint16(v: number): void {
    this.ensure(2);
    this.view.setUint16(this.pos, v);
    this.pos += 2;
  }

  int32(v: number): void {
    this.ensure(4);
    this.view.setInt32(this.pos, v);
    this.pos += 4;
  }

  uint32(v: number): void {
    this.ensure(4);
    this.view.setUint32(this.pos, v);
    this.pos += 4;
  }

  int64(v: bigint): void {
    this.ensure(8);
    this.view.setBigInt64(this.pos, v);
    this.pos += 8;
  }

  float64(v: number): void {
    this.ensure(8);
    this.view.setFloat64(this.pos, v);
    this.pos += 8;
  }

  bool(v: boolean): void {
    this.ensure(1);
    this.buf[this.pos++] = v ? 1 : 0;
  }

  uuid(v: Uint8Array): void {
    if (v.length !== 16) throw new EncodeError(`uuid has ${v.length} bytes, not 16`);
    this.raw(v);
  }

  /** Copies bytes with no length prefix. */
  raw(v: Uint8Array): void {
    this.ensure(v.length);
    this.buf.set(v, this.pos);
    this.pos += v.length;
  }

  unsignedVarint(v: number): void {
    this.ensure(5);
    let n = v >>> 0;
    while (n >= 0x80) {
      this.buf[this.pos++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    this.buf[this.pos++] = n;
  }

  varint(v: number): void {
    this.unsignedVarint((v << 1) ^ (v >> 31));
  }

  unsignedVarlong(v: bigint): void {
    this.ensure(10);
    let n = BigInt.asUintN(64, v);
    while (n >= 0x80n) {
      this.buf[this.pos++] = Number(n & 0x7fn) | 0x80;
      n >>= 7n;
    }
    this.buf[this.pos++] = Number(n);
  }

  varlong(v: bigint): void {
    const n = BigInt.asIntN(64, v);
    this.unsignedVarlong((n << 1n) ^ (n >> 63n));
  }

  /** UTF-8 with an int16 length prefix. */
  string(v: string): void {
    this.ensure(2 + v.length * 3);
    const { written } = utf8.encodeInto(v, this.buf.subarray(this.pos + 2));
    if (written > INT16_MAX) throw new EncodeError(`string of ${written} bytes exceeds int16`);
    this.view.setInt16(this.pos, written);
    this.pos += 2 + written;
  }

  nullableString(v: string | null): void {
    if (v === null) this.int16(-1);
    else this.string(v);
  }

  /** UTF-8 with an unsigned varint length+1 prefix. */
  compactString(v: string): void {
    // Strings of up to 42 UTF-16 units take at most 126 bytes, so length+1 fits in one byte.
    const sizeBytes = v.length <= 42 ? -1 : Buffer.byteLength(v, "utf8");
    if (sizeBytes < 0) {
      this.ensure(1 + v.length * 3);
      const { written } = utf8.encodeInto(v, this.buf.subarray(this.pos + 1));
      this.buf[this.pos] = written + 1;
      this.pos += 1 + written;
      return;
    }
    if (sizeBytes > INT16_MAX) {
      throw new EncodeError(`string of ${sizeBytes} bytes exceeds Kafka's limit of ${INT16_MAX}`);
    }
    this.unsignedVarint(sizeBytes + 1);
    this.ensure(sizeBytes);
    utf8.encodeInto(v, this.buf.subarray(this.pos, this.pos + sizeBytes));
    this.pos += sizeBytes;
  }

  compactNullableString(v: string | null): void {
    if (v === null) this.unsignedVarint(0);
    else this.compactString(v);
  }

  bytes(v: Uint8Array): void {
    this.int32(v.length);
    this.raw(v);
  }

  nullableBytes(v: Uint8Array | null): void {
    if (v === null) this.int32(-1);
    else this.bytes(v);
  }

  compactBytes(v: Uint8Array): void {
    this.unsignedVarint(v.length + 1);
    this.raw(v);
  }

  compactNullableBytes(v: Uint8Array | null): void {
    if (v === null) this.unsignedVarint(0);
    else this.compactBytes(v);
  }

  /** An array's element count: int32 (-1 = null) or, when compact, unsigned varint count+1. */
  arrayLength(count: number, compact: boolean): void {
    if (compact) this.unsignedVarint(count + 1);
    else this.int32(count);
  }

  array<T>(
    compact: boolean,
    version: number,
    items: readonly T[],
    write: (w: Writer, version: number, item: T) => void,
  ): void {
    this.arrayLength(items.length, compact);
    for (const item of items) write(this, version, item);
  }

  nullableArray<T>(
    compact: boolean,
    version: number,
    items: readonly T[] | null,
    write: (w: Writer, version: number, item: T) => void,
  ): void {
    if (items === null) this.arrayLength(-1, compact);
    else this.array(compact, version, items, write);
  }

  /**
   * A records field: its length prefix (nullable bytes, compact in flexible versions), then the
   * records. FileRanges and large byte arrays become chunks of their own instead of copies.
   */
  records(records: Records | null, compact: boolean): void {
    if (records === null) {
      if (compact) this.unsignedVarint(0);
      else this.int32(-1);
      return;
    }
    const list: readonly RecordsChunk[] =
      records instanceof Uint8Array || !Array.isArray(records)
        ? [records as RecordsChunk]
        : (records as readonly RecordsChunk[]);
    let sizeBytes = 0;
    for (const c of list) sizeBytes += c instanceof Uint8Array ? c.length : c.sizeBytes;
    if (compact) this.unsignedVarint(sizeBytes + 1);
    else this.int32(sizeBytes);
    for (const c of list) this.recordsChunk(c);
  }

  private recordsChunk(c: RecordsChunk): void {
    if (c instanceof Uint8Array && c.length < WRITER_ZERO_COPY_MIN_BYTES) {
      this.raw(c);
      return;
    }
    assert(!this.finished, "write after finish() without reset()");
    const sizeBytes = c instanceof Uint8Array ? c.length : (c as FileRange).sizeBytes;
    if (this.length + sizeBytes > this.maxBytes) {
      throw new EncodeError(`message exceeds ${this.maxBytes} bytes`);
    }
    this.cutSegment();
    this.chunks.push(c);
    this.chunkedBytes += sizeBytes;
  }

  /** Hands the bytes written since the last cut out as a chunk. */
  private cutSegment(): void {
    if (this.pos > this.segmentStart) {
      this.chunks.push(this.buf.subarray(this.segmentStart, this.pos));
      this.chunkedBytes += this.pos - this.segmentStart;
    }
    // The rest of the buffer is still free; keep writing after the chunk just handed out.
    this.segmentStart = this.pos;
  }

  /**
   * Starts a tagged field: writes the tag and a one-byte size placeholder, returning the
   * position that `endTaggedField` needs. Tagged fields hold no records, so no chunk is cut.
   */
  beginTaggedField(tag: number): number {
    this.unsignedVarint(tag);
    this.ensure(1);
    return this.pos++;
  }

  endTaggedField(sizeAt: number): void {
    assert(sizeAt >= this.segmentStart, "a tagged field spans a records chunk");
    const sizeBytes = this.pos - sizeAt - 1;
    const prefixBytes = unsignedVarintSizeBytes(sizeBytes);
    if (prefixBytes > 1) {
      // Rare: a tagged field of 128 bytes or more; move it to make room for a longer prefix.
      this.ensure(prefixBytes - 1);
      this.buf.copyWithin(sizeAt + prefixBytes, sizeAt + 1, this.pos);
      this.pos += prefixBytes - 1;
    }
    let n = sizeBytes;
    let at = sizeAt;
    while (n >= 0x80) {
      this.buf[at++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    this.buf[at] = n;
  }

  /** Reserves `sizeBytes` bytes to patch later (e.g. a frame size), returning their position. */
  reserve(sizeBytes: number): number {
    this.ensure(sizeBytes);
    const at = this.pos;
    this.pos += sizeBytes;
    return at;
  }

  /** Overwrites an int32 at a position returned by `reserve` before any chunk was cut. */
  patchInt32(position: number, v: number): void {
    assert(position >= this.segmentStart, `position ${position} was already handed out`);
    assert(position + 4 <= this.pos, `position ${position} was not reserved`);
    this.view.setInt32(position, v);
  }

  /** The encoded message as chunks in order, valid until the next `reset()`. */
  finish(): RecordsChunk[] {
    assert(!this.finished, "finish() called twice without reset()");
    this.cutSegment();
    this.finished = true;
    return this.chunks;
  }

  /** A fresh copy of the whole message, for callers that know it holds no FileRange. */
  toBytes(): Uint8Array {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const c of this.finished ? this.chunks : [...this.chunks, this.currentSegment()]) {
      if (!(c instanceof Uint8Array)) {
        throw new EncodeError("toBytes() on a message with a FileRange");
      }
      out.set(c, at);
      at += c.length;
    }
    return out;
  }

  private currentSegment(): Uint8Array {
    return this.buf.subarray(this.segmentStart, this.pos);
  }
}
