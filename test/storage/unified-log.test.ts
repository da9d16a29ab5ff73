import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { ErrorCode, KafkaError } from "../../src/protocol/errors.ts";
import {
  buildRecordBatch,
  decodeRecords,
  verifyBatchCrc,
} from "../../src/protocol/record-batch.ts";
import type { LogConfig } from "../../src/storage/log-config.ts";
import { DEFAULT_LOG_CONFIG } from "../../src/storage/log-config.ts";
import { LogManager } from "../../src/storage/log-manager.ts";
import type { UnifiedLog } from "../../src/storage/unified-log.ts";
import {
  EARLIEST_TIMESTAMP,
  LATEST_TIMESTAMP,
  MAX_TIMESTAMP,
} from "../../src/storage/unified-log.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";
import { waitUntil } from "../support/wait-until.ts";
import { batch, batchOffsets, readBytes, readRanges, removeDir, tempDir } from "./helpers.ts";

let dir: string;
let manager: LogManager;
const silent = SILENT_LOGGER;

function open(config: Partial<LogConfig> = {}): UnifiedLog {
  manager = LogManager.open({
    logDirs: [dir],
    defaultConfig: { ...DEFAULT_LOG_CONFIG, ...config },
    logger: silent,
  });
  return manager.getOrCreateLog("orders", 0);
}

function reopen(config: Partial<LogConfig> = {}): UnifiedLog {
  manager.close();
  return open(config);
}

function expectKafkaError(fn: () => unknown, code: number): void {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(KafkaError);
    expect((error as KafkaError).code).toBe(code);
    return;
  }
  throw new Error(`expected KafkaError ${code}`);
}

beforeEach(() => (dir = tempDir()));
afterEach(() => {
  manager.close();
  removeDir(dir);
});

describe("append", () => {
  test("assigns consecutive offsets by patching base offsets and reports them", () => {
    const log = open();
    const first = log.appendAsLeader(batch(3), -1);
    const second = log.appendAsLeader(batch(2), -1);
    expect([first.baseOffset, first.lastOffset, first.recordCount]).toEqual([0n, 2n, 3]);
    expect([second.baseOffset, second.lastOffset]).toEqual([3n, 4n]);
    expect(second.logAppendTimeMs).toBe(-1);
    expect(log.logEndOffset).toBe(5n);
    const stored = readBytes(log, 0n, 1 << 20);
    expect(batchOffsets(stored)).toEqual([
      { base: 0n, last: 2n },
      { base: 3n, last: 4n },
    ]);
    expect(verifyBatchCrc(stored, 0)).toBe(true);
  });

  test("stores the bytes exactly as sent apart from the base offset", () => {
    const log = open();
    log.appendAsLeader(batch(1), -1);
    const sent = batch(4, { valueBytes: 100 });
    const copy = sent.slice();
    log.appendAsLeader(sent, -1);
    const stored = readBytes(log, 1n, 1 << 20);
    expect(stored.subarray(8)).toEqual(copy.subarray(8));
    expect(new DataView(stored.buffer).getBigInt64(0)).toBe(1n);
  });

  test("rejects a CRC mismatch with CORRUPT_MESSAGE and writes nothing", () => {
    const log = open();
    const bad = batch(2);
    bad[bad.length - 1] ^= 0xff;
    expectKafkaError(() => log.appendAsLeader(bad, -1), ErrorCode.CORRUPT_MESSAGE);
    const truncated = batch(2).subarray(0, 40);
    const appendTruncated = () => log.appendAsLeader(truncated, -1);
    expectKafkaError(appendTruncated, ErrorCode.CORRUPT_MESSAGE);
    expect(log.logEndOffset).toBe(0n);
    expect(log.sizeBytes).toBe(0);
  });

  test("rejects batches above max.message.bytes and appends above segment.bytes", () => {
    const log = open({ maxMessageBytes: 500, segmentBytes: 4000 });
    const big = batch(1, { valueBytes: 600 });
    expectKafkaError(() => log.appendAsLeader(big, -1), ErrorCode.MESSAGE_TOO_LARGE);
    const ok = log.appendAsLeader(big, -1, { maxMessageBytes: 1000 });
    expect(ok.baseOffset).toBe(0n);
    const parts = Array.from({ length: 10 }, () => batch(1, { valueBytes: 400 }));
    const many = new Uint8Array(Buffer.concat(parts));
    const appendMany = () => log.appendAsLeader(many, -1);
    expectKafkaError(appendMany, ErrorCode.RECORD_LIST_TOO_LARGE);
  });

  test("LogAppendTime topics get the broker's time stamped into the batch", () => {
    const log = open({ messageTimestampType: "LogAppendTime" });
    const result = log.appendAsLeader(batch(2, { timestampMs: 1000 }), -1, {
      logAppendTimeMs: 1_700_000_000_000,
    });
    expect(result.logAppendTimeMs).toBe(1_700_000_000_000);
    const stored = readBytes(log, 0n, 1 << 20);
    expect(new DataView(stored.buffer).getBigInt64(35)).toBe(1_700_000_000_000n);
    expect(verifyBatchCrc(stored, 0)).toBe(true);
    const found = log.offsetForTimestamp(1_600_000_000_000n);
    expect(found).toEqual({ timestamp: 1_700_000_000_000n, offset: 0n });
  });

  test("a follower append keeps the leader's offsets and refuses going backwards", () => {
    const log = open();
    log.appendAsFollower(buildRecordBatch([{ value: null }], { baseOffset: 10n }));
    expect(log.logEndOffset).toBe(11n);
    const old = buildRecordBatch([{ value: null }], { baseOffset: 5n });
    expectKafkaError(() => log.appendAsFollower(old), ErrorCode.INVALID_RECORD);
  });

  test("a follower's offset jump beyond int32 of the segment base rolls a new segment", () => {
    const log = open();
    const at = (baseOffset: bigint) => buildRecordBatch([{ value: null }], { baseOffset });
    // An empty active segment is replaced, not kept empty behind the new one.
    log.appendAsFollower(at(5_000_000_000n));
    expect(log.segmentBaseOffsets()).toEqual([5_000_000_000n]);
    log.appendAsFollower(at(5_000_000_001n));
    log.appendAsFollower(at(9_000_000_000n));
    expect(log.segmentBaseOffsets()).toEqual([5_000_000_000n, 9_000_000_000n]);
    expect(log.logEndOffset).toBe(9_000_000_001n);
    log.highWatermark = log.logEndOffset;
    const fromGap = batchOffsets(readBytes(log, 6_000_000_000n, 1 << 20));
    expect(fromGap[0].base).toBe(9_000_000_000n);
    expect(batchOffsets(readBytes(log, 5_000_000_001n, 1 << 20))[0].base).toBe(5_000_000_001n);
  });
});

