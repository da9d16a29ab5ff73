/**
 * The sparse offset index of one segment, `<baseOffset>.index`. Kafka's format: entries of
 * 8 bytes, big-endian, each a 4-byte offset relative to the segment's base offset and the
 * 4-byte position of a batch in the `.log` file. An entry (offset O, position P) says "the batch
 * starting at P ends at offset O", so a reader looking for offset T takes the last entry with
 * O <= T and scans batch headers forward from P. One entry is added every index.interval.bytes.
 *
 * The entries live in memory and reach the file only when the segment is flushed; the file is
 * always exactly entries * 8 bytes long (no preallocation). A crash can lose entries added after
 * the last flush, but those belong to segments past the recovery point, whose indexes recovery
 * rebuilds anyway. The storage of entries is shared with the time index (AbstractIndex).
 */
import { assert } from "../util/assert.ts";
import { AbstractIndex, INDEX_INITIAL_CAPACITY, readIndexFile } from "./abstract-index.ts";
import { CorruptIndexError } from "./corrupt-index-error.ts";
import type { PrereadFiles } from "./preread-files.ts";

export const OFFSET_INDEX_ENTRY_BYTES = 8;

export interface OffsetPosition {
  readonly offset: bigint;
  readonly position: number;
}

export class OffsetIndex extends AbstractIndex {
  private relativeOffsets = new Int32Array(INDEX_INITIAL_CAPACITY);
  private positions = new Int32Array(INDEX_INITIAL_CAPACITY);

  constructor(filePath: string, baseOffset: bigint, maxIndexBytes: number) {
    super(filePath, baseOffset, maxIndexBytes, OFFSET_INDEX_ENTRY_BYTES);
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
    const relative = this.relativeOffset(offset);
    if (this.entryCount > 0 && offset <= this.lastOffset()) {
      assert(false, `offset ${offset} <= last ${this.lastOffset()} in ${this.filePath}`);
    }
    if (this.entryCount > 0 && position <= this.lastPosition()) {
      assert(false, `position ${position} <= last ${this.lastPosition()} in ${this.filePath}`);
    }
    this.ensureRoom();
    this.relativeOffsets[this.entryCount] = relative;
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
    preread?: PrereadFiles,
  ): OffsetIndex {
    const view = readIndexFile(filePath, OFFSET_INDEX_ENTRY_BYTES, preread);
    // A smaller segment.index.bytes set since the file was written must not reject it.
    const index = new OffsetIndex(filePath, baseOffset, Math.max(maxIndexBytes, view.byteLength));
    let lastRelative = -1;
    let lastPosition = -1;
    for (let at = 0; at < view.byteLength; at += OFFSET_INDEX_ENTRY_BYTES) {
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
    index.markLoaded();
    return index;
  }

  protected writeEntry(view: DataView, at: number, slot: number): void {
    view.setInt32(at, this.relativeOffsets[slot]);
    view.setInt32(at + 4, this.positions[slot]);
  }

  protected get capacity(): number {
    return this.relativeOffsets.length;
  }

  protected resize(capacity: number): void {
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
