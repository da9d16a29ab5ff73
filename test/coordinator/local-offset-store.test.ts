import { afterEach, describe, expect, test } from "bun:test";
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { topicPartitionKey as tp } from "../../src/common/topic-partition.ts";
import { LocalOffsetStore, OFFSETS_DIR_NAME } from "../../src/coordinator/local-offset-store.ts";
import { encodeRecord } from "../../src/coordinator/offset-log-record.ts";
import type { CommittedOffset } from "../../src/coordinator/offset-store.ts";
import { ErrorCode, KafkaError } from "../../src/protocol/errors.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "quill-offsets-"));
  dirs.push(dir);
  return dir;
}

const committed = (offset: bigint, metadata: string | null = `m${offset}`): CommittedOffset => ({
  offset,
  leaderEpoch: 7,
  metadata,
  commitTimestampMs: 1_700_000_000_000,
});

const logPath = (dir: string) => join(dir, OFFSETS_DIR_NAME, "commits.log");

describe("LocalOffsetStore", () => {
  test("commits, deletes and group deletes survive a reopen", async () => {
    const dir = tempDir();
    const store = LocalOffsetStore.open(dir);
    await store.commit("g1", [
      { topic: "a", partition: 0, committed: committed(10n) },
      { topic: "a", partition: 1, committed: committed(11n, null) },
      { topic: "b\u0000weird", partition: 2, committed: committed(2n ** 62n) },
    ]);
    await store.commit("g2", [{ topic: "a", partition: 0, committed: committed(5n) }]);
    await store.commit("g3", [{ topic: "a", partition: 0, committed: committed(6n) }]);
    await store.deleteOffsets("g1", [{ topic: "a", partition: 0 }]);
    await store.deleteGroup("g2");
    await store.close();

    const reopened = LocalOffsetStore.open(dir);
    expect((await reopened.listGroups()).sort()).toEqual(["g1", "g3"]);
    expect(await reopened.listGroupIds("g3")).toEqual(["g3"]);
    const g1 = await reopened.loadGroup("g1");
    expect([...g1.keys()].sort()).toEqual([tp("a", 1), tp("b\u0000weird", 2)]);
    expect(g1.get(tp("a", 1))).toEqual(committed(11n, null));
    expect(g1.get(tp("b\u0000weird", 2))!.offset).toBe(2n ** 62n);
    expect((await reopened.loadGroup("g2")).size).toBe(0);
    await reopened.close();
  });

  test("a group's protocol type survives reopens and compactions, and goes with its offsets", async () => {
    const dir = tempDir();
    const store = LocalOffsetStore.open(dir, { compactLogBytes: 2048 });
    await store.storeGroupMetadata("readers", { protocolType: "consumer" });
    await store.storeGroupMetadata("never-committed", { protocolType: "connect" });
    expect(await store.describeStoredGroup("readers")).toBeNull();
    for (let i = 0; i < 100; i++) {
      const offset = { topic: "t", partition: i % 4, committed: committed(BigInt(i)) };
      await store.commit("readers", [offset]);
    }
    await store.commit("doomed", [{ topic: "t", partition: 0, committed: committed(1n) }]);
    await store.storeGroupMetadata("doomed", { protocolType: "consumer" });
    await store.deleteOffsets("doomed", [{ topic: "t", partition: 0 }]);
    expect(store.stats.compactions).toBeGreaterThan(0);
    await store.close();
    const reopened = LocalOffsetStore.open(dir);
    expect(await reopened.describeStoredGroup("readers")).toEqual({ protocolType: "consumer" });
    expect(await reopened.describeStoredGroup("never-committed")).toBeNull();
    await reopened.commit("doomed", [{ topic: "t", partition: 0, committed: committed(2n) }]);
    expect(await reopened.describeStoredGroup("doomed")).toEqual({ protocolType: null });
    await reopened.close();
  });

  test("loadGroup returns a copy the caller may change", async () => {
    const store = LocalOffsetStore.open(tempDir());
    await store.commit("g", [{ topic: "t", partition: 0, committed: committed(1n) }]);
    (await store.loadGroup("g")).clear();
    expect((await store.loadGroup("g")).size).toBe(1);
    await store.close();
  });

  test("commits issued in the same turn share one fdatasync", async () => {
    const store = LocalOffsetStore.open(tempDir());
    const commits = Array.from({ length: 200 }, (_, i) =>
      store.commit(`g${i % 7}`, [{ topic: "t", partition: i, committed: committed(BigInt(i)) }]),
    );
    await Promise.all(commits);
    expect(store.stats.recordsWritten).toBe(200);
    expect(store.stats.fsyncs).toBe(1);
    // Commits that arrive while an fsync runs ride on the next one.
    const first = store.commit("g", [{ topic: "t", partition: 0, committed: committed(1n) }]);
    await new Promise((resolve) => setImmediate(resolve));
    const later = Array.from({ length: 50 }, (_, i) =>
      store.commit("g", [{ topic: "t", partition: i, committed: committed(2n) }]),
    );
    await Promise.all([first, ...later]);
    expect(store.stats.fsyncs).toBeLessThanOrEqual(3);
    await store.close();
  });

  test("a torn tail is cut off on open and appends continue after the valid prefix", async () => {
    const dir = tempDir();
    const store = LocalOffsetStore.open(dir);
    await store.commit("g", [{ topic: "t", partition: 0, committed: committed(1n) }]);
    await store.commit("g", [{ topic: "t", partition: 0, committed: committed(2n) }]);
    await store.close();
    const validBytes = statSync(logPath(dir)).size;
    const offsets = [{ topic: "t", partition: 0, committed: committed(3n) }];
    const next = encodeRecord({ type: "commit", groupId: "g", offsets })!;
    appendFileSync(logPath(dir), next.subarray(0, next.length - 3));

    const reopened = LocalOffsetStore.open(dir);
    expect(statSync(logPath(dir)).size).toBe(validBytes);
    expect((await reopened.loadGroup("g")).get(tp("t", 0))!.offset).toBe(2n);
    await reopened.commit("g", [{ topic: "t", partition: 0, committed: committed(4n) }]);
    await reopened.close();
    const again = LocalOffsetStore.open(dir);
    expect((await again.loadGroup("g")).get(tp("t", 0))!.offset).toBe(4n);
    await again.close();
  });

  test("a last record with a bad CRC is treated as torn", async () => {
    const dir = tempDir();
    const store = LocalOffsetStore.open(dir);
    await store.commit("g", [{ topic: "t", partition: 0, committed: committed(1n) }]);
    await store.commit("g", [{ topic: "t", partition: 0, committed: committed(2n) }]);
    await store.close();
    const bytes = readFileSync(logPath(dir));
    bytes[bytes.length - 2] ^= 0xff;
    writeFileSync(logPath(dir), bytes);
    const reopened = LocalOffsetStore.open(dir);
    expect((await reopened.loadGroup("g")).get(tp("t", 0))!.offset).toBe(1n);
    await reopened.close();
  });

  test("a zeroed tail (the file's size stored by a crash, not its data) is cut off", async () => {
    const dir = tempDir();
    const store = LocalOffsetStore.open(dir);
    await store.commit("g", [{ topic: "t", partition: 0, committed: committed(1n) }]);
    await store.close();
    const validBytes = statSync(logPath(dir)).size;
    appendFileSync(logPath(dir), new Uint8Array(4096));
    const reopened = LocalOffsetStore.open(dir);
    expect(statSync(logPath(dir)).size).toBe(validBytes);
    expect((await reopened.loadGroup("g")).get(tp("t", 0))!.offset).toBe(1n);
    await reopened.close();
  });

  test("a commit after a failed write's leftover tail goes where the valid log ends", async () => {
    // A failed write whose truncate failed too leaves bytes past the log's end; the next
    // commit must not land after them, where replay (stopping at the garbage) would lose it.
    const dir = tempDir();
    const store = LocalOffsetStore.open(dir);
    await store.commit("g", [{ topic: "t", partition: 0, committed: committed(1n) }]);
    appendFileSync(logPath(dir), new Uint8Array([0, 0, 0, 9, 1, 2, 3]));
    await store.commit("g", [{ topic: "t", partition: 0, committed: committed(2n) }]);
    await store.close();
    const reopened = LocalOffsetStore.open(dir);
    expect((await reopened.loadGroup("g")).get(tp("t", 0))!.offset).toBe(2n);
    await reopened.close();
  });

  test("past compactLogBytes the log becomes a snapshot; the state is unchanged", async () => {
    const dir = tempDir();
    const store = LocalOffsetStore.open(dir, { compactLogBytes: 4096 });
    for (let i = 0; i < 300; i++) {
      const offset = { topic: "t", partition: i % 10, committed: committed(BigInt(i)) };
      await store.commit(`g${i % 3}`, [offset]);
    }
    await store.deleteGroup("g2");
    expect(store.stats.compactions).toBeGreaterThan(3);
    expect(statSync(logPath(dir)).size).toBeLessThan(4096);
    expect(existsSync(join(dir, OFFSETS_DIR_NAME, "offsets.snapshot"))).toBe(true);
    const before = { g0: await store.loadGroup("g0"), g1: await store.loadGroup("g1") };
    await store.close();
    const reopened = LocalOffsetStore.open(dir, { compactLogBytes: 4096 });
    expect((await reopened.listGroups()).sort()).toEqual(["g0", "g1"]);
    expect(await reopened.loadGroup("g0")).toEqual(before.g0);
    expect(await reopened.loadGroup("g1")).toEqual(before.g1);
    expect((await reopened.loadGroup("g0")).get(tp("t", 9))!.offset).toBe(279n);
    await reopened.close();
  });

  test("commits made during a sliced fold are acknowledged and kept across a reopen", async () => {
    const dir = tempDir();
    // A turn after every group: the fold of 2,000 groups spans 2,000 turns, long enough for
    // commits (an fdatasync each) to be acknowledged meanwhile.
    const options = { compactLogBytes: 16 * 1024, foldSliceMs: 0 };
    const store = LocalOffsetStore.open(dir, options);
    const expected = new Map<string, Map<string, bigint>>();
    const commit = (group: string, partition: number, offset: bigint): Promise<void> => {
      if (!expected.has(group)) expected.set(group, new Map());
      expected.get(group)!.set(tp("t", partition), offset);
      return store.commit(group, [{ topic: "t", partition, committed: committed(offset) }]);
    };
    // One batch of 2,000 records (about 160 KiB) passes compactLogBytes: the fold starts after.
    const first = Array.from({ length: 2_000 }, (_, g) => commit(`g${g}`, g % 3, 1n));
    await Promise.all(first);
    const during: Promise<void>[] = [];
    let issuedDuringFold = 0;
    let acknowledgedDuringFold = 0;
    for (let i = 0; i < 60; i++) {
      if (store.stats.compactions === 0) issuedDuringFold++;
      during.at(-1)?.then(() => {
        if (store.stats.compactions === 0) acknowledgedDuringFold++;
      });
      // Groups the fold encodes first, a new group, and a group the fold has not reached yet.
      during.push(commit(`g${i}`, 5, 100n + BigInt(i)));
      during.push(commit(`g${i}`, i % 3, 200n + BigInt(i)));
      during.push(commit(`new${i}`, 0, BigInt(i)));
      expected.delete(`g${1_999 - i}`);
      during.push(store.deleteGroup(`g${1_999 - i}`));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(during);
    while (store.stats.compactions === 0) await Bun.sleep(1);
    expect(issuedDuringFold).toBeGreaterThan(10);
    // Commits are not held back by the fold's encoding.
    expect(acknowledgedDuringFold).toBeGreaterThan(0);
    expect(store.stats.compactions).toBe(1);

    const stateOf = async (s: LocalOffsetStore) => {
      const state = new Map<string, Map<string, bigint>>();
      for (const group of await s.listGroups()) {
        const offsets = new Map<string, bigint>();
        for (const [key, c] of await s.loadGroup(group)) offsets.set(key, c.offset);
        state.set(group, offsets);
      }
      return state;
    };
    expect(await stateOf(store)).toEqual(expected);
    await store.close();
    const reopened = LocalOffsetStore.open(dir, options);
    expect(await stateOf(reopened)).toEqual(expected);
    await reopened.close();
  });

  test("a group with more offsets than one snapshot record holds is folded and reloaded", async () => {
    const dir = tempDir();
    const store = LocalOffsetStore.open(dir, { compactLogBytes: 64 * 1024 });
    const offsets = Array.from({ length: 2_500 }, (_, partition) => ({
      topic: "t",
      partition,
      committed: committed(BigInt(partition)),
    }));
    await store.storeGroupMetadata("big", { protocolType: "consumer" });
    await store.commit("big", offsets);
    while (store.stats.compactions === 0) await Bun.sleep(1);
    await store.close();
    const reopened = LocalOffsetStore.open(dir);
    const loaded = await reopened.loadGroup("big");
    expect(loaded.size).toBe(2_500);
    expect(loaded.get(tp("t", 2_499))!.offset).toBe(2_499n);
    expect(await reopened.describeStoredGroup("big")).toEqual({ protocolType: "consumer" });
    await reopened.close();
  });

  test("a closed store fails with the retriable COORDINATOR_NOT_AVAILABLE", async () => {
    const store = LocalOffsetStore.open(tempDir());
    await store.close();
    const error = await store.commit("g", []).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KafkaError);
    expect((error as KafkaError).code).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect((error as KafkaError).retriable).toBe(true);
  });
});

