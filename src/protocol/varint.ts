/**
 * Zigzag varints as the magic v2 record format uses them (Protocol Buffers encoding): a record's
 * length, timestamp delta, offset delta, key and value lengths and header counts.
 *
 * The reader throws CorruptRecordError, because record bodies come from clients and disk; the
 * protocol Reader (reader.ts) has its own varints that throw DecodeError for request framing.
 */
import { CorruptRecordError } from "./record-errors.ts";

/** A zigzag int32 takes at most 5 bytes; a zigzag int64 at most 10. */
const VARINT_MAX_BYTES = 5;
const VARLONG_MAX_BYTES = 10;
const FAST_VARLONG_BYTES = 7;
/** Below this magnitude a varlong is handled as a float64 without losing precision. */
const SAFE_VARLONG_MAGNITUDE = 2 ** 52;

/** Reads varints and byte ranges from `buf[pos, end)`, checking every bound. */
export class VarintReader {
  pos: number;
  readonly end: number;

  constructor(
    readonly buf: Uint8Array,
    pos: number,
    end: number,
  ) {
    this.pos = pos;
    this.end = end;
  }

  remaining(): number {
    return this.end - this.pos;
  }

  int8(): number {
    if (this.pos >= this.end) throw new CorruptRecordError("record truncated reading int8");
    return (this.buf[this.pos++] << 24) >> 24;
  }

  /** A zigzag-encoded signed 32-bit integer. */
  varint(): number {
    let raw = 0;
    for (let i = 0; i < VARINT_MAX_BYTES; i++) {
      if (this.pos >= this.end) throw new CorruptRecordError("record truncated inside a varint");
      const b = this.buf[this.pos++];
      raw |= (b & 0x7f) << (7 * i);
      if ((b & 0x80) === 0) return (raw >>> 1) ^ -(raw & 1);
    }
    throw new CorruptRecordError(`varint longer than ${VARINT_MAX_BYTES} bytes`);
  }

  /** A zigzag-encoded signed 64-bit integer. */
  varlong(): bigint {
    // Fast path: up to 7 bytes (49 bits) fit a float64 exactly, which covers every realistic
    // timestamp delta without BigInt arithmetic per byte.
    let low = 0;
    for (let i = 0; i < FAST_VARLONG_BYTES; i++) {
      if (this.pos >= this.end) throw new CorruptRecordError("record truncated inside a varlong");
      const b = this.buf[this.pos++];
      low += (b & 0x7f) * 2 ** (7 * i);
      if ((b & 0x80) === 0) return BigInt(low % 2 === 0 ? low / 2 : -(low + 1) / 2);
    }
    let raw = BigInt(low);
    for (let i = FAST_VARLONG_BYTES; i < VARLONG_MAX_BYTES; i++) {
      if (this.pos >= this.end) throw new CorruptRecordError("record truncated inside a varlong");
      const b = this.buf[this.pos++];
      raw |= BigInt(b & 0x7f) << BigInt(7 * i);
      if ((b & 0x80) === 0) {
        raw = BigInt.asUintN(64, raw);
        return (raw >> 1n) ^ -(raw & 1n);
      }
    }
    throw new CorruptRecordError(`varlong longer than ${VARLONG_MAX_BYTES} bytes`);
  }

  /** A view (no copy) of the next `lengthBytes` bytes. */
  bytes(lengthBytes: number): Uint8Array {
    if (lengthBytes < 0 || lengthBytes > this.end - this.pos) {
      throw new CorruptRecordError(
        `record field of ${lengthBytes} bytes at ${this.pos} runs past its end at ${this.end}`,
      );
    }
    const view = this.buf.subarray(this.pos, this.pos + lengthBytes);
    this.pos += lengthBytes;
    return view;
  }
}

/** Bytes taken by `value` as a zigzag varint. */
export function varintSizeBytes(value: number): number {
  let raw = ((value << 1) ^ (value >> 31)) >>> 0;
  let sizeBytes = 1;
  while (raw >= 0x80) {
    raw >>>= 7;
    sizeBytes++;
  }
  return sizeBytes;
}

/** Writes `value` as a zigzag varint at `pos`; returns the position after it. */
export function writeVarint(buf: Uint8Array, pos: number, value: number): number {
  let raw = ((value << 1) ^ (value >> 31)) >>> 0;
  while (raw >= 0x80) {
    buf[pos++] = (raw & 0x7f) | 0x80;
    raw >>>= 7;
  }
  buf[pos++] = raw;
  return pos;
}

function zigzagVarlong(value: bigint): bigint {
  return BigInt.asUintN(64, (value << 1n) ^ (value >> 63n));
}

/** Bytes taken by `value` as a zigzag varlong. */
export function varlongSizeBytes(value: bigint): number {
  if (value > -SAFE_VARLONG_MAGNITUDE && value < SAFE_VARLONG_MAGNITUDE) {
    const n = Number(value);
    let raw = n >= 0 ? n * 2 : -n * 2 - 1;
    let sizeBytes = 1;
    while (raw >= 0x80) {
      raw = Math.floor(raw / 128);
      sizeBytes++;
    }
    return sizeBytes;
  }
  let raw = zigzagVarlong(value);
  let sizeBytes = 1;
  while (raw >= 0x80n) {
    raw >>= 7n;
    sizeBytes++;
  }
  return sizeBytes;
}

/** Writes `value` as a zigzag varlong at `pos`; returns the position after it. */
export function writeVarlong(buf: Uint8Array, pos: number, value: bigint): number {
  if (value > -SAFE_VARLONG_MAGNITUDE && value < SAFE_VARLONG_MAGNITUDE) {
    const n = Number(value);
    let raw = n >= 0 ? n * 2 : -n * 2 - 1;
    while (raw >= 0x80) {
      buf[pos++] = (raw % 128) | 0x80;
      raw = Math.floor(raw / 128);
    }
    buf[pos++] = raw;
    return pos;
  }
  let raw = zigzagVarlong(value);
  while (raw >= 0x80n) {
    buf[pos++] = Number(raw & 0x7fn) | 0x80;
    raw >>= 7n;
  }
  buf[pos++] = Number(raw);
  return pos;
}
