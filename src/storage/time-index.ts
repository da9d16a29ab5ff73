/**
 * The time index of one segment, `<baseOffset>.timeindex`. Kafka's format: entries of 12 bytes,
 * big-endian, each an 8-byte timestamp and the 4-byte offset (relative to the segment's base)
 * of the batch where that timestamp was first reached. Timestamps strictly increase: an entry
 * is only added when the segment's largest timestamp so far grows, so entry (T, O) means "no
 * record before offset O has a timestamp above T". Entries are added at the same
 * index.interval.bytes points as the offset index, plus a final one when the segment is sealed,
 * so the last entry always holds the segment's largest timestamp.
 *
 * Kept in memory and written on flush as OffsetIndex is (both are AbstractIndexes).
 */
import { assert } from "../util/assert.ts";
import { AbstractIndex, INDEX_INITIAL_CAPACITY, readIndexFile } from "./abstract-index.ts";
import { CorruptIndexError } from "./corrupt-index-error.ts";
import type { PrereadFiles } from "./preread-files.ts";

export const TIME_INDEX_ENTRY_BYTES = 12;

export interface TimestampOffset {
  readonly timestamp: bigint;
  readonly offset: bigint;
}

export class TimeIndex extends AbstractIndex {
  private timestamps = new BigInt64Array(INDEX_INITIAL_CAPACITY);
  private relativeOffsets = new Int32Array(INDEX_INITIAL_CAPACITY);

  constructor(filePath: string, baseOffset: bigint, maxIndexBytes: number) {
    super(filePath, baseOffset, maxIndexBytes, TIME_INDEX_ENTRY_BYTES);
  }

  /** One slot stays free for the entry added when the segment is sealed, as in Kafka. */
  isFull(): boolean {
    return this.entryCount >= this.maxEntries - 1;
  }

  lastEntry(): TimestampOffset | null {
    if (this.entryCount === 0) return null;
    const i = this.entryCount - 1;
    return {
      timestamp: this.timestamps[i],
      offset: this.baseOffset + BigInt(this.relativeOffsets[i]),
    };
  }

  /**
   * Adds (timestamp, offset) if timestamp is above the last entry's. `sealing` allows the final
   * entry into the slot isFull keeps free.
   */
  maybeAppend(timestamp: bigint, offset: bigint, sealing = false): void {
    const last = this.lastEntry();
    if (last !== null && timestamp <= last.timestamp) return;
    if (timestamp < 0n) return;
    // Called for every indexed batch: messages are only built when a check fails.
    if (this.entryCount >= this.maxEntries) assert(false, `${this.filePath} overflow`);
    if (!sealing && this.isFull()) assert(false, `append to full time index ${this.filePath}`);
    const relative = this.relativeOffset(offset);
    if (last !== null && offset < last.offset) {
      assert(false, `time index offset ${offset} goes back from ${last.offset}`);
    }
    this.ensureRoom();
    this.timestamps[this.entryCount] = timestamp;
    this.relativeOffsets[this.entryCount] = relative;
    this.entryCount++;
  }

  /**
   * The last entry whose timestamp is <= target: every record before its offset is older than
   * or equal to target. Returns (-1, baseOffset) when there is none, i.e. search from the start.
   */
  lookup(targetTimestamp: bigint): TimestampOffset {
    let low = 0;
    let high = this.entryCount - 1;
    let found = -1;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      if (this.timestamps[mid] <= targetTimestamp) {
        found = mid;
        low = mid + 1;
      } else {
        high = mid - 1;
      }
    }
    if (found < 0) return { timestamp: -1n, offset: this.baseOffset };
    return {
      timestamp: this.timestamps[found],
      offset: this.baseOffset + BigInt(this.relativeOffsets[found]),
    };
  }

  /**
   * Reads and checks `<base>.timeindex`: whole entries, timestamps strictly increasing,
   * offsets non-decreasing and below `nextOffset` (the segment's end). Throws CorruptIndexError.
   */
  static load(
    filePath: string,
    baseOffset: bigint,
    maxIndexBytes: number,
    nextOffset: bigint,
    preread?: PrereadFiles,
  ): TimeIndex {
    const view = readIndexFile(filePath, TIME_INDEX_ENTRY_BYTES, preread);
    const maxBytes = Math.max(maxIndexBytes, view.byteLength + TIME_INDEX_ENTRY_BYTES);
    const index = new TimeIndex(filePath, baseOffset, maxBytes);
    let lastTimestamp = -1n;
    let lastRelative = 0;
    for (let at = 0; at < view.byteLength; at += TIME_INDEX_ENTRY_BYTES) {
      const timestamp = view.getBigInt64(at);
      const relative = view.getInt32(at + 8);
      const offset = baseOffset + BigInt(relative);
      if (timestamp <= lastTimestamp || relative < lastRelative || offset >= nextOffset) {
        throw new CorruptIndexError(
          `${filePath} entry ${at / TIME_INDEX_ENTRY_BYTES} (${timestamp}, +${relative}) is ` +
            `out of order or past the segment end ${nextOffset}`,
        );
      }
      index.maybeAppend(timestamp, offset, true);
      lastTimestamp = timestamp;
      lastRelative = relative;
    }
    index.markLoaded();
    return index;
  }

  protected writeEntry(view: DataView, at: number, slot: number): void {
    view.setBigInt64(at, this.timestamps[slot]);
    view.setInt32(at + 8, this.relativeOffsets[slot]);
  }

  protected get capacity(): number {
    return this.timestamps.length;
  }

  protected resize(capacity: number): void {
    const timestamps = new BigInt64Array(capacity);
    timestamps.set(this.timestamps);
    const offsets = new Int32Array(capacity);
    offsets.set(this.relativeOffsets);
    this.timestamps = timestamps;
    this.relativeOffsets = offsets;
  }
}
