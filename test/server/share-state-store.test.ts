// Embedded mode's share-partition state store: every change answered is in the synced log
// (a second store opened on the directory without closing the first, as after kill -9, has
// it), changes made during a write go in the next one, a torn tail is cut off, the log is
// folded into the snapshot, and a snapshot written by an earlier version still loads.
import { afterEach, expect, test } from "bun:test";
import { appendFileSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode } from "../../src/protocol/errors.ts";
import type { SharePartitionSnapshot } from "../../src/server/share-partition.ts";
import { RecordState } from "../../src/server/share-partition.ts";
import {
  LocalShareStateStore,
  SHARE_STATE_FILE,
  SHARE_STATE_LOG_FILE,
} from "../../src/server/share-state-store.ts";
import { createLogger, SILENT_LOGGER } from "../../src/util/logger.ts";
import { removeDir, tempDir } from "../support/broker-harness.ts";

const EPOCHS = { leaderEpoch: 0, stateEpoch: 0 };
const { ACKNOWLEDGED, ARCHIVED, AVAILABLE } = RecordState;
const dirs: string[] = [];
const stores: LocalShareStateStore[] = [];

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) removeDir(d);
});

function open(dir: string, compactLogBytes?: number, foldSliceMs?: number): LocalShareStateStore {
  const store = new LocalShareStateStore(dir, SILENT_LOGGER, compactLogBytes, foldSliceMs);
  stores.push(store);
  return store;
}

function newDir(): string {
  const dir = tempDir("quill-share-state-");
  dirs.push(dir);
  return dir;
}

function snapshot(startOffset: bigint, ...records: [number, number][]): SharePartitionSnapshot {
  return { startOffset, records };
}

test("an answered save is in the synced log; saves during a write share the next one", async () => {
  const dir = newDir();
  const store = open(dir);
  const first = store.save("g", "t", 0, EPOCHS, () => snapshot(5n, [ACKNOWLEDGED, 1]));
  // Made while the first write runs (it starts on the next turn of the event loop; its
  // fdatasync is still out after it): each partition's latest state goes in one more write.
  await new Promise((resolve) => setImmediate(resolve));
  const later: Promise<number>[] = [];
  for (let i = 0; i < 20; i++) {
    later.push(store.save("g", "t", 1, EPOCHS, () => snapshot(BigInt(i), [AVAILABLE, 2])));
  }
  expect(await first).toBe(ErrorCode.NONE);
  expect(await Promise.all(later)).toEqual(later.map(() => ErrorCode.NONE));
  expect(store.stats.syncs).toBe(2);
  expect(store.stats.framesWritten).toBe(2);

  // Not closed: what a crash right now leaves behind.
  const reopened = open(dir);
  expect(await reopened.load("g", "t", 0)).toEqual({
    stateEpoch: 0,
    snapshot: snapshot(5n, [ACKNOWLEDGED, 1]),
  });
  expect((await reopened.load("g", "t", 1)).snapshot).toEqual(snapshot(19n, [AVAILABLE, 2]));
  expect((await reopened.load("g", "t", 2)).snapshot).toBeNull();
});

test("a removal is stored; a torn last frame is cut off", async () => {
  const dir = newDir();
  const store = open(dir);
  await store.save("g", "t", 0, EPOCHS, () => snapshot(3n, [ARCHIVED, 5], [AVAILABLE, 1]));
  await store.save("g", "t", 1, EPOCHS, () => snapshot(7n));
  store.remove("g", "t", 1);
  await store.save("g", "t", 2, EPOCHS, () => snapshot(9n));
  const logPath = join(dir, SHARE_STATE_LOG_FILE);
  const validBytes = statSync(logPath).size;
  appendFileSync(logPath, new Uint8Array([0, 0, 0, 40, 1, 2, 3]));

  const reopened = open(dir);
  expect((await reopened.load("g", "t", 0)).snapshot).toEqual(
    snapshot(3n, [ARCHIVED, 5], [AVAILABLE, 1]),
  );
  expect((await reopened.load("g", "t", 1)).snapshot).toBeNull();
  expect((await reopened.load("g", "t", 2)).snapshot).toEqual(snapshot(9n));
  expect(statSync(logPath).size).toBe(validBytes);
  // Writes go on after the cut.
  await reopened.save("g", "t", 2, EPOCHS, () => snapshot(10n));
  expect((await open(dir).load("g", "t", 2)).snapshot).toEqual(snapshot(10n));
});

