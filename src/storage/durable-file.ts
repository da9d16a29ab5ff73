/**
 * Small synchronous file helpers shared by the indexes and the checkpoint files, and the one
 * place that turns an I/O failure into Kafka's KAFKA_STORAGE_ERROR.
 *
 * Everything here uses node:fs on plain fds. Bun.write is never used to append (it corrupts
 * O_APPEND files for writes of 256 KiB or more in Bun 1.4.4, docs/bun.md, File I/O),
 * and nothing is mmapped, so no truncation here can ever raise SIGBUS.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";

/** Wraps an fs failure (ENOSPC, EIO, EROFS, ...) as the retriable KAFKA_STORAGE_ERROR. */
export function storageError(operation: string, filePath: string, cause: unknown): KafkaError {
  const code = (cause as { code?: string } | null)?.code ?? "unknown";
  return new KafkaError(
    ErrorCode.KAFKA_STORAGE_ERROR,
    `${operation} ${filePath} failed (${code})`,
    { cause },
  );
}

/** The whole file, or null if it does not exist. Other errors propagate. */
export function readFileIfExists(filePath: string): Uint8Array | null {
  try {
    return fs.readFileSync(filePath);
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return null;
    throw error;
  }
}

/** Writes `bytes` at `position` of an open fd, looping over short writes. */
export function writeFully(fd: number, bytes: Uint8Array, position: number): void {
  let written = 0;
  // Each pass writes at least one byte or throws, so the loop ends within bytes.length passes.
  while (written < bytes.length) {
    const n = fs.writeSync(fd, bytes, written, bytes.length - written, position + written);
    if (n <= 0) throw Object.assign(new Error("write returned 0"), { code: "EIO" });
    written += n;
  }
}

/** writeFully on the thread pool. */
export async function writeFullyInBackground(
  fd: number,
  bytes: Uint8Array,
  position: number,
): Promise<void> {
  let written = 0;
  // Each pass writes at least one byte or throws, so the loop ends within bytes.length passes.
  while (written < bytes.length) {
    const n = await new Promise<number>((resolve, reject) =>
      fs.write(fd, bytes, written, bytes.length - written, position + written, (error, count) =>
        error ? reject(error) : resolve(count),
      ),
    );
    if (n <= 0) throw Object.assign(new Error("write returned 0"), { code: "EIO" });
    written += n;
  }
}

/**
 * Replaces `filePath` with `bytes` so that a crash leaves either the old or the new content:
 * write a temporary file, fdatasync it, rename it over the target, fsync the directory.
 */
export function writeFileAtomically(filePath: string, bytes: Uint8Array): void {
  const tmpPath = `${filePath}.tmp`;
  const fd = fs.openSync(tmpPath, "w");
  try {
    writeFully(fd, bytes, 0);
    fs.fdatasyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmpPath, filePath);
  fsyncDirectory(path.dirname(filePath));
}

/**
 * writeFileAtomically with the write, fdatasync and directory fsync on the thread pool, for
 * files written while requests are served (the periodic and the cleaner's checkpoints). Its
 * temporary file is not writeFileAtomically's, so a synchronous write of the same file meanwhile
 * cannot write into it; callers never run two of these for one file at once. When
 * `stillCurrent` says no just before the rename (a newer write of the file happened since the
 * bytes were made), the file is left alone and the result is false. With `durable` false
 * nothing is synced: a clean stop syncs the whole file system afterwards (file-system-sync.ts).
 * `bytes` may come as chunks, the file's content in order.
 */
