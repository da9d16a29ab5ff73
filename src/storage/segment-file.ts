/**
 * The `.log` file of one segment and its reference-counted fd. Readers hand FileRanges (fd,
 * position, size) to the network layer, which sends them later with sendfile; the fd must stay
 * open, and must not be closed and reused for another file, until every such range has been
 * released. So every user takes a reference (`acquire`) and gives it back (`release`), and the fd
 * is only closed when no reference is left: on eviction by the OpenFilePool, on close, or after
 * the file was deleted.
 *
 * Sealed segments are opened lazily for reading and can be evicted when idle; the active segment
 * is pinned open for writing. Not thread-safe.
 */
import * as fs from "node:fs";
import type { FileRange } from "../protocol/records.ts";
import { assert } from "../util/assert.ts";
import type { OpenFilePool, PooledFile } from "./open-file-pool.ts";

export class SegmentFile implements PooledFile {
  private fd = -1;
  private refCount = 0;
  private pinned = false;
  private writable = false;
  /** No new references; the fd closes when the last one is released. */
  private retired = false;
  /** Called when the fd is closed by eviction, so the segment can drop its in-memory indexes. */
  onEvict: (() => void) | null = null;

  constructor(
    public filePath: string,
    private readonly pool: OpenFilePool,
  ) {}

  get isOpen(): boolean {
    return this.fd >= 0;
  }

  get isPinned(): boolean {
    return this.pinned;
  }

  /** Keeps the fd open (read-write) until unpin; used for the active segment. */
  pin(): void {
    if (this.fd >= 0 && !this.writable) {
      assert(this.refCount === 0, `pin of ${this.filePath} while read-only references exist`);
      this.closeFd();
    }
    this.pinned = true;
    if (this.fd < 0) this.openFd("r+");
    this.pool.pinned(this);
  }

  /**
   * pin for a segment file that does not exist yet: opening it creates it, unless `createdFd`
   * is given, an fd (read-write) of the file already created on the thread pool.
   */
  pinNew(createdFd?: number): void {
    assert(this.fd < 0, `pinNew of ${this.filePath}, which is open`);
    this.pinned = true;
    if (createdFd === undefined) {
      this.openFd("w+");
    } else {
      this.fd = createdFd;
      this.writable = true;
      this.pool.opened(this);
    }
    this.pool.pinned(this);
  }

  unpin(): void {
    this.pinned = false;
    if (this.fd >= 0) this.pool.unpinned(this);
  }

  /** The fd of a pinned file, for appends. */
  writeFd(): number {
    // Called on every append: the messages are only built when a check fails.
    if (!this.pinned) assert(false, `write to unpinned segment file ${this.filePath}`);
    if (this.fd < 0) assert(false, `pinned segment file ${this.filePath} has no fd`);
    return this.fd;
  }

  /** Takes a reference and returns an fd that stays open until the matching release(). */
  acquire(): number {
    if (this.retired) assert(false, `acquire of retired segment file ${this.filePath}`);
    // Count the reference first so the pool cannot evict the file while opening it.
    this.refCount++;
    if (this.fd >= 0) {
      this.pool.touched(this);
      return this.fd;
    }
    try {
      this.openFd("r");
    } catch (error) {
      this.refCount--;
      throw error;
    }
    return this.fd;
  }

  release(): void {
    if (!(this.refCount > 0)) assert(false, `release without acquire on ${this.filePath}`);
    this.refCount--;
    if (this.refCount > 0) return;
    if (this.retired) this.closeFd();
    else this.pool.becameIdle();
  }

  /** A FileRange over [position, position + sizeBytes) holding its own reference. */
  range(position: number, sizeBytes: number): FileRange {
    const fd = this.acquire();
    let released = false;
    return {
      fd,
      position,
      sizeBytes,
      release: () => {
        if (released) assert(false, `FileRange of ${this.filePath} released twice`);
        released = true;
        this.release();
      },
    };
  }

  /** Closes the fd if nobody holds it; returns whether it did. Called by the pool. */
  evictIfIdle(): boolean {
    if (this.pinned || this.refCount > 0 || this.fd < 0) return false;
    this.onEvict?.();
    this.closeFd();
    return true;
  }

  /** The segment was removed: close now if idle, else when the last reference is released. */
  markDeleted(): void {
    this.retired = true;
    this.unpin();
    if (this.refCount === 0) this.closeFd();
  }

  /** Closes an idle fd at log close; readers still holding ranges close it on release. */
  close(): void {
    this.unpin();
    if (this.refCount === 0) this.closeFd();
    else this.retired = true;
  }

  private openFd(flags: "r" | "r+" | "w+"): void {
    this.fd = fs.openSync(this.filePath, flags);
    this.writable = flags !== "r";
    this.pool.opened(this);
  }

  private closeFd(): void {
    if (this.fd < 0) return;
    const fd = this.fd;
    this.fd = -1;
    this.pool.closed(this);
    fs.closeSync(fd);
  }
}
