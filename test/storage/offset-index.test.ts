import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { CorruptIndexError } from "../../src/storage/corrupt-index-error.ts";
import { OffsetIndex } from "../../src/storage/offset-index.ts";
import { AssertionError } from "../../src/util/assert.ts";
import { removeDir, tempDir } from "./helpers.ts";

let dir: string;
beforeEach(() => (dir = tempDir()));
afterEach(() => removeDir(dir));

describe("OffsetIndex", () => {
  test("lookup returns the last entry at or below the target, else the base", () => {
    const index = new OffsetIndex(path.join(dir, "x.index"), 100n, 1024);
    index.append(110n, 500);
    index.append(120n, 900);
    index.append(135n, 1700);
    expect(index.lookup(99n)).toEqual({ offset: 100n, position: 0 });
    expect(index.lookup(109n)).toEqual({ offset: 100n, position: 0 });
    expect(index.lookup(110n)).toEqual({ offset: 110n, position: 500 });
    expect(index.lookup(134n)).toEqual({ offset: 120n, position: 900 });
    expect(index.lookup(10_000_000_000n)).toEqual({ offset: 135n, position: 1700 });
    expect(index.lookupPosition(899)).toBe(500);
    expect(index.lookupPosition(900)).toBe(900);
    expect(index.lookupPosition(10)).toBe(0);
  });

  test("refuses offsets or positions that do not increase", () => {
    const index = new OffsetIndex(path.join(dir, "x.index"), 0n, 1024);
    index.append(5n, 100);
    expect(() => index.append(5n, 200)).toThrow(AssertionError);
    expect(() => index.append(6n, 100)).toThrow(AssertionError);
  });

  test("is full at segment.index.bytes / 8 entries and grows its arrays up to that", () => {
    const index = new OffsetIndex(path.join(dir, "x.index"), 0n, 8 * 200);
    for (let i = 0; i < 200; i++) index.append(BigInt(i), i * 10);
    expect(index.isFull()).toBe(true);
    expect(() => index.append(1000n, 5000)).toThrow(AssertionError);
    expect(index.lookup(150n)).toEqual({ offset: 150n, position: 1500 });
  });

  test("flush writes Kafka's 8-byte big-endian entries, incrementally, and load reads them", () => {
    const file = path.join(dir, "00000000000000000100.index");
    const index = new OffsetIndex(file, 100n, 1024);
    index.append(103n, 4096);
    index.flush();
    index.append(107n, 8192);
    index.flush();
    const bytes = fs.readFileSync(file);
    expect([...bytes]).toEqual([0, 0, 0, 3, 0, 0, 0x10, 0, 0, 0, 0, 7, 0, 0, 0x20, 0]);
    const loaded = OffsetIndex.load(file, 100n, 1024, 10_000);
    expect(loaded.entries).toBe(2);
    expect(loaded.lookup(108n)).toEqual({ offset: 107n, position: 8192 });
  });

  test("load rejects a missing file, a partial entry, disorder and positions past the log", () => {
    const file = path.join(dir, "x.index");
    expect(() => OffsetIndex.load(file, 0n, 1024, 100)).toThrow(CorruptIndexError);
    fs.writeFileSync(file, new Uint8Array(12));
    expect(() => OffsetIndex.load(file, 0n, 1024, 100)).toThrow(CorruptIndexError);
    fs.writeFileSync(file, new Uint8Array([0, 0, 0, 5, 0, 0, 0, 50, 0, 0, 0, 4, 0, 0, 0, 60]));
    expect(() => OffsetIndex.load(file, 0n, 1024, 100)).toThrow(CorruptIndexError);
    fs.writeFileSync(file, new Uint8Array([0, 0, 0, 5, 0, 0, 0, 200]));
    expect(() => OffsetIndex.load(file, 0n, 1024, 100)).toThrow(CorruptIndexError);
    expect(OffsetIndex.load(file, 0n, 1024, 201).entries).toBe(1);
  });
});
