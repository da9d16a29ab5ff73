import { DecodeError } from "./errors.ts";

export { DecodeError } from "./errors.ts";

const utf8 = new TextDecoder("utf-8");

/**
 * Reads Kafka primitives from a byte range by offset. Every bounds or format problem throws
 * `DecodeError`; nothing here allocates more than the bytes it returns, and `bytes`/`records`
 * come back as subarray views of the input, not copies. The caller keeps the input alive and
 * unmodified for as long as it uses those views.
 */
export class Reader {
  offset: number;
  readonly end: number;
  readonly buf: Uint8Array;
  private readonly view: DataView;

  constructor(buf: Uint8Array, offset = 0, end = buf.length) {
    if (offset < 0 || end > buf.length || offset > end) {
      throw new DecodeError(`bad reader range ${offset}..${end} of ${buf.length} bytes`, offset);
    }
    this.buf = buf;
    this.offset = offset;
    this.end = end;
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  remaining(): number {
    return this.end - this.offset;
  }

  /** Advances past `sizeBytes` bytes, returning the offset where they start. */
  private take(sizeBytes: number): number {
    const at = this.offset;
    if (sizeBytes > this.end - at) {
      throw new DecodeError(`need ${sizeBytes} bytes but only ${this.end - at} remain`, at);
    }
    this.offset = at + sizeBytes;
    return at;
  }

  skip(sizeBytes: number): void {
    if (sizeBytes < 0) throw new DecodeError(`negative skip ${sizeBytes}`, this.offset);
    this.take(sizeBytes);
  }

  int8(): number {
    return this.view.getInt8(this.take(1));
  }

  int16(): number {
    return this.view.getInt16(this.take(2));
  }

  uint16(): number {
    return this.view.getUint16(this.take(2));
  }

  int32(): number {
    return this.view.getInt32(this.take(4));
  }

  uint32(): number {
    return this.view.getUint32(this.take(4));
  }

  int64(): bigint {
    return this.view.getBigInt64(this.take(8));
  }

  float64(): number {
    return this.view.getFloat64(this.take(8));
  }

  /** Kafka treats any non-zero byte as true. */
  bool(): boolean {
    return this.buf[this.take(1)] !== 0;
  }

  /** A 16-byte view of the UUID, not a copy. */
  uuid(): Uint8Array {
    const at = this.take(16);
    return this.buf.subarray(at, at + 16);
  }

  /** Unsigned LEB128 of at most 5 bytes, as Kafka's `ByteUtils.readUnsignedVarint`. */
  unsignedVarint(): number {
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (this.offset >= this.end) throw new DecodeError("truncated varint", this.offset);
      const b = this.buf[this.offset++]!;
      value |= (b & 0x7f) << shift;
      if ((b & 0x80) === 0) return value >>> 0;
    }
    throw new DecodeError("varint longer than 5 bytes", this.offset);
  }

  /** Zigzag-encoded signed 32-bit varint. */
  varint(): number {
    const raw = this.unsignedVarint();
    return (raw >>> 1) ^ -(raw & 1);
  }

  /** Unsigned LEB128 of at most 10 bytes, as a 64-bit bigint. */
  unsignedVarlong(): bigint {
    let low = 0;
    let shift = 0;
    // The first four bytes fit in a 28-bit number; only longer varlongs pay for bigint maths.
    for (; shift < 28; shift += 7) {
      if (this.offset >= this.end) throw new DecodeError("truncated varlong", this.offset);
      const b = this.buf[this.offset++]!;
      low |= (b & 0x7f) << shift;
      if ((b & 0x80) === 0) return BigInt(low);
    }
    let value = BigInt(low);
    for (; shift < 70; shift += 7) {
      if (this.offset >= this.end) throw new DecodeError("truncated varlong", this.offset);
      const b = this.buf[this.offset++]!;
      value |= BigInt(b & 0x7f) << BigInt(shift);
      if ((b & 0x80) === 0) return BigInt.asUintN(64, value);
    }
    throw new DecodeError("varlong longer than 10 bytes", this.offset);
  }

  /** Zigzag-encoded signed 64-bit varint. */
  varlong(): bigint {
    const raw = this.unsignedVarlong();
    return (raw >> 1n) ^ -(raw & 1n);
  }

  private utf8At(sizeBytes: number): string {
    const at = this.take(sizeBytes);
    return utf8.decode(this.buf.subarray(at, at + sizeBytes));
  }

  /** int16 length, then UTF-8. A null string is a DecodeError here. */
  string(): string {
    const at = this.offset;
    const sizeBytes = this.int16();
    if (sizeBytes < 0) throw new DecodeError(`non-nullable string has length ${sizeBytes}`, at);
    return this.utf8At(sizeBytes);
  }

