/**
 * Writes a whole file so that it survives a crash once this resolves: the bytes go to
 * `<path>.tmp` with Bun.write, are fsynced, renamed over `path`, and the directory is fsynced
 * so the rename is on disk too. Bun has no fsync of its own, so the two syncs go through
 * node:fs file handles (on libuv's thread pool, off the event loop).
 */
import { open, rename } from "node:fs/promises";
import { dirname } from "node:path";

async function sync(path: string): Promise<void> {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export async function writeDurably(path: string, data: Uint8Array | string): Promise<void> {
  const tmp = `${path}.tmp`;
  await Bun.write(tmp, data);
  await sync(tmp);
  await rename(tmp, path);
  await sync(dirname(path));
}
