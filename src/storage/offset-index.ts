/**
 * The sparse offset index of one segment, `<baseOffset>.index`. Kafka's format: entries of
 * 8 bytes, big-endian, each a 4-byte offset relative to the segment's base offset and the
 * 4-byte position of a batch in the `.log` file. An entry (offset O, position P) says "the batch
 * starting at P ends at offset O", so a reader looking for offset T takes the last entry with
 * O <= T and scans batch headers forward from P. One entry is added every index.interval.bytes.
 *
 * The entries live in memory (two typed arrays grown by doubling up to the limit that
 * segment.index.bytes sets) and reach the file only when the segment is flushed; the file is
 * always exactly entries * 8 bytes long (no preallocation). A crash can lose entries added after
 * the last flush, but those belong to segments past the recovery point, whose indexes recovery
 * rebuilds anyway. Not thread-safe; Quill is single-threaded.
 */
import { assert } from "../util/assert.ts";
import { CorruptIndexError } from "./corrupt-index-error.ts";
import { readFileIfExists, writeTailAndSync } from "./durable-file.ts";

export const OFFSET_INDEX_ENTRY_BYTES = 8;
const INITIAL_CAPACITY = 64;

export interface OffsetPosition {
  readonly offset: bigint;
  readonly position: number;
}

export class OffsetIndex {
  readonly maxEntries: number;
  private relativeOffsets = new Int32Array(INITIAL_CAPACITY);
  private positions = new Int32Array(INITIAL_CAPACITY);
  private entryCount = 0;
  /** Entries already in the file; flush writes only the ones after them. */
  private persistedEntryCount = 0;

  constructor(
    readonly filePath: string,
    readonly baseOffset: bigint,
    maxIndexBytes: number,
  ) {
    this.maxEntries = Math.floor(maxIndexBytes / OFFSET_INDEX_ENTRY_BYTES);
    assert(this.maxEntries >= 1, `index of ${maxIndexBytes} bytes holds no entry: ${filePath}`);
  }

  get entries(): number {
    return this.entryCount;
  }

  isFull(): boolean {
    return this.entryCount >= this.maxEntries;
  }

  /** The last indexed offset, or the base offset when the index is empty. */
  lastOffset(): bigint {
    if (this.entryCount === 0) return this.baseOffset;
    return this.baseOffset + BigInt(this.relativeOffsets[this.entryCount - 1]);
  }

  lastPosition(): number {
    return this.entryCount === 0 ? 0 : this.positions[this.entryCount - 1];
  }

  append(offset: bigint, position: number): void {
    // Called for every indexed batch: messages are only built when a check fails.
    if (this.isFull()) assert(false, `append to full index ${this.filePath}`);
    const relative = offset - this.baseOffset;
    if (relative < 0n) assert(false, `offset ${offset} below the base of ${this.filePath}`);
    if (relative > 0x7fffffffn) assert(false, `offset ${offset} beyond int32 of ${this.filePath}`);
    if (this.entryCount > 0 && offset <= this.lastOffset()) {
      assert(false, `offset ${offset} <= last ${this.lastOffset()} in ${this.filePath}`);
    }
    if (this.entryCount > 0 && position <= this.lastPosition()) {
      assert(false, `position ${position} <= last ${this.lastPosition()} in ${this.filePath}`);
    }
    if (this.entryCount === this.relativeOffsets.length) this.grow();
    this.relativeOffsets[this.entryCount] = Number(relative);
    this.positions[this.entryCount] = position;
    this.entryCount++;
  }

  /** The last entry whose offset is <= target, or (baseOffset, 0) if there is none. */
  lookup(targetOffset: bigint): OffsetPosition {
    const relative = targetOffset - this.baseOffset;
    if (relative < 0n || this.entryCount === 0) return { offset: this.baseOffset, position: 0 };
    const target = relative > 0x7fffffffn ? 0x7fffffff : Number(relative);
    const slot = floorSlot(this.relativeOffsets, this.entryCount, target);
    if (slot < 0) return { offset: this.baseOffset, position: 0 };
    return {
      offset: this.baseOffset + BigInt(this.relativeOffsets[slot]),
      position: this.positions[slot],
    };
  }

