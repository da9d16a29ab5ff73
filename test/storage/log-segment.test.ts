import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { LogSegment, segmentFileStem } from "../../src/storage/log-segment.ts";
import { validateAndAssignOffsets } from "../../src/storage/log-validator.ts";
import { OpenFilePool } from "../../src/storage/open-file-pool.ts";
import { batchOffsets, readRanges, removeDir, tempDir } from "./helpers.ts";

let dir: string;
const settings = { indexIntervalBytes: 100, segmentIndexBytes: 1024 };
beforeEach(() => (dir = tempDir()));
afterEach(() => removeDir(dir));

/** Appends `count` batches of 3 records with timestamps 1000, 2000, ... to `segment`. */
function appendBatches(segment: LogSegment, count: number): void {
  for (let i = 0; i < count; i++) {
    const timestamps = [0, 1, 2].map((r) => 1000 * i + r);
    const records = timestamps.map((timestampMs) => ({ value: new Uint8Array(30), timestampMs }));
    const bytes = buildRecordBatch(records);
    const validated = validateAndAssignOffsets(bytes, {
      leaderEpoch: -1,
      nextOffset: segment.nextOffset,
      maxMessageBytes: 1 << 20,
      segmentBytes: 1 << 30,
      logAppendTimeMs: null,
    });
    segment.append(bytes, validated.batches, settings.indexIntervalBytes);
  }
}

