import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { ErrorCode, KafkaError } from "../../src/protocol/errors.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import type { LogConfig } from "../../src/storage/log-config.ts";
import { DEFAULT_LOG_CONFIG } from "../../src/storage/log-config.ts";
import { CLEAN_SHUTDOWN_FILE, LogManager } from "../../src/storage/log-manager.ts";
import {
  HIGH_WATERMARK_CHECKPOINT_FILE,
  LOG_START_OFFSET_CHECKPOINT_FILE,
  RECOVERY_POINT_CHECKPOINT_FILE,
} from "../../src/storage/offset-checkpoint-file.ts";
import type { UnifiedLog } from "../../src/storage/unified-log.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";
import { LineLogger } from "../support/line-logger.ts";
import { waitUntil } from "../support/wait-until.ts";
import { keyedBatch } from "./cleaner-support.ts";
import { batch, batchOffsets, readBytes, readRanges, removeDir, tempDir } from "./helpers.ts";

let dir: string;
let manager: LogManager;
let lines: string[];

function open(config: Partial<LogConfig> = {}, extra: { retentionCheckIntervalMs?: number } = {}) {
  lines = [];
  manager = LogManager.open({
    logDirs: [dir],
    defaultConfig: { ...DEFAULT_LOG_CONFIG, segmentBytes: 1000, ...config },
    logger: new LineLogger(lines),
    ...extra,
  });
  return manager;
}

function fill(log: UnifiedLog, count: number, timestampMs = Date.now()): void {
  for (let i = 0; i < count; i++) {
    log.appendAsLeader(batch(2, { valueBytes: 100, timestampMs }), -1);
  }
  log.highWatermark = log.logEndOffset;
}

function segmentFiles(log: UnifiedLog): string[] {
  return fs.readdirSync(log.dir).filter((n) => n.endsWith(".log"));
}

beforeEach(() => (dir = tempDir()));
afterEach(() => {
  manager.close();
  removeDir(dir);
});

describe("retention", () => {
  test("by time: old sealed segments go, log start moves, reads below fail", async () => {
    const log = open({ retentionMs: 60 * 60 * 1000 }).getOrCreateLog("t", 0);
    fill(log, 12, Date.now() - 2 * 60 * 60 * 1000);
    const oldBases = log.segmentBaseOffsets();
    fill(log, 8);
    const segmentsBefore = log.segmentCount;
    const deleted = manager.cleanupLogs();
    expect(deleted).toBe(oldBases.length);
    expect(log.segmentCount).toBe(segmentsBefore - deleted);
    expect(log.logStartOffset).toBe(log.segmentBaseOffsets()[0]);
    expect(log.logStartOffset).toBeGreaterThan(0n);
    try {
      log.read(0n, 1000, { maxOffset: log.highWatermark, minOneMessage: true });
      throw new Error("expected OFFSET_OUT_OF_RANGE");
    } catch (error) {
      expect((error as KafkaError).code).toBe(ErrorCode.OFFSET_OUT_OF_RANGE);
    }
    expect(batchOffsets(readBytes(log, log.logStartOffset, 1))[0].base).toBe(log.logStartOffset);
    await Bun.sleep(20);
    expect(segmentFiles(log)).toHaveLength(log.segmentCount);
    expect(lines.some((l) => l.includes("retention.ms"))).toBe(true);
  });

  test("by size: oldest segments go until the log fits retention.bytes; active one stays", () => {
    const log = open({ retentionBytes: 2500 }).getOrCreateLog("t", 0);
    fill(log, 30);
    const sizeBefore = log.sizeBytes;
    expect(manager.cleanupLogs()).toBeGreaterThan(0);
    // Kafka deletes a segment only if the log stays at or above retention.bytes without it, so
    // the log ends within one segment (1000 bytes here) above the limit.
    expect(log.sizeBytes).toBeLessThan(2500 + 1000);
    expect(log.sizeBytes).toBeGreaterThanOrEqual(2500);
    expect(log.sizeBytes).toBeLessThan(sizeBefore);
    manager.close();
    const tiny = open({ retentionBytes: 0 }).getOrCreateLog("u", 0);
    fill(tiny, 30);
    manager.cleanupLogs();
    expect(tiny.segmentCount).toBe(1);
    expect(tiny.logStartOffset).toBe(tiny.segmentBaseOffsets()[0]);
  });

  test("keeps segments that reach above the high watermark", () => {
    const log = open({ retentionBytes: 0 }).getOrCreateLog("t", 0);
    fill(log, 30);
    log.highWatermark = 0n;
    expect(manager.cleanupLogs()).toBe(0);
    log.highWatermark = log.segmentBaseOffsets()[2];
    expect(manager.cleanupLogs()).toBe(2);
  });

  test("compact-only topics are not deleted by retention", () => {
    const log = open({ retentionBytes: 0, cleanupPolicy: "compact" }).getOrCreateLog("t", 0);
    // Compacted topics take keyed records only.
    for (let i = 0; i < 30; i++) {
      const value = `value-${i}`.padEnd(200, ".");
      log.appendAsLeader(keyedBatch([{ key: `k${i}`, value }]), -1);
    }
    log.highWatermark = log.logEndOffset;
    expect(log.segmentCount).toBeGreaterThan(2);
    expect(manager.cleanupLogs()).toBe(0);
  });

  test("the background task applies retention; log start survives a restart", async () => {
    open({ retentionBytes: 1500 }, { retentionCheckIntervalMs: 10 });
    const log = manager.getOrCreateLog("t", 0);
    manager.startBackgroundTasks();
    fill(log, 30);
    await Bun.sleep(60);
    const start = log.logStartOffset;
    expect(start).toBeGreaterThan(0n);
    manager.close();
    const checkpoint = fs.readFileSync(path.join(dir, LOG_START_OFFSET_CHECKPOINT_FILE), "utf8");
    expect(checkpoint).toBe(`0\n1\nt 0 ${start}\n`);
    expect(open().getLog("t", 0)!.logStartOffset).toBe(start);
  });

  test("config changes at runtime take effect at the next pass", () => {
    const log = open().getOrCreateLog("t", 0);
    fill(log, 30);
    expect(manager.cleanupLogs()).toBe(0);
    log.updateConfig({ ...log.config, retentionBytes: 1000 });
    expect(manager.cleanupLogs()).toBeGreaterThan(0);
  });
});

