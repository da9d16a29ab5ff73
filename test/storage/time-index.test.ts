import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { CorruptIndexError } from "../../src/storage/corrupt-index-error.ts";
import { TimeIndex } from "../../src/storage/time-index.ts";
import { removeDir, tempDir } from "./helpers.ts";

let dir: string;
beforeEach(() => (dir = tempDir()));
afterEach(() => removeDir(dir));

describe("TimeIndex", () => {
  test("only appends growing timestamps and looks up the last entry at or below a time", () => {
    const index = new TimeIndex(path.join(dir, "x.timeindex"), 50n, 1200);
    index.maybeAppend(1000n, 55n);
    index.maybeAppend(900n, 60n); // older: ignored, as Kafka's maybeAppend does
    index.maybeAppend(1000n, 61n); // equal: ignored
    index.maybeAppend(2000n, 70n);
    expect(index.entries).toBe(2);
    expect(index.lookup(999n)).toEqual({ timestamp: -1n, offset: 50n });
    expect(index.lookup(1500n)).toEqual({ timestamp: 1000n, offset: 55n });
    expect(index.lookup(2000n)).toEqual({ timestamp: 2000n, offset: 70n });
    expect(index.lastEntry()).toEqual({ timestamp: 2000n, offset: 70n });
  });

  test("keeps one slot free for the entry added when the segment is sealed", () => {
    const index = new TimeIndex(path.join(dir, "x.timeindex"), 0n, 12 * 3);
    index.maybeAppend(1n, 1n);
    index.maybeAppend(2n, 2n);
    expect(index.isFull()).toBe(true);
    index.maybeAppend(3n, 3n, true);
    expect(index.entries).toBe(3);
  });

  test("flush writes 12-byte entries that load reads back; bad files are refused", () => {
    const file = path.join(dir, "x.timeindex");
    const index = new TimeIndex(file, 10n, 1200);
    index.maybeAppend(1_700_000_000_000n, 12n);
    index.maybeAppend(1_700_000_000_500n, 19n);
    index.flush();
    expect(fs.statSync(file).size).toBe(24);
    const loaded = TimeIndex.load(file, 10n, 1200, 20n);
    const found = loaded.lookup(1_700_000_000_499n);
    expect(found).toEqual({ timestamp: 1_700_000_000_000n, offset: 12n });
    // An offset at or past the segment's end means the index does not belong to this log.
    expect(() => TimeIndex.load(file, 10n, 1200, 19n)).toThrow(CorruptIndexError);
    fs.writeFileSync(file, new Uint8Array(13));
    expect(() => TimeIndex.load(file, 10n, 1200, 20n)).toThrow(CorruptIndexError);
  });
});
