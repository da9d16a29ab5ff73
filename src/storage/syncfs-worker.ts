/**
 * The Worker behind file-system-sync.ts: calls syncfs(2) for the file system holding a
 * directory, a blocking call that can take seconds, so it runs here and not on the event loop.
 *
 * This file is an entry point of its own: `bun build --compile` is given it beside main.ts
 * (scripts/build-info.ts, BUILD_ENTRY_POINTS), or the compiled binary could not start it.
 */
import { dlopen, FFIType, read } from "bun:ffi";
import * as fs from "node:fs";
import type { SyncfsReply, SyncfsRequest } from "./file-system-sync.ts";

declare const self: Worker;

const libc = dlopen("libc.so.6", {
  syncfs: { args: [FFIType.i32], returns: FFIType.i32 },
  __errno_location: { args: [], returns: FFIType.ptr },
}).symbols;

function syncfs(dirPath: string): SyncfsReply {
  const fd = fs.openSync(dirPath, "r");
  try {
    if (libc.syncfs(fd) === 0) return { errno: 0 };
    return { errno: read.i32(libc.__errno_location()!, 0) };
  } finally {
    fs.closeSync(fd);
  }
}

self.onmessage = (event: MessageEvent<SyncfsRequest>) => {
  let reply: SyncfsReply;
  try {
    reply = syncfs(event.data.dirPath);
  } catch (error) {
    reply = { errno: -1, error: String(error), code: (error as { code?: string }).code };
  }
  self.postMessage(reply);
};
