import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import { OpenFilePool } from "../../src/storage/open-file-pool.ts";
import { SegmentFile } from "../../src/storage/segment-file.ts";
import { AssertionError } from "../../src/util/assert.ts";
import { removeDir, tempDir } from "./helpers.ts";

let dir: string;
beforeEach(() => (dir = tempDir()));
afterEach(() => removeDir(dir));

function files(pool: OpenFilePool, count: number): SegmentFile[] {
  return Array.from({ length: count }, (_, i) => {
    fs.writeFileSync(`${dir}/${i}.log`, `file ${i}`);
    return new SegmentFile(`${dir}/${i}.log`, pool);
  });
}

describe("SegmentFile and OpenFilePool", () => {
  test("the pool closes least recently used idle files beyond its cap", () => {
    const pool = new OpenFilePool(2);
    const [a, b, c] = files(pool, 3);
    a.acquire();
    a.release();
    b.acquire();
    b.release();
    a.acquire(); // a is now more recently used than b
    a.release();
    c.acquire();
    c.release();
    expect(pool.openCount).toBe(2);
    expect([a.isOpen, b.isOpen, c.isOpen]).toEqual([true, false, true]);
  });

  test("busy and pinned files are never evicted; they are closed once released", () => {
    const pool = new OpenFilePool(1);
    const [a, b, c] = files(pool, 3);
    a.pin();
    const fd = b.acquire();
    c.acquire();
    expect(pool.openCount).toBe(3);
    const buffer = new Uint8Array(6);
    fs.readSync(fd, buffer, 0, 6, 0);
    expect(new TextDecoder().decode(buffer)).toBe("file 1");
    b.release();
    c.release();
    expect(a.isOpen).toBe(true);
    expect(pool.openCount).toBe(1);
  });

  test("pinned files count toward the cap; unpinned, they are evicted as the oldest idle", () => {
    const pool = new OpenFilePool(2);
    const [a, b, c, d] = files(pool, 4);
    // More active segments than the cap: all stay open, and a read of a sealed one still works.
    for (const f of [a, b, c]) f.pin();
    expect(pool.openCount).toBe(3);
    d.acquire();
    expect(pool.openCount).toBe(4);
    d.release(); // Idle and over the cap: closed at once.
    expect([a.isOpen, b.isOpen, c.isOpen, d.isOpen]).toEqual([true, true, true, false]);
    // A roll unpins: the sealed file becomes evictable like any other.
    a.unpin();
    expect(pool.openCount).toBe(2);
    expect(a.isOpen).toBe(false);
    b.close();
    c.close();
    expect(pool.openCount).toBe(0);
  });

  test("a deleted file keeps its fd until the last range is released", () => {
    const pool = new OpenFilePool(10);
    const [a] = files(pool, 1);
    const range = a.range(0, 6);
    fs.rmSync(a.filePath);
    a.markDeleted();
    expect(a.isOpen).toBe(true);
    const buffer = new Uint8Array(6);
    expect(fs.readSync(range.fd, buffer, 0, 6, 0)).toBe(6);
    range.release();
    expect(a.isOpen).toBe(false);
    expect(() => range.release()).toThrow(AssertionError);
    expect(() => a.acquire()).toThrow(AssertionError);
  });
});
