/**
 * The crash states of a cleaner swap (segment-swap.ts), built on real files: a log is cleaned
 * in one directory, and a copy of its dirty state gets the cleaned files under the names each
 * step of the swap leaves. Loading the copy must give the dirty log back (before the swap
 * point) or exactly the cleaned one (after it).
 */

import { afterEach, beforeEach, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { DEFAULT_LOG_CONFIG } from "../../src/storage/log-config.ts";
import { LogManager } from "../../src/storage/log-manager.ts";
import { segmentFilePaths } from "../../src/storage/log-segment.ts";
import type { UnifiedLog } from "../../src/storage/unified-log.ts";
import { LineLogger } from "../support/line-logger.ts";
import type { StoredRecord } from "./cleaner-support.ts";
import { keyedBatch, readAllRecords } from "./cleaner-support.ts";
import { readRanges, removeDir, tempDir } from "./helpers.ts";

let root: string;
let lines: string[];
const managers: LogManager[] = [];
const config = { ...DEFAULT_LOG_CONFIG, cleanupPolicy: "compact", segmentBytes: 1500 };

function open(dir: string): LogManager {
  const manager = LogManager.open({
    logDirs: [dir],
    defaultConfig: config,
    logger: new LineLogger(lines),
    cleaner: { dedupeBufferBytes: 1 << 20 },
  });
  managers.push(manager);
  return manager;
}

function fill(log: UnifiedLog): void {
  for (let round = 0; round < 12; round++) {
    log.appendAsLeader(
      keyedBatch(
        Array.from({ length: 5 }, (_, k) => ({
          key: `k${k}`,
          value: round === 11 && k === 2 ? null : `v${round}`,
        })),
      ),
      -1,
    );
    log.highWatermark = log.logEndOffset;
  }
  log.roll();
}

/** The dirty log, its cleaned twin, and the records of each. */
async function dirtyAndCleaned(): Promise<{
  dirtyDir: string;
  cleanedDir: string;
  dirty: StoredRecord[];
  cleaned: StoredRecord[];
}> {
  const cleanedDir = path.join(root, "cleaned");
  const manager = open(cleanedDir);
  const log = manager.getOrCreateLog("t", 0);
  fill(log);
  manager.close();
  const dirtyDir = path.join(root, "dirty");
  fs.cpSync(cleanedDir, dirtyDir, { recursive: true });
  const again = open(cleanedDir);
  const dirty = readAllRecords(again.getLog("t", 0)!);
  expect(await again.cleaner.cleanOnce()).not.toBeNull();
  const cleaned = readAllRecords(again.getLog("t", 0)!);
  again.close();
  expect(cleaned.length).toBeLessThan(dirty.length);
  return { dirtyDir, cleanedDir, dirty, cleaned };
}

/** Puts the cleaned segment at base 0 into `dir` under `suffix` (`.cleaned` or `.swap`). */
function plant(cleanedDir: string, dir: string, suffix: string): void {
  const from = segmentFilePaths(path.join(cleanedDir, "t-0"), 0n);
  const to = segmentFilePaths(path.join(dir, "t-0"), 0n, suffix);
  for (let i = 0; i < 3; i++) fs.copyFileSync(from[i], to[i]);
}

/** Every record of the reopened log, and no `.cleaned`/`.swap` file left behind. */
function reopen(dir: string): StoredRecord[] {
  fs.rmSync(path.join(dir, ".kafka_cleanshutdown"), { force: true }); // as after a kill -9
  const records = readAllRecords(open(dir).getLog("t", 0)!);
  const leftovers = fs
    .readdirSync(path.join(dir, "t-0"))
    .filter((n) => n.endsWith(".cleaned") || n.endsWith(".swap"));
  expect(leftovers).toEqual([]);
  return records;
}

beforeEach(() => {
  root = tempDir("quill-swap-");
  lines = [];
});
afterEach(() => {
  for (const m of managers.splice(0)) m.close();
  removeDir(root);
});

test("crash before the swap: .cleaned files are removed, the dirty log stays", async () => {
  const { dirtyDir, cleanedDir, dirty } = await dirtyAndCleaned();
  plant(cleanedDir, dirtyDir, ".cleaned");
  expect(reopen(dirtyDir)).toEqual(dirty);
});

test("crash after .cleaned -> .swap, old segments untouched: the swap is finished", async () => {
  const { dirtyDir, cleanedDir, cleaned } = await dirtyAndCleaned();
  plant(cleanedDir, dirtyDir, ".swap");
  expect(reopen(dirtyDir)).toEqual(cleaned);
  expect(lines.some((l) => l.includes("finished the interrupted swap of segment 0"))).toBe(true);
});

test("crash with some old segments already .deleted: the swap is finished", async () => {
  const { dirtyDir, cleanedDir, cleaned } = await dirtyAndCleaned();
  plant(cleanedDir, dirtyDir, ".swap");
  for (const p of segmentFilePaths(path.join(dirtyDir, "t-0"), 0n)) {
    fs.renameSync(p, `${p}.deleted`);
  }
  expect(reopen(dirtyDir)).toEqual(cleaned);
});

test("crash with only the log file still .swap (indexes renamed): indexes are rebuilt", async () => {
  const { dirtyDir, cleanedDir, cleaned } = await dirtyAndCleaned();
  const dir = path.join(dirtyDir, "t-0");
  const [log, index, timeIndex] = segmentFilePaths(dir, 0n);
  for (const p of [log, index, timeIndex]) fs.renameSync(p, `${p}.deleted`);
  const from = segmentFilePaths(path.join(cleanedDir, "t-0"), 0n);
  fs.copyFileSync(from[0], `${log}.swap`);
  fs.copyFileSync(from[1], index);
  fs.copyFileSync(from[2], timeIndex);
  expect(reopen(dirtyDir)).toEqual(cleaned);
});

test("index .swap files without their log .swap are strays", async () => {
  const { dirtyDir, cleanedDir, dirty } = await dirtyAndCleaned();
  plant(cleanedDir, dirtyDir, ".swap");
  fs.rmSync(segmentFilePaths(path.join(dirtyDir, "t-0"), 0n, ".swap")[0]);
  expect(reopen(dirtyDir)).toEqual(dirty);
});

test("a reader holding a range of a replaced segment keeps reading its bytes", async () => {
  const manager = open(path.join(root, "live"));
  const log = manager.getOrCreateLog("t", 0);
  fill(log);
  const { ranges } = log.read(0n, 1 << 20, { maxOffset: log.logEndOffset, minOneMessage: true });
  const before = readRanges(ranges);
  expect(await manager.cleaner.cleanOnce()).not.toBeNull();
  // The old files are renamed and unlinked; the held fd still reads what it read before.
  expect(readRanges(ranges)).toEqual(before);
  for (const r of ranges) r.release();
  expect(readAllRecords(log).length).toBeLessThan(60);
});
