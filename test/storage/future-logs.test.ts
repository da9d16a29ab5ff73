/**
 * Future logs (KIP-113) in the LogManager: their `<topic>-<partition>.<uuid>-future` directory,
 * the swap that makes one current (same offsets, bytes, epochs and producer state, the old
 * log renamed `-delete`), and what a restart finds: a future with a torn tail after a crash is
 * recovered to its last whole batch, one that cannot be loaded is replaced by an empty one, and
 * one without its partition's log is deleted.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { DEFAULT_LOG_CONFIG } from "../../src/storage/log-config.ts";
import { LogManager } from "../../src/storage/log-manager.ts";
import type { UnifiedLog } from "../../src/storage/unified-log.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";
import { batch, batchOffsets, readBytes, removeDir, tempDir } from "./helpers.ts";

let root: string;
let dirs: string[];
let manager: LogManager | null;

const open = () =>
  (manager = LogManager.open({
    logDirs: dirs,
    defaultConfig: { ...DEFAULT_LOG_CONFIG, segmentBytes: 4_000 },
    logger: SILENT_LOGGER,
  }));

beforeEach(() => {
  root = tempDir();
  dirs = [path.join(root, "a"), path.join(root, "b")];
});
afterEach(() => {
  manager?.close();
  manager = null;
  removeDir(root);
});

function readAllBytes(log: UnifiedLog): Buffer {
  const parts: Uint8Array[] = [];
  for (let at = log.logStartOffset; at < log.logEndOffset; ) {
    const bytes = readBytes(log, at, 1 << 20);
    parts.push(bytes);
    const offsets = batchOffsets(bytes);
    at = offsets[offsets.length - 1]!.last + 1n;
  }
  return Buffer.concat(parts);
}

const entries = (dir: string) => fs.readdirSync(dir).filter((n) => n.startsWith("t-0"));

/** A log in dir a with 30 batches over epochs 3 and 5, and its empty future in dir b. */
function logWithFuture(m: LogManager) {
  const log = m.getOrCreateLog("t", 0);
  expect(m.logDirOf(log)).toBe(dirs[0]!);
  for (let i = 0; i < 30; i++) log.appendAsLeader(batch(3, { valueBytes: 100 }), i < 20 ? 3 : 5);
  log.highWatermark = log.logEndOffset;
  const future = m.createFutureLog("t", 0, dirs[1]!);
  expect(entries(dirs[1]!)[0]).toMatch(/^t-0\.[0-9a-f]{32}-future$/);
  return { log, future };
}

test("the swap: same bytes, offsets, epochs and producer state; the old log is deleted", () => {
  const m = open();
  const { log, future } = logWithFuture(m);
  log.leaderEpochCache.assign(6, log.logEndOffset);
  // An idempotent producer's batch, then retention past it: the current log still knows the
  // producer (until it expires), a copy made from the log start on would not.
  const records = [{ key: null, value: new TextEncoder().encode("idempotent") }];
  log.appendAsLeader(
    buildRecordBatch(records, { producerId: 7n, producerEpoch: 0, baseSequence: 0 }),
    6,
  );
  log.appendAsLeader(batch(3, { valueBytes: 100 }), 6);
  log.highWatermark = log.logEndOffset;
  log.maybeIncrementLogStartOffset(91n, "test");
  future.truncateFullyAndStartAt(log.logStartOffset);
  while (future.logEndOffset < log.logEndOffset) {
    future.appendAsFollower(readBytes(log, future.logEndOffset, 1 << 20).slice());
  }
  const bytes = readAllBytes(log);
  const swapped = m.replaceCurrentWithFutureLog("t", 0)!;
  expect(m.getLog("t", 0)).toBe(swapped);
  expect(m.getFutureLog("t", 0)).toBeUndefined();
  expect(m.logDirOf(swapped)).toBe(dirs[1]!);
  expect(swapped.dir).toBe(path.join(dirs[1]!, "t-0"));
  expect(readAllBytes(swapped)).toEqual(bytes);
  expect(swapped.logStartOffset).toBe(91n);
  expect(swapped.producerState.entry(7n)?.lastSeq).toBe(0);
  expect(swapped.leaderEpochCache.all()).toEqual([
    { epoch: 3, startOffset: 0n },
    { epoch: 5, startOffset: 60n },
    { epoch: 6, startOffset: 90n },
  ]);
  expect(swapped.highWatermark).toBe(94n);
  expect(entries(dirs[1]!)).toEqual(["t-0"]);
  expect(entries(dirs[0]!).every((n) => n.endsWith("-delete"))).toBe(true);
  m.close();
  // After a restart: one log, in the new dir.
  const reopened = open();
  expect(reopened.logDirOf(reopened.getLog("t", 0)!)).toBe(dirs[1]!);
  expect(reopened.getLog("t", 0)!.logEndOffset).toBe(94n);
  expect(reopened.getLog("t", 0)!.producerState.entry(7n)?.lastSeq).toBe(0);
  expect(reopened.allFutureLogs()).toEqual([]);
});

