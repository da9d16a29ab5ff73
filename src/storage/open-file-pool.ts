/**
 * Caps the number of segment fds a LogManager keeps open. Sealed segments open their `.log`
 * file on first read; when more than `maxOpenFiles` are open, the least recently used idle ones
 * (no outstanding FileRange, not the active segment) are closed and reopened on demand. Files
 * that are busy are skipped, so the cap is soft while many ranges are in flight; the number of
 * in-flight ranges is itself bounded by the network layer's per-connection limits.
 *
 * Pinned files (active segments, one per log) are counted but kept apart from the eviction
 * order: with more logs than `maxOpenFiles` every open scanned thousands of pinned files it
 * could not evict, and loading 10,000 logs took 30 s instead of a few (docs/scaling.md).
 */
import { assert } from "../util/assert.ts";

/** What the pool needs of an open file (a SegmentFile); named here so the pool imports nothing. */
export interface PooledFile {
  readonly filePath: string;
  /** Closes the fd if no reference is outstanding and the file is not pinned. */
  evictIfIdle(): boolean;
}

export class OpenFilePool {
  /** Open unpinned files in least-recently-used-first order (a Map keeps insertion order). */
  private readonly lru = new Map<PooledFile, true>();
  /** Open pinned files: never evicted, so never scanned. */
  private readonly pinnedFiles = new Set<PooledFile>();

  constructor(readonly maxOpenFiles: number) {
    assert(Number.isInteger(maxOpenFiles) && maxOpenFiles >= 1, `maxOpenFiles ${maxOpenFiles}`);
  }

  get openCount(): number {
    return this.lru.size + this.pinnedFiles.size;
  }

  opened(file: PooledFile): void {
    const twice = this.lru.has(file) || this.pinnedFiles.has(file);
    assert(!twice, `segment file ${file.filePath} opened twice`);
    this.lru.set(file, true);
    this.evictIdle();
  }

  /** An open file was pinned: it leaves the eviction order until unpinned. */
  pinned(file: PooledFile): void {
    if (this.lru.delete(file)) this.pinnedFiles.add(file);
  }

  /** An open pinned file was unpinned: it joins the eviction order as the most recent. */
  unpinned(file: PooledFile): void {
    if (!this.pinnedFiles.delete(file)) return;
    this.lru.set(file, true);
    this.evictIdle();
  }

  touched(file: PooledFile): void {
    if (!this.lru.delete(file)) return;
    this.lru.set(file, true);
  }

  /** A file's last reference was released: it may now be evicted if the pool is over its cap. */
  becameIdle(): void {
    this.evictIdle();
  }

  closed(file: PooledFile): void {
    this.lru.delete(file);
    this.pinnedFiles.delete(file);
  }

  private evictIdle(): void {
    if (this.openCount <= this.maxOpenFiles) return;
    // Oldest first. evictIfIdle deletes the current entry through closed(), which a Map
    // iteration tolerates; busy files are skipped, so one pass visits each file at most once.
    for (const file of this.lru.keys()) {
      if (this.openCount <= this.maxOpenFiles) return;
      file.evictIfIdle();
    }
  }
}
