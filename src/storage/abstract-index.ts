/**
 * What the offset index and the time index share (Kafka's AbstractIndex): fixed-size big-endian
 * entries kept in memory in typed arrays grown by doubling up to the limit segment.index.bytes
 * sets, an offset stored relative to the segment's base offset as an int32, and a file that is
 * always exactly entries * entryBytes long, written only from the first entry not yet in it
 * (flush) and checked entry by entry when it is loaded. Subclasses own their arrays and say how
 * one entry is written and how the arrays grow. Not thread-safe; Quill is single-threaded.
 */
import { assert } from "../util/assert.ts";
import { CorruptIndexError } from "./corrupt-index-error.ts";
import { readFileIfExists, writeTailAndSync, writeTailInBackground } from "./durable-file.ts";
import type { PrereadFiles } from "./preread-files.ts";

/** Entries the typed arrays start with; they double as entries are added. */
export const INDEX_INITIAL_CAPACITY = 64;

export abstract class AbstractIndex {
  readonly maxEntries: number;
  protected entryCount = 0;
  /** Entries already in the file; flush writes only the ones after them. */
  protected persistedEntryCount = 0;
  /**
   * False while the file may not exist (a new log's segment creates its index files at its
   * first flush, not with the log: docs/scaling.md): the next flush creates it, even empty.
   */
  private fileWritten = true;

  constructor(
    readonly filePath: string,
    readonly baseOffset: bigint,
    maxIndexBytes: number,
    private readonly entryBytes: number,
  ) {
    this.maxEntries = Math.floor(maxIndexBytes / entryBytes);
    assert(this.maxEntries >= 1, `index of ${maxIndexBytes} bytes holds no entry: ${filePath}`);
  }

  get entries(): number {
    return this.entryCount;
  }

  /** Drops every entry (recovery rebuilds the index from the log). */
  reset(): void {
    this.entryCount = 0;
    this.persistedEntryCount = 0;
  }

  /** Marks every entry unwritten, so the next flush rewrites the whole file. */
  markAllUnpersisted(): void {
    this.persistedEntryCount = 0;
  }

  /** The file may not exist yet (or holds nothing of this index): the next flush writes it. */
  markFileUnwritten(): this {
    this.persistedEntryCount = 0;
    this.fileWritten = false;
    return this;
  }

  /**
   * Writes the entries added since the last flush and fdatasyncs the file (unless `sync` is
   * false: the caller syncs it off the event loop). Returns whether there was anything to write.
   */
  flush(sync = true): boolean {
    const tail = this.unpersistedTail();
    if (tail === null) return false;
    writeTailAndSync(this.filePath, this.persistedEntryCount * this.entryBytes, tail, sync);
    this.persistedEntryCount = this.entryCount;
    this.fileWritten = true;
    return true;
  }

  /**
   * flush without the sync, its write on the thread pool: a clean stop writes every log's index
   * tails so and then syncs the whole file system (file-system-sync.ts). Nothing may add
   * entries until it resolves.
   */
  async writeUnsynced(): Promise<void> {
    const tail = this.unpersistedTail();
    if (tail === null) return;
    const entries = this.entryCount;
    await writeTailInBackground(this.filePath, this.persistedEntryCount * this.entryBytes, tail);
    this.persistedEntryCount = entries;
    this.fileWritten = true;
  }

  /** The entries added since the last flush, encoded; null when the file needs no write. */
  private unpersistedTail(): Uint8Array | null {
    if (this.persistedEntryCount === this.entryCount && this.fileWritten) return null;
    const start = this.persistedEntryCount;
    const tail = new Uint8Array((this.entryCount - start) * this.entryBytes);
    const view = new DataView(tail.buffer);
    for (let slot = start; slot < this.entryCount; slot++) {
      this.writeEntry(view, (slot - start) * this.entryBytes, slot);
    }
    return tail;
  }

  /** Encodes entry `slot` at `at` in the file's format. */
  protected abstract writeEntry(view: DataView, at: number, slot: number): void;

  /** The number of entries the arrays can hold now. */
  protected abstract get capacity(): number;

  /** Replaces the arrays by ones of `capacity` entries holding the same entries. */
  protected abstract resize(capacity: number): void;

  /** Room for one more entry: the arrays double, up to maxEntries. */
  protected ensureRoom(): void {
    if (this.entryCount < this.capacity) return;
    const capacity = Math.min(this.capacity * 2, this.maxEntries);
    assert(capacity > this.capacity, `index ${this.filePath} cannot grow`);
    this.resize(capacity);
  }

  /** `offset` relative to the base offset, checked to fit the int32 an entry stores. */
  protected relativeOffset(offset: bigint): number {
    // Called for every indexed batch: messages are only built when a check fails.
    const relative = offset - this.baseOffset;
    if (relative < 0n) assert(false, `offset ${offset} below the base of ${this.filePath}`);
    if (relative > 0x7fffffffn) assert(false, `offset ${offset} beyond int32 of ${this.filePath}`);
    return Number(relative);
  }

  /** After loading: every entry in memory is the file's. */
  protected markLoaded(): void {
    this.persistedEntryCount = this.entryCount;
  }
}

/**
 * The bytes of an index file, as a view, after checking they are whole entries. Throws
 * CorruptIndexError (the caller rebuilds the index) if the file is missing or cut short.
 */
export function readIndexFile(
  filePath: string,
  entryBytes: number,
  preread?: PrereadFiles,
): DataView {
  const bytes = preread?.take(filePath) ?? readFileIfExists(filePath);
  if (bytes === null) throw new CorruptIndexError(`${filePath} is missing`);
  if (bytes.length % entryBytes !== 0) {
    throw new CorruptIndexError(`${filePath} has ${bytes.length} bytes, not whole entries`);
  }
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