test("a crash mid-copy: the future is recovered to its last whole batch and kept", () => {
  const m = open();
  const { log, future } = logWithFuture(m);
  future.appendAsFollower(readBytes(log, 0n, 2_000).slice());
  const copiedTo = future.logEndOffset;
  expect(copiedTo).toBeGreaterThan(0n);
  // kill -9: no close, no clean-shutdown marker; then the last append is torn.
  const segment = fs.readdirSync(future.dir).filter((n) => n.endsWith(".log"))[0]!;
  const segmentPath = path.join(future.dir, segment);
  fs.appendFileSync(segmentPath, readBytes(log, copiedTo, 2_000).subarray(0, 50));
  manager = null;
  const reopened = open();
  const found = reopened.getFutureLog("t", 0)!;
  expect(found.logEndOffset).toBe(copiedTo);
  expect(reopened.logDirOf(found)).toBe(dirs[1]!);
  expect(reopened.getLog("t", 0)!.logEndOffset).toBe(90n);
});

test("a future that cannot be loaded is replaced by an empty one in the same dir", () => {
  const m = open();
  const { future } = logWithFuture(m);
  const futureDir = future.dir;
  m.close();
  // Its first segment replaced by a directory: loading it fails.
  const segment = path.join(futureDir, fs.readdirSync(futureDir).find((n) => n.endsWith(".log"))!);
  fs.rmSync(segment);
  fs.mkdirSync(segment);
  const reopened = open();
  const fresh = reopened.getFutureLog("t", 0)!;
  expect(fresh.logEndOffset).toBe(0n);
  expect(fresh.dir).not.toBe(futureDir);
  expect(reopened.logDirOf(fresh)).toBe(dirs[1]!);
});

test("a future without its partition's log is deleted at start", () => {
  const m = open();
  const { future } = logWithFuture(m);
  const futureDir = future.dir;
  m.close();
  fs.rmSync(path.join(dirs[0]!, "t-0"), { recursive: true });
  const reopened = open();
  expect(reopened.getFutureLog("t", 0)).toBeUndefined();
  expect(reopened.getLog("t", 0)).toBeUndefined();
  expect(fs.existsSync(futureDir)).toBe(false);
});

test("a failing dir during a move: the future's ends the move, the current's the partition", () => {
  const m = open();
  const failed: string[][] = [];
  m.onLogDirFailure((_dir, partitions) => failed.push(partitions.map((p) => p.topic)));
  logWithFuture(m);
  m.failLogDir(dirs[1]!, Object.assign(new Error("EIO"), { code: "EIO" }));
  expect(m.getFutureLog("t", 0)).toBeUndefined();
  expect(m.getLog("t", 0)!.logEndOffset).toBe(90n);
  expect(failed).toEqual([[]]);
  m.close();
  removeDir(dirs[1]!);

  const second = open();
  second.onLogDirFailure((_dir, partitions) => failed.push(partitions.map((p) => p.topic)));
  second.createFutureLog("t", 0, dirs[1]!);
  second.failLogDir(dirs[0]!, Object.assign(new Error("EIO"), { code: "EIO" }));
  expect(second.getLog("t", 0)).toBeUndefined();
  expect(second.isOfflinePartition("t", 0)).toBe(true);
  expect(second.getFutureLog("t", 0)).toBeUndefined();
  expect(failed).toEqual([[], ["t"]]);
});

test("the cleaner leaves a moving log alone until the move ends", () => {
  const m = (manager = LogManager.open({
    logDirs: dirs,
    defaultConfig: { ...DEFAULT_LOG_CONFIG, segmentBytes: 1_000, cleanupPolicy: "compact" },
    logger: SILENT_LOGGER,
  }));
  const log = m.getOrCreateLog("t", 0);
  const keyed = [{ key: new TextEncoder().encode("k"), value: new TextEncoder().encode("v") }];
  for (let i = 0; i < 40; i++) log.appendAsLeader(buildRecordBatch(keyed), 0);
  log.highWatermark = log.logEndOffset;
  expect(m.cleaner.grabFilthiestLog(Date.now())?.log).toBe(log);
  m.createFutureLog("t", 0, dirs[1]!);
  expect(m.cleaner.grabFilthiestLog(Date.now())).toBeNull();
  m.removeFutureLog("t", 0);
  expect(m.cleaner.grabFilthiestLog(Date.now())?.log).toBe(log);
});