  nullableString(): string | null {
    const at = this.offset;
    const sizeBytes = this.int16();
    if (sizeBytes === -1) return null;
    if (sizeBytes < 0) throw new DecodeError(`string has negative length ${sizeBytes}`, at);
    return this.utf8At(sizeBytes);
  }

  /** Unsigned varint length+1, then UTF-8; at most 32767 bytes, as Kafka requires. */
  compactString(): string {
    const at = this.offset;
    const lengthPlusOne = this.unsignedVarint();
    if (lengthPlusOne === 0) throw new DecodeError("non-nullable compact string is null", at);
    return this.compactUtf8(lengthPlusOne - 1, at);
  }

  compactNullableString(): string | null {
    const at = this.offset;
    const lengthPlusOne = this.unsignedVarint();
    return lengthPlusOne === 0 ? null : this.compactUtf8(lengthPlusOne - 1, at);
  }

  private compactUtf8(sizeBytes: number, at: number): string {
    if (sizeBytes > 0x7fff) throw new DecodeError(`string of ${sizeBytes} bytes is too long`, at);
    return this.utf8At(sizeBytes);
  }

  private subview(sizeBytes: number): Uint8Array {
    const at = this.take(sizeBytes);
    return this.buf.subarray(at, at + sizeBytes);
  }

  /** int32 length, then a view of the bytes. */
  bytes(): Uint8Array {
    const at = this.offset;
    const sizeBytes = this.int32();
    if (sizeBytes < 0) throw new DecodeError(`non-nullable bytes have length ${sizeBytes}`, at);
    return this.subview(sizeBytes);
  }

  nullableBytes(): Uint8Array | null {
    const at = this.offset;
    const sizeBytes = this.int32();
    if (sizeBytes === -1) return null;
    if (sizeBytes < 0) throw new DecodeError(`bytes have negative length ${sizeBytes}`, at);
    return this.subview(sizeBytes);
  }

  compactBytes(): Uint8Array {
    const at = this.offset;
    const lengthPlusOne = this.unsignedVarint();
    if (lengthPlusOne === 0) throw new DecodeError("non-nullable compact bytes are null", at);
    return this.subview(lengthPlusOne - 1);
  }

  compactNullableBytes(): Uint8Array | null {
    const lengthPlusOne = this.unsignedVarint();
    return lengthPlusOne === 0 ? null : this.subview(lengthPlusOne - 1);
  }

  /** A records field: nullable bytes (compact in flexible versions), as a view. */
  records(compact: boolean): Uint8Array | null {
    return compact ? this.compactNullableBytes() : this.nullableBytes();
  }

  /**
   * An array's element count: int32 (-1 = null) or, when compact, unsigned varint count+1
   * (0 = null). Each element takes at least one byte, so a count above the bytes remaining is
   * rejected here, before anyone allocates an array of that size.
   */
  arrayLength(compact: boolean): number {
    const at = this.offset;
    let count: number;
    if (compact) {
      count = this.unsignedVarint() - 1;
    } else {
      count = this.int32();
      if (count < -1) throw new DecodeError(`array has negative length ${count}`, at);
    }
    if (count > this.end - this.offset) {
      throw new DecodeError(`array of ${count} elements in ${this.end - this.offset} bytes`, at);
    }
    return count;
  }

  /** A non-nullable array whose elements `read` decodes. */
  array<T>(compact: boolean, version: number, read: (r: Reader, version: number) => T): T[] {
    const at = this.offset;
    const count = this.arrayLength(compact);
    if (count < 0) throw new DecodeError("non-nullable array is null", at);
    const items: T[] = [];
    for (let i = 0; i < count; i++) items.push(read(this, version));
    return items;
  }

  nullableArray<T>(
    compact: boolean,
    version: number,
    read: (r: Reader, version: number) => T,
  ): T[] | null {
    const count = this.arrayLength(compact);
    if (count < 0) return null;
    const items: T[] = [];
    for (let i = 0; i < count; i++) items.push(read(this, version));
    return items;
  }

  /** Skips a whole tagged-fields section; for structs whose tags are all unknown. */
  skipTaggedFields(): void {
    const count = this.unsignedVarint();
    for (let i = 0; i < count; i++) {
      this.unsignedVarint();
      this.skip(this.unsignedVarint());
    }
  }

  /** Requires that a nested value of `sizeBytes` ended exactly where it said it would. */
  expectOffset(expected: number, what: string): void {
    if (this.offset !== expected) {
      throw new DecodeError(`${what} ended at ${this.offset}, expected ${expected}`, this.offset);
    }
  }
}
