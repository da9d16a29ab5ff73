import { afterEach, beforeEach, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { listPartitionDir, PREREAD_FILE_MAX_BYTES } from "../../src/storage/preread-files.ts";
import { removeDir, tempDir } from "./helpers.ts";

let dir: string;
const stem = (offset: number) => String(offset).padStart(20, "0");
const write = (name: string, bytes: number) =>
  fs.writeFileSync(path.join(dir, name), new Uint8Array(bytes).fill(bytes % 251));

beforeEach(() => {
  dir = tempDir();
  for (const base of [0, 100]) {
    write(`${stem(base)}.log`, 64);
    write(`${stem(base)}.index`, 8 + base);
    write(`${stem(base)}.timeindex`, 12 + base);
  }
  write("leader-epoch-checkpoint", 9);
  write(`${stem(50)}.snapshot`, 10);
  write(`${stem(120)}.snapshot`, 11);
});
afterEach(() => removeDir(dir));

test("reads the epochs, the newest snapshot and the active segment's indexes, each once", async () => {
  const budget = { remainingBytes: 1 << 20 };
  const { names, preread } = await listPartitionDir(dir, true, budget);
  expect(names.sort()).toEqual(fs.readdirSync(dir).sort());
  const at = (name: string) => path.join(dir, name);
  expect(preread.fileCount).toBe(4);
  expect(preread.take(at(`${stem(100)}.index`))).toEqual(fs.readFileSync(at(`${stem(100)}.index`)));
  expect(preread.take(at(`${stem(100)}.index`))).toBeUndefined();
  expect(preread.take(at(`${stem(100)}.timeindex`))?.length).toBe(112);
  expect(preread.take(at("leader-epoch-checkpoint"))?.length).toBe(9);
  expect(preread.take(at(`${stem(120)}.snapshot`))?.length).toBe(11);
  // Sealed segments' indexes load on first use; older snapshots only if the newest fails.
  expect(preread.take(at(`${stem(0)}.index`))).toBeUndefined();
  expect(preread.take(at(`${stem(50)}.snapshot`))).toBeUndefined();
  expect(budget.remainingBytes).toBe((1 << 20) - 108 - 112 - 9 - 11);
});

test("after a crash no indexes; the budget and the size cap leave files to the load", async () => {
  expect((await listPartitionDir(dir, false, { remainingBytes: 1 << 20 })).preread.fileCount).toBe(
    2,
  );
  expect((await listPartitionDir(dir, true, { remainingBytes: 0 })).preread.fileCount).toBe(0);
  write(`${stem(100)}.index`, PREREAD_FILE_MAX_BYTES + 8);
  const { preread } = await listPartitionDir(dir, true, { remainingBytes: 1 << 30 });
  expect(preread.take(path.join(dir, `${stem(100)}.index`))).toBeUndefined();
  expect(preread.fileCount).toBe(3);
});