describe("read", () => {
  function fill(log: UnifiedLog, batches: number, perBatch = 5, valueBytes = 50): void {
    for (let i = 0; i < batches; i++) {
      log.appendAsLeader(batch(perBatch, { valueBytes }), -1);
    }
  }

  test("a fetch offset in the middle of a batch starts at that batch", () => {
    const log = open({ indexIntervalBytes: 100 });
    fill(log, 50);
    for (const offset of [0n, 1n, 4n, 5n, 123n, 249n]) {
      const first = batchOffsets(readBytes(log, offset, 1))[0];
      expect(first.base <= offset && offset <= first.last).toBe(true);
    }
  });

  test("returns whole batches within maxBytes, or the first one alone with minOneMessage", () => {
    const log = open({ indexIntervalBytes: 100 });
    fill(log, 50);
    const batchBytes = readBytes(log, 0n, 1).length;
    const bytes = readBytes(log, 10n, batchBytes * 3 + batchBytes - 1);
    expect(bytes.length).toBe(batchBytes * 3);
    expect(batchOffsets(bytes).map((b) => b.base)).toEqual([10n, 15n, 20n]);
    expect(readBytes(log, 10n, 5, log.logEndOffset, true).length).toBe(batchBytes);
    expect(readBytes(log, 10n, 5, log.logEndOffset, false).length).toBe(0);
  });

  test("never returns a batch at or above maxOffset (the high watermark)", () => {
    const log = open({ indexIntervalBytes: 100 });
    fill(log, 50);
    const bytes = readBytes(log, 0n, 1 << 20, 100n);
    const offsets = batchOffsets(bytes);
    expect(offsets[offsets.length - 1].last).toBe(99n);
    expect(readBytes(log, 100n, 1 << 20, 100n).length).toBe(0);
    expect(readBytes(log, 97n, 1 << 20, 97n).length).toBe(0);
  });

  test("reads stay inside one segment and continue in the next", () => {
    const log = open({ segmentBytes: 2000 });
    fill(log, 40);
    expect(log.segmentCount).toBeGreaterThan(3);
    let offset = 0n;
    let batches = 0;
    while (offset < log.logEndOffset) {
      const offsets = batchOffsets(readBytes(log, offset, 1 << 20));
      expect(offsets[0].base).toBe(offset);
      offset = offsets[offsets.length - 1].last + 1n;
      batches += offsets.length;
    }
    expect(batches).toBe(40);
  });

  test("OFFSET_OUT_OF_RANGE above the log end; the log end itself reads empty", () => {
    const log = open();
    fill(log, 2);
    expect(readBytes(log, 10n, 100).length).toBe(0);
    const opts = { maxOffset: 100n, minOneMessage: true };
    expectKafkaError(() => log.read(11n, 100, opts), ErrorCode.OFFSET_OUT_OF_RANGE);
    expectKafkaError(() => log.read(-1n, 100, opts), ErrorCode.OFFSET_OUT_OF_RANGE);
  });

  test("file.delete.delay.ms: a deleted segment is renamed .deleted, its files removed later", async () => {
    const log = open({ segmentBytes: 1000, retentionBytes: 0, fileDeleteDelayMs: 400 });
    fill(log, 20);
    log.highWatermark = log.logEndOffset;
    const logDir = path.join(dir, "orders-0");
    const names = () => fs.readdirSync(logDir);
    expect(names()).toContain("00000000000000000000.log");
    expect(log.deleteOldSegments(Date.now())).toBeGreaterThan(0);
    expect(names()).not.toContain("00000000000000000000.log");
    expect(names()).toContain("00000000000000000000.log.deleted");
    await Bun.sleep(150);
    expect(names()).toContain("00000000000000000000.log.deleted");
    await Bun.sleep(700);
    expect(names().filter((n) => n.endsWith(".deleted"))).toEqual([]);
  });

  test("a FileRange keeps its fd readable after its segment is deleted", () => {
    const log = open({ segmentBytes: 1000, retentionBytes: 0 });
    fill(log, 20);
    const { ranges } = log.read(0n, 1 << 20, { maxOffset: log.logEndOffset, minOneMessage: true });
    log.highWatermark = log.logEndOffset;
    expect(log.deleteOldSegments(Date.now())).toBeGreaterThan(0);
    expect(log.logStartOffset).toBeGreaterThan(0n);
    const bytes = readRanges(ranges);
    expect(batchOffsets(bytes)[0].base).toBe(0n);
    ranges[0].release();
    expect(() => ranges[0].release()).toThrow();
    const opts = { maxOffset: log.logEndOffset, minOneMessage: true };
    const readDeleted = () => log.read(0n, 100, opts);
    expectKafkaError(readDeleted, ErrorCode.OFFSET_OUT_OF_RANGE);
  });

  test("open fds stay under the pool limit while reading many sealed segments", async () => {
    manager = LogManager.open({
      logDirs: [dir],
      defaultConfig: { ...DEFAULT_LOG_CONFIG, segmentBytes: 600 },
      maxOpenSegmentFiles: 4,
      logger: silent,
    });
    const log = manager.getOrCreateLog("orders", 0);
    fill(log, 30);
    // The flushes started by each roll hold their segment's fd until fdatasync returns.
    await log.flushAsync();
    expect(log.segmentCount).toBeGreaterThan(10);
    for (let offset = 0n; offset < log.logEndOffset; offset += 5n) readBytes(log, offset, 100);
    expect(manager.openSegmentFiles).toBeLessThanOrEqual(4);
  });
});