describe("LocalOffsetStore under kill -9", () => {
  const CHILD = join(import.meta.dir, "offset-writer-child.ts");

  /** Runs the writer until it has acknowledged at least `acksMin` commits, then SIGKILLs it. */
  async function runAndKill(
    dir: string,
    acksMin: number,
    compactLogBytes: number,
    foldSliceMs: number,
  ): Promise<Map<number, bigint>> {
    const argv = [process.execPath, CHILD, dir, String(compactLogBytes), String(foldSliceMs)];
    const child = Bun.spawn(argv, { stdout: "pipe", stderr: "inherit" });
    const acked = new Map<number, bigint>();
    let count = 0;
    let buffered = "";
    const decoder = new TextDecoder();
    for await (const chunk of child.stdout) {
      buffered += decoder.decode(chunk);
      const lines = buffered.split("\n");
      buffered = lines.pop()!;
      for (const line of lines) {
        const [, partition, offset] = line.split(" ");
        const value = BigInt(offset!);
        if (value > (acked.get(Number(partition)) ?? -1n)) acked.set(Number(partition), value);
        count++;
      }
      if (count >= acksMin) {
        child.kill("SIGKILL");
        break;
      }
    }
    await child.exited;
    expect(child.signalCode).toBe("SIGKILL");
    return acked;
  }

  test("every acknowledged commit survives SIGKILL, across crashes and compactions", async () => {
    const dir = tempDir();
    for (let trial = 0; trial < 5; trial++) {
      const acksMin = 500 + Math.floor(Math.random() * 3000);
      // Odd trials fold with a turn after every group, so kills land inside folds.
      const acked = await runAndKill(dir, acksMin, 16 * 1024, trial % 2 === 1 ? 0 : 5);
      const store = LocalOffsetStore.open(dir);
      const stored = await store.loadGroup("g");
      await store.close();
      expect(acked.size).toBe(8);
      for (const [partition, offset] of acked) {
        // Later commits may have landed unacknowledged; none acknowledged may be missing.
        expect(stored.get(tp("t", partition))!.offset).toBeGreaterThanOrEqual(offset);
      }
    }
  }, 60_000);
});