export async function writeFileAtomicallyInBackground(
  filePath: string,
  bytes: Uint8Array | readonly Uint8Array[],
  stillCurrent: () => boolean = () => true,
  durable = true,
): Promise<boolean> {
  const tmpPath = `${filePath}.async.tmp`;
  const handle = await fs.promises.open(tmpPath, "w");
  try {
    // Chunks are written one after another, not copied into one buffer first: copying megabytes
    // on the event loop is the kind of stall this function exists to avoid.
    let position = 0;
    for (const chunk of bytes instanceof Uint8Array ? [bytes] : bytes) {
      await writeFullyInBackground(handle.fd, chunk, position);
      position += chunk.length;
    }
    if (durable) await handle.datasync();
  } finally {
    await handle.close();
  }
  // The rename runs here, on the event loop, right after the check: a synchronous write of the
  // same file (writeFileAtomically) can then never land between the check and the rename, which
  // would let these older bytes replace its newer ones. A rename is a metadata update, no sync.
  if (!stillCurrent()) {
    await fs.promises.rm(tmpPath, { force: true });
    return false;
  }
  fs.renameSync(tmpPath, filePath);
  if (durable) await fsyncDirectoryInBackground(path.dirname(filePath));
  return true;
}

/**
 * A log folded into a snapshot (the embedded offset store's and share state store's
 * compactions): the snapshot written atomically, then the log's fd truncated and fdatasynced,
 * all on the thread pool but the truncate. `onEmptied` runs right after the truncate, before the
 * sync: were the sync to fail, the caller's next records must still go at the file's start, not
 * past a hole of zeros where replay stops. The caller's replay over a snapshot that already
 * holds the log must give the same state, so a crash between rename and truncate is harmless.
 */
export async function replaceLogWithSnapshot(
  snapshotPath: string,
  chunks: readonly Uint8Array[],
  logFd: number,
  onEmptied: () => void,
): Promise<void> {
  await writeFileAtomicallyInBackground(snapshotPath, chunks);
  fs.ftruncateSync(logFd, 0);
  onEmptied();
  await fdatasyncFdInBackground(logFd);
}

/** fsync of a directory on the thread pool, so the event loop does not wait for the disk. */
export async function fsyncDirectoryInBackground(dirPath: string): Promise<void> {
  const handle = await fs.promises.open(dirPath, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Makes a create, rename or unlink in `dirPath` durable. */
export function fsyncDirectory(dirPath: string): void {
  const fd = fs.openSync(dirPath, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Rewrites `filePath` (created if missing) so its first `keepBytes` bytes stay and `tail`
 * follows them, then fdatasyncs it unless `sync` is false (the caller then syncs it off the
 * event loop, fdatasyncInBackground). Used to persist the index entries added since the last
 * flush without rewriting the ones already on disk.
 */
export function writeTailAndSync(
  filePath: string,
  keepBytes: number,
  tail: Uint8Array,
  sync = true,
): void {
  const fd = fs.openSync(filePath, fs.constants.O_RDWR | fs.constants.O_CREAT);
  try {
    writeFully(fd, tail, keepBytes);
    fs.ftruncateSync(fd, keepBytes + tail.length);
    if (sync) fs.fdatasyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * writeTailAndSync's write on the thread pool, without the sync: a clean stop writes every
 * log's index tails this way and then syncs the whole file system (file-system-sync.ts).
 */
export async function writeTailInBackground(
  filePath: string,
  keepBytes: number,
  tail: Uint8Array,
): Promise<void> {
  const handle = await fs.promises.open(filePath, fs.constants.O_RDWR | fs.constants.O_CREAT);
  try {
    let written = 0;
    // Each pass writes at least one byte or throws, so the loop ends within tail.length passes.
    while (written < tail.length) {
      const { bytesWritten } = await handle.write(
        tail,
        written,
        tail.length - written,
        keepBytes + written,
      );
      if (bytesWritten <= 0) throw Object.assign(new Error("write returned 0"), { code: "EIO" });
      written += bytesWritten;
    }
    await handle.truncate(keepBytes + tail.length);
  } finally {
    await handle.close();
  }
}

/** fdatasync of an open file on the thread pool, so the event loop goes on meanwhile. */
export function fdatasyncFdInBackground(fd: number): Promise<void> {
  return new Promise((resolve, reject) => {
    fs.fdatasync(fd, (error) => (error ? reject(error) : resolve()));
  });
}

/** fdatasync of a file by path, on the thread pool. */
export async function fdatasyncInBackground(filePath: string): Promise<void> {
  const handle = await fs.promises.open(filePath, "r+");
  try {
    await handle.datasync();
  } finally {
    await handle.close();
  }
}
