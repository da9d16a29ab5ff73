/**
 * syncfs(2) off the event loop: one call makes every file and directory written on a file
 * system durable, which is what a clean stop needs before its shutdown marker. Syncing each
 * closing log's files one by one cost about six syncs per partition, and the disk commits only
 * a few thousand per second however many run at once: a clean stop with 10,000 partitions took
 * 30 s or more, while syncfs made the same 10,000 small files durable in about a quarter of a
 * second (docs/scaling.md, Thousands of partitions).
 *
 * The call blocks for as long as the file system's dirty pages take to write, so it runs on a
 * Worker started for it (syncfs-worker.ts), and the event loop keeps its timers. Linux only
 * (libc.so.6); where it is missing the caller syncs file by file instead. Since Linux 5.8
 * syncfs reports write-back errors of the file system, so a failed write is not taken for a
 * durable one.
 */
import { dlopen, FFIType } from "bun:ffi";
import { assert } from "../util/assert.ts";

export interface SyncfsRequest {
  readonly dirPath: string;
}

export interface SyncfsReply {
  /** 0 on success, else the errno of syncfs, or -1 with `error` when opening the dir failed. */
  readonly errno: number;
  readonly error?: string;
  /** The failed open's code (ENOENT, EACCES, ...). */
  readonly code?: string;
}

/**
 * Where the Worker's module is. Under `bun run`, next to this file. In the compiled binary,
 * bundled modules share the entry point's import.meta.url, so the path is relative to the
 * bundle's root, the common folder of the build's entry points (`src/`, BUILD_ENTRY_POINTS in
 * scripts/build-info.ts), as for the cleaner's Worker (cleaner-thread.ts).
 */
function workerUrl(): string {
  if (Bun.isStandaloneExecutable) return "./storage/syncfs-worker.ts";
  return new URL("./syncfs-worker.ts", import.meta.url).href;
}

let available: boolean | undefined;

/** Whether syncfs can be called here (Linux with libc.so.6); else callers sync file by file. */
export function isFileSystemSyncAvailable(): boolean {
  if (available !== undefined) return available;
  try {
    const libc = dlopen("libc.so.6", { syncfs: { args: [FFIType.i32], returns: FFIType.i32 } });
    libc.close();
    available = process.platform === "linux";
  } catch {
    available = false;
  }
  return available;
}

/**
 * Syncs the file system holding `dirPath` (isFileSystemSyncAvailable must be true). Resolves
 * once it is durable; rejects when syncfs fails (EIO, ENOSPC and the like), `dirPath` cannot be
 * opened or the Worker dies.
 */
export async function syncFileSystem(dirPath: string): Promise<void> {
  assert(isFileSystemSyncAvailable(), "syncfs is not available here");
  const worker = new Worker(workerUrl());
  try {
    const reply = await new Promise<SyncfsReply | null>((resolve) => {
      worker.onmessage = (event: MessageEvent<SyncfsReply>) => resolve(event.data);
      worker.addEventListener("error", () => resolve(null));
      worker.addEventListener("close", () => resolve(null));
      worker.postMessage({ dirPath } satisfies SyncfsRequest);
    });
    if (reply === null) throw new Error(`syncfs of ${dirPath}: the Worker failed`);
    if (reply.errno === 0) return;
    const code = reply.code ?? `errno ${reply.errno}`;
    throw Object.assign(new Error(`syncfs of ${dirPath} failed: ${reply.error ?? code}`), { code });
  } finally {
    worker.terminate();
  }
}