  /** The largest indexed batch position <= maxPosition, or 0. */
  lookupPosition(maxPosition: number): number {
    const slot = floorSlot(this.positions, this.entryCount, maxPosition);
    return slot < 0 ? 0 : this.positions[slot];
  }

  /** Drops every entry (recovery rebuilds the index from the log). */
  reset(): void {
    this.entryCount = 0;
    this.persistedEntryCount = 0;
  }

  /** Writes the entries added since the last flush and fdatasyncs the file. */
  flush(): void {
    if (this.persistedEntryCount === this.entryCount) return;
    const start = this.persistedEntryCount;
    const tail = new Uint8Array((this.entryCount - start) * OFFSET_INDEX_ENTRY_BYTES);
    const view = new DataView(tail.buffer);
    for (let i = start; i < this.entryCount; i++) {
      view.setInt32((i - start) * OFFSET_INDEX_ENTRY_BYTES, this.relativeOffsets[i]);
      view.setInt32((i - start) * OFFSET_INDEX_ENTRY_BYTES + 4, this.positions[i]);
    }
    writeTailAndSync(this.filePath, start * OFFSET_INDEX_ENTRY_BYTES, tail);
    this.persistedEntryCount = this.entryCount;
  }

  /** Marks every entry unwritten, so the next flush rewrites the whole file. */
  markAllUnpersisted(): void {
    this.persistedEntryCount = 0;
  }

  /**
   * Reads and sanity-checks `<base>.index` against a log of `logSizeBytes`: whole entries,
   * offsets and positions strictly increasing, positions inside the log. Throws
   * CorruptIndexError (the caller rebuilds the index) if the file is missing or wrong.
   */
  static load(
    filePath: string,
    baseOffset: bigint,
    maxIndexBytes: number,
    logSizeBytes: number,
  ): OffsetIndex {
    const bytes = readFileIfExists(filePath);
    if (bytes === null) throw new CorruptIndexError(`${filePath} is missing`);
    if (bytes.length % OFFSET_INDEX_ENTRY_BYTES !== 0) {
      throw new CorruptIndexError(`${filePath} has ${bytes.length} bytes, not whole entries`);
    }
    // A smaller segment.index.bytes set since the file was written must not reject it.
    const index = new OffsetIndex(filePath, baseOffset, Math.max(maxIndexBytes, bytes.length));
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let lastRelative = -1;
    let lastPosition = -1;
    for (let at = 0; at < bytes.length; at += OFFSET_INDEX_ENTRY_BYTES) {
      const relative = view.getInt32(at);
      const position = view.getInt32(at + 4);
      if (relative <= lastRelative || position <= lastPosition || position >= logSizeBytes) {
        throw new CorruptIndexError(
          `${filePath} entry ${at / OFFSET_INDEX_ENTRY_BYTES} (offset +${relative}, position ` +
            `${position}) is out of order or outside the ${logSizeBytes}-byte log`,
        );
      }
      index.append(baseOffset + BigInt(relative), position);
      lastRelative = relative;
      lastPosition = position;
    }
    index.persistedEntryCount = index.entryCount;
    return index;
  }

  private grow(): void {
    const capacity = Math.min(this.relativeOffsets.length * 2, this.maxEntries);
    assert(capacity > this.relativeOffsets.length, `index ${this.filePath} cannot grow`);
    const offsets = new Int32Array(capacity);
    offsets.set(this.relativeOffsets);
    const positions = new Int32Array(capacity);
    positions.set(this.positions);
    this.relativeOffsets = offsets;
    this.positions = positions;
  }
}

/** Binary search: the last slot in [0, count) whose value is <= target, or -1. */
export function floorSlot(sorted: Int32Array, count: number, target: number): number {
  let low = 0;
  let high = count - 1;
  let found = -1;
  while (low <= high) {
    const mid = (low + high) >>> 1;
    if (sorted[mid] <= target) {
      found = mid;
      low = mid + 1;
    } else {
      high = mid - 1;
    }
  }
  return found;
}