describe("background flush and checkpoints", () => {
  test("flush.ms flushes in the background; the checkpoint has the flushed offset", async () => {
    manager = LogManager.open({
      logDirs: [dir],
      defaultConfig: { ...DEFAULT_LOG_CONFIG, flushMs: 20 },
      flushCheckIntervalMs: 5,
      checkpointIntervalMs: 5,
      logger: SILENT_LOGGER,
    });
    const log = manager.getOrCreateLog("t", 1);
    manager.startBackgroundTasks();
    fill(log, 3);
    expect(log.flushedOffset).toBe(0n);
    // The scheduler's turns are late on a loaded machine: wait for them, not for a fixed time.
    await waitUntil(() => log.flushedOffset === 6n, 20_000, "the background flush");
    const checkpoint = () =>
      fs.readFileSync(path.join(dir, RECOVERY_POINT_CHECKPOINT_FILE), "utf8");
    await waitUntil(() => checkpoint() === "0\n1\nt 1 6\n", 20_000, "the flushed checkpoint");
  });
});

describe("periodic checkpoints off the event loop", () => {
  test("the background checkpoint writes every checkpoint file", async () => {
    const log = open().getOrCreateLog("t", 0);
    fill(log, 3);
    log.flush();
    await manager.checkpointLogOffsetsInBackground();
    const read = (name: string) => fs.readFileSync(path.join(dir, name), "utf8");
    expect(read(RECOVERY_POINT_CHECKPOINT_FILE)).toBe("0\n1\nt 0 6\n");
    expect(read(LOG_START_OFFSET_CHECKPOINT_FILE)).toBe("0\n1\nt 0 0\n");
    expect(read(HIGH_WATERMARK_CHECKPOINT_FILE)).toBe("0\n1\nt 0 6\n");
    expect(fs.readdirSync(dir).filter((n) => n.endsWith(".tmp"))).toEqual([]);
  });

  test("a synchronous write made while a background one runs is not replaced by it", async () => {
    const log = open().getOrCreateLog("t", 0);
    fill(log, 3);
    const background = manager.checkpointLogOffsetsInBackground();
    // DeleteRecords moves the start and checkpoints it at once, before answering the client.
    expect(log.maybeIncrementLogStartOffset(4n, "test")).toBe(true);
    manager.checkpointLogStartOffsetsOf([log]);
    await background;
    const checkpoint = fs.readFileSync(path.join(dir, LOG_START_OFFSET_CHECKPOINT_FILE), "utf8");
    expect(checkpoint).toBe("0\n1\nt 0 4\n");
    expect(fs.readdirSync(dir).filter((n) => n.endsWith(".tmp"))).toEqual([]);
  });

  test("a period that finds the last checkpoint still writing shares it", () => {
    open().getOrCreateLog("t", 0);
    const first = manager.checkpointLogOffsetsInBackground();
    expect(manager.checkpointLogOffsetsInBackground()).toBe(first);
    return first;
  });
});

