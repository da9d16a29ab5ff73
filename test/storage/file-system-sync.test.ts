import { afterEach, beforeEach, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { isFileSystemSyncAvailable, syncFileSystem } from "../../src/storage/file-system-sync.ts";
import { removeDir, tempDir } from "./helpers.ts";

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

test("syncfs runs in its Worker on Linux and reports a directory it cannot open", async () => {
  expect(isFileSystemSyncAvailable()).toBe(process.platform === "linux");
  if (!isFileSystemSyncAvailable()) return;
  fs.writeFileSync(path.join(dir, "written"), "bytes to make durable");
  await syncFileSystem(dir);
  const missing = path.join(dir, "missing");
  await expect(syncFileSystem(missing)).rejects.toMatchObject({ code: "ENOENT" });
});