test("the log is folded into the snapshot once it passes its size", async () => {
  const dir = newDir();
  const store = open(dir, 2_000);
  for (let i = 0; i < 100; i++) {
    await store.save("g", "t", i % 3, EPOCHS, () => snapshot(BigInt(i), [ACKNOWLEDGED, 1]));
  }
  await store.close(); // the last compaction runs after the last save is answered
  expect(store.stats.compactions).toBeGreaterThan(0);
  expect(statSync(join(dir, SHARE_STATE_LOG_FILE)).size).toBeLessThan(2_000);
  const reopened = open(dir);
  for (const [partition, last] of [
    [0, 99n],
    [1, 97n],
    [2, 98n],
  ] as const) {
    expect((await reopened.load("g", "t", partition)).snapshot?.startOffset).toBe(last);
  }
  const saved = JSON.parse(readFileSync(join(dir, SHARE_STATE_FILE), "utf8"));
  expect(saved.partitions.length).toBe(3);
});

test("changes made during a sliced fold are answered and kept across a reopen", async () => {
  const dir = newDir();
  // A turn after every partition's state: the fold of 2,000 partitions spans 2,000 turns, long
  // enough for writes (an fdatasync each) to be answered meanwhile.
  const store = open(dir, 16 * 1024, 0);
  const expected = new Map<number, bigint | null>();
  const save = (partition: number, startOffset: bigint): Promise<number> => {
    expected.set(partition, startOffset);
    return store.save("g", "t", partition, EPOCHS, () => snapshot(startOffset, [AVAILABLE, 0]));
  };
  // One write of 2,000 states (well past 16 KiB) starts the fold.
  const first = await Promise.all(Array.from({ length: 2_000 }, (_, p) => save(p, 1n)));
  expect(first.every((code) => code === ErrorCode.NONE)).toBe(true);
  const during: Promise<unknown>[] = [];
  let issuedDuringFold = 0;
  let answeredDuringFold = 0;
  for (let i = 0; i < 60; i++) {
    if (store.stats.compactions === 0) issuedDuringFold++;
    during.at(-1)?.then(() => {
      if (store.stats.compactions === 0) answeredDuringFold++;
    });
    // Partitions the fold encodes first, new ones, and removals of ones it has not reached.
    during.push(save(i, 100n + BigInt(i)));
    during.push(save(10_000 + i, BigInt(i)));
    expected.set(1_999 - i, null);
    during.push(store.remove("g", "t", 1_999 - i));
    await new Promise((resolve) => setImmediate(resolve));
  }
  await Promise.all(during);
  while (store.stats.compactions === 0) await Bun.sleep(1);
  expect(issuedDuringFold).toBeGreaterThan(10);
  // Changes are not held back by the fold's encoding.
  expect(answeredDuringFold).toBeGreaterThan(0);
  expect(store.stats.compactions).toBe(1);
  await store.close();
  const saved = JSON.parse(readFileSync(join(dir, SHARE_STATE_FILE), "utf8"));
  expect(saved.partitions.length).toBe(2_000);
  const reopened = open(dir);
  for (const [partition, startOffset] of expected) {
    const loaded = await reopened.load("g", "t", partition);
    expect([partition, loaded.snapshot?.startOffset ?? null]).toEqual([partition, startOffset]);
  }
});

