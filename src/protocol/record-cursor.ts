/**
 * Walks the records of a magic v2 batch body (record.ts has the layout) without building an
 * object per record: one cursor exposes the current record's fields as numbers and byte
 * positions, so a pass over millions of records (the log cleaner, the keyless-record check of
 * compacted topics) allocates nothing per record. Timestamp deltas are read as float64 numbers,
 * exact for any real millisecond timestamp. Throws CorruptRecordError on malformed bytes.
 */

import { RECORD_MIN_SIZE_BYTES } from "./record.ts";
import { CorruptRecordError } from "./record-errors.ts";

export class RecordCursor {
  /** Where the current record starts (its length varint) and ends. */
  recordStart = 0;
  recordEnd = 0;
  timestampDelta = 0;
  /** The first byte after the timestamp delta (offsetDelta onwards, copied by rewriters). */
  afterTimestampDelta = 0;
  offsetDelta = 0;
  keyStart = 0;
  /** -1 for a null key. */
  keyLength = -1;
  /** -1 for a null value (a tombstone). */
  valueLength = -1;
  private pos: number;
  private remainingRecords: number;

  constructor(
    readonly body: Uint8Array,
    start: number,
    private readonly end: number,
    recordCount: number,
  ) {
    if (recordCount < 0 || recordCount > (end - start) / RECORD_MIN_SIZE_BYTES) {
      throw new CorruptRecordError(
        `record count ${recordCount} impossible in ${end - start} bytes`,
      );
    }
    this.pos = start;
    this.remainingRecords = recordCount;
  }

  get key(): Uint8Array | null {
    if (this.keyLength < 0) return null;
    return this.body.subarray(this.keyStart, this.keyStart + this.keyLength);
  }

  /** Moves to the next record; false after the last one (checking no bytes are left). */
  next(): boolean {
    if (this.remainingRecords === 0) {
      if (this.pos !== this.end) {
        throw new CorruptRecordError(`${this.end - this.pos} bytes left after the records`);
      }
      return false;
    }
    this.remainingRecords--;
    this.recordStart = this.pos;
    const sizeBytes = this.varint();
    if (sizeBytes < RECORD_MIN_SIZE_BYTES - 1 || sizeBytes > this.end - this.pos) {
      throw new CorruptRecordError(`record length ${sizeBytes} at ${this.recordStart} invalid`);
    }
    this.recordEnd = this.pos + sizeBytes;
    this.pos++; // attributes
    this.timestampDelta = this.varlong();
    this.afterTimestampDelta = this.pos;
    this.offsetDelta = this.varint();
    this.keyLength = this.varint();
    this.keyStart = this.pos;
    if (this.keyLength >= 0) this.pos += this.keyLength;
    if (this.keyLength < -1 || this.pos > this.recordEnd) this.corrupt("key length");
    this.valueLength = this.varint();
    if (this.valueLength < -1 || this.pos + Math.max(0, this.valueLength) > this.recordEnd) {
      this.corrupt("value length");
    }
    this.pos = this.recordEnd;
    return true;
  }

  private corrupt(what: string): never {
    throw new CorruptRecordError(`bad ${what} in the record at ${this.recordStart}`);
  }

  /** A zigzag varint of at most 5 bytes, within the current record's bounds. */
  private varint(): number {
    let raw = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (this.pos >= this.end) this.corrupt("varint");
      const byte = this.body[this.pos++];
      raw |= (byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return (raw >>> 1) ^ -(raw & 1);
    }
    this.corrupt("varint");
  }

  /** A zigzag varlong as a number (exact up to 2^53). */
  private varlong(): number {
    let raw = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) this.corrupt("varlong");
      const byte = this.body[this.pos++];
      raw += (byte & 0x7f) * scale;
      scale *= 128;
      if ((byte & 0x80) === 0) return raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2;
    }
    this.corrupt("varlong");
  }
}

/** Bytes of `value` as a zigzag varlong (a number, exact up to 2^53). */
export function varlongNumberSizeBytes(value: number): number {
  let raw = value >= 0 ? value * 2 : -value * 2 - 1;
  let size = 1;
  while (raw >= 128) {
    raw = Math.floor(raw / 128);
    size++;
  }
  return size;
}

/** Writes `value` as a zigzag varlong at `pos`; returns the position after it. */
export function writeVarlongNumber(out: Uint8Array, pos: number, value: number): number {
  let raw = value >= 0 ? value * 2 : -value * 2 - 1;
  while (raw >= 128) {
    out[pos++] = (raw % 128) | 0x80;
    raw = Math.floor(raw / 128);
  }
  out[pos++] = raw;
  return pos;
}