describe("roll", () => {
  test("rolls at segment.bytes with segments named by their base offset", () => {
    const log = open({ segmentBytes: 1000 });
    for (let i = 0; i < 10; i++) log.appendAsLeader(batch(5, { valueBytes: 50 }), -1);
    const bases = log.segmentBaseOffsets();
    expect(bases.length).toBeGreaterThan(2);
    const partitionDir = path.join(dir, "orders-0");
    const names = fs
      .readdirSync(partitionDir)
      .filter((n) => n.endsWith(".log"))
      .sort();
    expect(names).toEqual(bases.map((b) => `${b.toString().padStart(20, "0")}.log`));
    for (const name of names) {
      expect(fs.statSync(path.join(partitionDir, name)).size).toBeLessThanOrEqual(1000);
    }
  });

  test("rolls when the incoming timestamps are segment.ms past the segment's first batch", () => {
    const log = open({ segmentMs: 60_000 });
    log.appendAsLeader(batch(1, { timestampMs: 1_000_000 }), -1);
    log.appendAsLeader(batch(1, { timestampMs: 1_050_000 }), -1);
    expect(log.segmentCount).toBe(1);
    log.appendAsLeader(batch(1, { timestampMs: 1_070_000 }), -1);
    expect(log.segmentBaseOffsets()).toEqual([0n, 2n]);
  });

  test("rolls when the offset index is full", () => {
    const log = open({ segmentIndexBytes: 8 * 3, indexIntervalBytes: 0 });
    for (let i = 0; i < 10; i++) log.appendAsLeader(batch(1), -1);
    // Three offset entries, but the time index (24 / 12 = 2 slots, one kept for sealing) fills
    // at the first indexed batch, so each segment holds two batches.
    expect(log.segmentBaseOffsets()).toEqual([0n, 2n, 4n, 6n, 8n]);
    for (let offset = 0n; offset < 10n; offset++) {
      expect(batchOffsets(readBytes(log, offset, 1))[0].base).toBe(offset);
    }
  });
});