describe("log management", () => {
  test("deleting a partition renames its dir at once, removes it in background", async () => {
    const log = open().getOrCreateLog("gone", 2);
    fill(log, 10);
    const { ranges } = log.read(0n, 1 << 20, { maxOffset: log.logEndOffset, minOneMessage: true });
    const deleting = manager.deleteLog("gone", 2);
    expect(manager.getLog("gone", 2)).toBeUndefined();
    expect(fs.existsSync(path.join(dir, "gone-2"))).toBe(false);
    await deleting;
    expect(fs.readdirSync(dir).filter((n) => n.startsWith("gone"))).toEqual([]);
    // The fetch that was in flight still reads its bytes from the open fd.
    expect(batchOffsets(readRanges(ranges))[0].base).toBe(0n);
    ranges[0].release();
  });

  test("leftover -delete dirs are removed at startup; new logs spread over log dirs", async () => {
    fs.mkdirSync(path.join(dir, "old-0.abc123-delete"));
    const second = tempDir();
    lines = [];
    manager = LogManager.open({ logDirs: [dir, second], logger: new LineLogger(lines) });
    for (let p = 0; p < 4; p++) manager.getOrCreateLog("spread", p);
    expect(fs.readdirSync(second).filter((n) => n.startsWith("spread"))).toHaveLength(2);
    await Bun.sleep(20);
    expect(fs.existsSync(path.join(dir, "old-0.abc123-delete"))).toBe(false);
    manager.close();
    removeDir(second);
  });

  test("openAsync (the broker's) loads what open loads, from listings made beforehand", async () => {
    const loaded = (m: LogManager) =>
      [...m.allLogs()]
        .map(
          (l) => `${l.name}:${l.logEndOffset}:${l.segmentCount}:${l.producerState.producerCount}`,
        )
        .sort();
    open();
    for (let p = 0; p < 3; p++) {
      const log = manager.getOrCreateLog("t", p);
      fill(log, 6 + p);
      const records = buildRecordBatch([{ key: null, value: new Uint8Array(8) }], {
        producerId: 40n + BigInt(p),
        producerEpoch: 0,
        baseSequence: 0,
      });
      log.appendAsLeader(records, -1);
    }
    const before = loaded(manager);
    const t1 = manager.getLog("t", 1)!.dir;
    await manager.closeAsync();
    expect(fs.existsSync(path.join(dir, CLEAN_SHUTDOWN_FILE))).toBe(true);
    fs.writeFileSync(path.join(t1, "00000000000000000000.log.deleted"), "x");
    fs.mkdirSync(path.join(dir, "gone-0.0123abcd-delete"));
    manager = await LogManager.openAsync({
      logDirs: [dir],
      defaultConfig: { ...DEFAULT_LOG_CONFIG, segmentBytes: 1000 },
      logger: new LineLogger(lines),
    });
    expect(loaded(manager)).toEqual(before);
    expect(before.every((l) => !l.endsWith(":0"))).toBe(true);
    expect(fs.existsSync(path.join(t1, "00000000000000000000.log.deleted"))).toBe(false);
    expect(fs.existsSync(path.join(dir, CLEAN_SHUTDOWN_FILE))).toBe(false);
    const log = manager.getLog("t", 2)!;
    const end = log.logEndOffset;
    expect(log.appendAsLeader(batch(1), -1).baseOffset).toBe(end);
  });

  test("openAsync reads small files ahead; cut or corrupt ones are still rebuilt or skipped", async () => {
    open({ segmentBytes: 100_000, indexIntervalBytes: 1 });
    const ends: bigint[] = [];
    for (let p = 0; p < 4; p++) {
      const log = manager.getOrCreateLog("pre", p);
      for (let i = 0; i < 5; i++) log.appendAsLeader(batch(2, { valueBytes: 100 }), 0);
      const records = buildRecordBatch([{ key: null, value: new Uint8Array(8) }], {
        producerId: 70n + BigInt(p),
        producerEpoch: 0,
        baseSequence: 0,
      });
      log.appendAsLeader(records, 0);
      log.highWatermark = log.logEndOffset;
      ends.push(log.logEndOffset);
    }
    const dirOf = (p: number) => manager.getLog("pre", p)!.dir;
    const dirs = [0, 1, 2, 3].map(dirOf);
    await manager.closeAsync();
    const stem = "00000000000000000000";
    const snapshot = fs.readdirSync(dirs[3]!).find((n) => n.endsWith(".snapshot"))!;
    // 0: index cut mid-entry; 1: time index going backwards; 2: epochs garbled; 3: snapshot cut.
    fs.truncateSync(path.join(dirs[0]!, `${stem}.index`), 13);
    const timeIndex = path.join(dirs[1]!, `${stem}.timeindex`);
    const entries = fs.readFileSync(timeIndex);
    fs.writeFileSync(timeIndex, Buffer.concat([entries, entries.subarray(0, 12)]));
    fs.writeFileSync(path.join(dirs[2]!, "leader-epoch-checkpoint"), "0\n5\n0 0\n");
    fs.truncateSync(path.join(dirs[3]!, snapshot), 7);
    lines = [];
    manager = await LogManager.openAsync({
      logDirs: [dir],
      defaultConfig: { ...DEFAULT_LOG_CONFIG, segmentBytes: 100_000, indexIntervalBytes: 1 },
      logger: new LineLogger(lines),
    });
    const logs = [0, 1, 2, 3].map((p) => manager.getLog("pre", p)!);
    expect(logs.map((l) => l.logEndOffset)).toEqual(ends);
    expect(lines.filter((l) => l.includes("rebuilding indexes"))).toHaveLength(2);
    expect(lines.some((l) => l.includes("ignoring malformed") && l.includes("pre-2"))).toBe(true);
    expect(lines.some((l) => l.includes(`skipping producer snapshot`))).toBe(true);
    // Untouched files were used as read ahead: epochs and producers as written.
    expect(logs[3]!.leaderEpochCache.latestEpoch).toBe(0);
    expect(logs[0]!.producerState.producerCount).toBe(1);
    // Producer 73's state came back by replaying the log instead of the cut snapshot.
    expect(logs[3]!.producerState.producerCount).toBe(1);
    for (const log of logs) {
      // Batches of two: offset 4 starts the third, found through the (rebuilt) offset index.
      expect(batchOffsets(readBytes(log, 4n, 1_000_000))[0]!.base).toBe(4n);
      const end = log.logEndOffset;
      expect(log.appendAsLeader(batch(1), 0).baseOffset).toBe(end);
    }
  });

  test("createLogs makes one .log per new log off the event loop; index files come with data", async () => {
    const second = tempDir();
    lines = [];
    manager = LogManager.open({ logDirs: [dir, second], logger: new LineLogger(lines) });
    await manager.createLogs("bulk", [0, 1, 2, 3]);
    expect(fs.readdirSync(second).filter((n) => n.startsWith("bulk"))).toHaveLength(2);
    const written = manager.getLog("bulk", 0)!;
    const empty = manager.getLog("bulk", 1)!;
    expect(fs.readdirSync(written.dir)).toEqual(["00000000000000000000.log"]);
    // A request that creates the log synchronously meanwhile wins, and nothing truncates it.
    const racing = manager.createLogs("race", [0]);
    const early = manager.getOrCreateLog("race", 0);
    early.appendAsLeader(batch(3), 0);
    await racing;
    expect(manager.getLog("race", 0)).toBe(early);
    written.appendAsLeader(batch(2), 0);
    await manager.closeAsync();
    expect(fs.readdirSync(written.dir).sort()).toContain("00000000000000000000.timeindex");
    expect(fs.readdirSync(written.dir)).toContain("00000000000000000000.index");
    expect(fs.readdirSync(empty.dir)).toEqual(["00000000000000000000.log"]);
    lines = [];
    manager = LogManager.open({ logDirs: [dir, second], logger: new LineLogger(lines) });
    expect(manager.getLog("race", 0)!.logEndOffset).toBe(3n);
    expect(manager.getLog("bulk", 0)!.logEndOffset).toBe(2n);
    expect(manager.getLog("bulk", 1)!.logEndOffset).toBe(0n);
    expect(lines.filter((l) => /rebuild|recover|truncat/i.test(l))).toEqual([]);
    manager.close();
    removeDir(second);
  });

  test("illegal topic names and partitions are refused", () => {
    open();
    for (const [topic, partition] of [
      ["../x", 0],
      ["a/b", 0],
      ["..", 0],
      ["ok", -1],
    ] as const) {
      expect(() => manager.getOrCreateLog(topic, partition)).toThrow(KafkaError);
    }
  });
});