describe("LogSegment", () => {
  test("segment.jitter.ms rolls a segment up to its own random part of it before segment.ms", () => {
    const segment = LogSegment.create(dir, 0n, settings, new OpenFilePool(10));
    appendBatches(segment, 1); // first timestamp 0
    const rolls = (fraction: number, jitterMs: number) => {
      segment.rollJitterFraction = fraction;
      const config = { segmentBytes: 1 << 30, segmentMs: 10_000, segmentJitterMs: jitterMs };
      return segment.shouldRoll(10, 9_000n, 10n, config, 0);
    };
    expect(rolls(0.05, 0)).toBe(false); // no jitter: 9 s waited < 10 s
    expect(rolls(0.05, 10_000)).toBe(false); // 0.5 s off: 9 s < 9.5 s
    expect(rolls(0.2, 10_000)).toBe(true); // 2 s off: 9 s > 8 s
    expect(rolls(0.99, 50_000)).toBe(true); // jitter is capped at segment.ms
    expect(
      new Set(
        [1, 2, 3].map(
          () => LogSegment.create(dir, 9n, settings, new OpenFilePool(2)).rollJitterFraction,
        ),
      ).size,
    ).toBe(3);
    segment.close();
  });

  test("names its files by the 20-digit base offset", () => {
    expect(segmentFileStem(42n)).toBe("00000000000000000042");
    const segment = LogSegment.create(dir, 42n, settings, new OpenFilePool(10));
    expect(fs.existsSync(`${dir}/00000000000000000042.log`)).toBe(true);
    expect(fs.existsSync(`${dir}/00000000000000000042.index`)).toBe(true);
    expect(fs.existsSync(`${dir}/00000000000000000042.timeindex`)).toBe(true);
    segment.close();
  });

  test("appends, indexes every index.interval.bytes and translates offsets to batches", () => {
    const segment = LogSegment.create(dir, 100n, settings, new OpenFilePool(10));
    appendBatches(segment, 20);
    expect(segment.nextOffset).toBe(160n);
    expect(segment.offsetIndex().entries).toBeGreaterThan(5);
    for (const offset of [100n, 101n, 102n, 103n, 130n, 159n]) {
      const entry = segment.translateOffset(offset)!;
      expect(entry.baseOffset <= offset && offset <= entry.lastOffset).toBe(true);
    }
    expect(segment.translateOffset(160n)).toBeNull();
    expect(segment.maxTimestampAndOffset()).toEqual({ timestamp: 19_002n, offset: 159n });
    segment.close();
  });

  test("read returns whole batches bounded by maxBytes and maxOffset", () => {
    const segment = LogSegment.create(dir, 0n, settings, new OpenFilePool(10));
    appendBatches(segment, 10);
    const batchBytes = segment.sizeBytes / 10;
    const range = segment.read(4n, batchBytes * 2.5, 100n, true);
    expect(range).not.toBeNull();
    if (range === null || range === "empty") throw new Error("expected a range");
    expect(range.sizeBytes).toBe(batchBytes * 2);
    expect(batchOffsets(readRanges([range])).map((b) => b.base)).toEqual([3n, 6n]);
    range.release();
    expect(segment.read(4n, 1 << 20, 3n, true)).toBe("empty");
    const bounded = segment.read(0n, 1 << 20, 9n, true);
    if (bounded === null || bounded === "empty") throw new Error("expected a range");
    expect(bounded.sizeBytes).toBe(batchBytes * 3);
    bounded.release();
    segment.close();
  });

  test("findOffsetByTimestamp picks the first record at or after the time", () => {
    const segment = LogSegment.create(dir, 0n, settings, new OpenFilePool(10));
    appendBatches(segment, 10);
    expect(segment.findOffsetByTimestamp(5001n, 0n)).toEqual({ timestamp: 5001n, offset: 16n });
    expect(segment.findOffsetByTimestamp(5003n, 0n)).toEqual({ timestamp: 6000n, offset: 18n });
    expect(segment.findOffsetByTimestamp(0n, 7n)).toEqual({ timestamp: 2001n, offset: 7n });
    expect(segment.findOffsetByTimestamp(99_999n, 0n)).toBeNull();
    segment.close();
  });

  test("recover checks batches larger than its 1 MiB buffer piece by piece", () => {
    const segment = LogSegment.create(dir, 0n, settings, new OpenFilePool(10));
    const big = buildRecordBatch([{ value: new Uint8Array(3 * 1024 * 1024 + 5).fill(9) }]);
    for (let i = 0; i < 2; i++) {
      const bytes = big.slice();
      const validated = validateAndAssignOffsets(bytes, {
        leaderEpoch: -1,
        nextOffset: segment.nextOffset,
        maxMessageBytes: 1 << 30,
        segmentBytes: 1 << 30,
        logAppendTimeMs: null,
      });
      segment.append(bytes, validated.batches, settings.indexIntervalBytes);
    }
    segment.close();
    const file = `${dir}/${segmentFileStem(0n)}.log`;
    const intact = LogSegment.open(dir, 0n, 1n << 62n, new OpenFilePool(10));
    expect(intact.recover(settings)).toEqual({ truncatedBytes: 0, problem: null });
    expect(intact.nextOffset).toBe(2n);
    intact.close();
    const fd = fs.openSync(file, "r+");
    fs.writeSync(fd, new Uint8Array([0]), 0, 1, big.length * 2 - 10);
    fs.closeSync(fd);
    const flipped = LogSegment.open(dir, 0n, 1n << 62n, new OpenFilePool(10));
    const result = flipped.recover(settings);
    expect(result).toEqual({ truncatedBytes: big.length, problem: "CRC mismatch" });
    expect(fs.statSync(file).size).toBe(big.length);
    flipped.close();
  });

  test("recover truncates at the first invalid byte and rebuilds the indexes", () => {
    const segment = LogSegment.create(dir, 0n, settings, new OpenFilePool(10));
    appendBatches(segment, 10);
    segment.flush();
    const size = segment.sizeBytes;
    const indexBefore = fs.readFileSync(segment.indexPath);
    segment.close();
    fs.appendFileSync(`${dir}/${segmentFileStem(0n)}.log`, new Uint8Array(70).fill(1));
    const reopened = LogSegment.open(dir, 0n, 1n << 62n, new OpenFilePool(10));
    const result = reopened.recover(settings);
    expect(result.truncatedBytes).toBe(70);
    expect(result.problem).toContain("batch size 16843021");
    expect(reopened.sizeBytes).toBe(size);
    expect(reopened.nextOffset).toBe(30n);
    expect(fs.readFileSync(reopened.indexPath)).toEqual(indexBefore);
    reopened.close();
  });
});