describe("offsetForTimestamp", () => {
  test("finds the first record at or after a time, across segments and inside batches", () => {
    const log = open({ segmentBytes: 700, indexIntervalBytes: 100 });
    const records = (t: number) => [0, 1, 2].map((i) => ({ value: null, timestampMs: t + i * 10 }));
    for (let i = 0; i < 20; i++) {
      log.appendAsLeader(buildRecordBatch(records(1000 * i)), -1);
    }
    expect(log.segmentCount).toBeGreaterThan(2);
    expect(log.offsetForTimestamp(0n)).toEqual({ timestamp: 0n, offset: 0n });
    expect(log.offsetForTimestamp(5005n)).toEqual({ timestamp: 5010n, offset: 16n });
    expect(log.offsetForTimestamp(5021n)).toEqual({ timestamp: 6000n, offset: 18n });
    expect(log.offsetForTimestamp(19_021n)).toBeNull();
    expect(log.offsetForTimestamp(MAX_TIMESTAMP)).toEqual({ timestamp: 19_020n, offset: 59n });
    expect(log.offsetForTimestamp(EARLIEST_TIMESTAMP)?.offset).toBe(0n);
    expect(log.offsetForTimestamp(LATEST_TIMESTAMP)?.offset).toBe(60n);
    const reopened = reopen({ segmentBytes: 700, indexIntervalBytes: 100 });
    expect(reopened.offsetForTimestamp(5005n)).toEqual({ timestamp: 5010n, offset: 16n });
    expect(reopened.offsetForTimestamp(MAX_TIMESTAMP)).toEqual({ timestamp: 19_020n, offset: 59n });
  });

  test("decodes the found batch to pick the exact record", () => {
    const log = open();
    const records = [10, 20, 30].map((t) => ({ value: null, timestampMs: t }));
    log.appendAsLeader(buildRecordBatch(records), -1);
    expect(log.offsetForTimestamp(15n)).toEqual({ timestamp: 20n, offset: 1n });
    const stored = readBytes(log, 0n, 1000);
    expect(decodeRecords(stored).length).toBe(3);
  });
});

describe("flush and reopen", () => {
  test("flush moves the flushed offset; close and reopen keep everything", () => {
    const log = open({ segmentBytes: 1000 });
    for (let i = 0; i < 12; i++) log.appendAsLeader(batch(5, { valueBytes: 50 }), -1);
    log.flush();
    expect(log.flushedOffset).toBe(60n);
    log.appendAsLeader(batch(5), -1);
    const before = readBytes(log, 0n, 1 << 24);
    const reopened = reopen({ segmentBytes: 1000 });
    expect(reopened.logEndOffset).toBe(65n);
    expect(reopened.flushedOffset).toBe(65n);
    let all = new Uint8Array(0);
    for (let offset = 0n; offset < reopened.logEndOffset; ) {
      const bytes = readBytes(reopened, offset, 1 << 24);
      all = new Uint8Array([...all, ...bytes]);
      const offsets = batchOffsets(bytes);
      offset = offsets[offsets.length - 1].last + 1n;
    }
    expect(all.length).toBe(reopened.sizeBytes);
    expect(Buffer.from(all.subarray(0, before.length))).toEqual(Buffer.from(before));
    expect(reopened.appendAsLeader(batch(1), -1).baseOffset).toBe(65n);
  });

  test("flush.messages flushes in the background after that many records", async () => {
    const log = open({ flushMessages: 10 });
    log.appendAsLeader(batch(5), -1);
    log.appendAsLeader(batch(4), -1);
    await Bun.sleep(50);
    expect(log.flushedOffset).toBe(0n);
    log.appendAsLeader(batch(1), -1);
    // The flush runs off the event loop: wait for it, however loaded the machine is.
    await waitUntil(() => log.flushedOffset === 10n, 20_000, "the flush.messages flush");
  });
});