test("a crash during a sliced fold, or after it, leaves every answered change", async () => {
  const dir = newDir();
  const store = open(dir, 16 * 1024, 0);
  const states = (p: number) => () => snapshot(1n, [AVAILABLE, p % 5]);
  await Promise.all(
    Array.from({ length: 2_000 }, (_, p) => store.save("g", "t", p, EPOCHS, states(p))),
  );
  // The fold of 2,000 partitions, a turn after each, runs now; this save is answered meanwhile.
  expect(await store.save("g", "t", 5, EPOCHS, () => snapshot(7n, [ACKNOWLEDGED, 1]))).toBe(
    ErrorCode.NONE,
  );
  expect(store.stats.compactions).toBe(0);
  const check = async (reopened: LocalShareStateStore) => {
    expect((await reopened.load("g", "t", 5)).snapshot).toEqual(snapshot(7n, [ACKNOWLEDGED, 1]));
    for (const p of [0, 1_000, 1_999]) {
      expect((await reopened.load("g", "t", p)).snapshot).toEqual(states(p)());
    }
  };
  // Not closed: what a kill -9 in the middle of the fold leaves behind.
  await check(open(dir));
  while (store.stats.compactions === 0) await Bun.sleep(1);
  await check(open(dir));
});

test("a snapshot written by an earlier version (no log) loads", async () => {
  const dir = newDir();
  const partitions = [
    { group: "g", topic: "t", partition: 0, startOffset: "12", runs: [[2, 1, 3]] },
  ];
  writeFileSync(join(dir, SHARE_STATE_FILE), JSON.stringify({ version: 1, partitions }));
  const store = open(dir);
  expect((await store.load("g", "t", 0)).snapshot).toEqual(
    snapshot(12n, [ACKNOWLEDGED, 1], [ACKNOWLEDGED, 1], [ACKNOWLEDGED, 1]),
  );
});

test("a zeroed tail (the file's new size reached the disk, its data did not) is cut off", async () => {
  const dir = newDir();
  const store = open(dir);
  await store.save("g", "t", 0, EPOCHS, () => snapshot(4n, [ACKNOWLEDGED, 1]));
  const logPath = join(dir, SHARE_STATE_LOG_FILE);
  const validBytes = statSync(logPath).size;
  // Zeros read as a frame of length 0 whose CRC (of nothing) matches: not a state.
  appendFileSync(logPath, new Uint8Array(64));

  const reopened = open(dir);
  expect((await reopened.load("g", "t", 0)).snapshot).toEqual(snapshot(4n, [ACKNOWLEDGED, 1]));
  expect(statSync(logPath).size).toBe(validBytes);
});

test("a removal made while the partition's first write runs is stored", async () => {
  const dir = newDir();
  const store = open(dir);
  const saved = store.save("g", "t", 0, EPOCHS, () => snapshot(6n, [AVAILABLE, 1]));
  // The write starts on the next turn of the event loop; its fdatasync is still out after it.
  await new Promise((resolve) => setImmediate(resolve));
  store.remove("g", "t", 0);
  expect(await saved).toBe(ErrorCode.NONE);
  expect((await store.load("g", "t", 0)).snapshot).toBeNull();
  await store.close();
  expect((await open(dir).load("g", "t", 0)).snapshot).toBeNull();
});

test("a removal after close writes nothing (the log's descriptor is closed, maybe reused)", async () => {
  const dir = newDir();
  const errors: string[] = [];
  const log = createLogger("ShareStateStore", {
    format: "text",
    level: "ERROR",
    write: (line) => errors.push(line),
  });
  const store = new LocalShareStateStore(dir, log);
  await store.save("g", "t", 0, EPOCHS, () => snapshot(2n));
  await store.close();
  store.remove("g", "t", 0);
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  expect(errors).toEqual([]);
  expect((await open(dir).load("g", "t", 0)).snapshot).toEqual(snapshot(2n));
});
