// One build at a time into a shared place (a Maven project's target/, a cache dir, dist/quill):
// `bun test --parallel` workers and the two compat passes CI runs at once would otherwise run two
// `mvn package` in one directory, or two downloads into one cache, and corrupt each other's
// output. The lock is a directory made with mkdir (atomic on every file system) holding the
// owner's pid; a lock whose owner is gone (a killed run) is taken over.
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/** Longest a build may hold a lock before a waiter gives up (a cold Maven download). */
const WAIT_LIMIT_MS = 15 * 60_000;
const POLL_MS = 100;
/** A lock dir without a pid this long after it was made lost its owner between the two steps. */
const PIDLESS_LIMIT_MS = 10_000;

/** Runs `build` while holding the lock named by `key` (a path: the place being built). */
export async function withBuildLock<T>(key: string, build: () => Promise<T>): Promise<T> {
  const lock = lockDir(key);
  const deadlineMs = Date.now() + WAIT_LIMIT_MS;
  while (!tryLock(lock)) {
    if (Date.now() > deadlineMs) throw new Error(`build lock ${lock} held too long`);
    await Bun.sleep(POLL_MS);
  }
  try {
    return await build();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** `withBuildLock` for synchronous builds (helpers called outside an async context). */
export function withBuildLockSync<T>(key: string, build: () => T): T {
  const lock = lockDir(key);
  const deadlineMs = Date.now() + WAIT_LIMIT_MS;
  while (!tryLock(lock)) {
    if (Date.now() > deadlineMs) throw new Error(`build lock ${lock} held too long`);
    Bun.sleepSync(POLL_MS);
  }
  try {
    return build();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Where the lock of `key` lives (a directory in the temp dir, named by the path's hash). */
export function lockDir(key: string): string {
  const digest = createHash("sha256").update(resolve(key)).digest("hex").slice(0, 16);
  return join(tmpdir(), `quill-build-lock-${digest}`);
}

/** Takes the lock, or takes it over from a process that died holding it. */
function tryLock(lock: string): boolean {
  try {
    mkdirSync(lock);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    if (!ownerGone(lock)) return false;
    rmSync(lock, { recursive: true, force: true });
    return false;
  }
  writeFileSync(join(lock, "pid"), String(process.pid));
  return true;
}

function ownerGone(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(lock, "pid"), "utf8"));
  } catch {
    // Made a moment ago and the pid not written yet, unless the maker died in between.
    try {
      return Date.now() - statSync(lock).mtimeMs > PIDLESS_LIMIT_MS;
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}

/** The newest modification time of a file, or of any file under a directory: what a build read. */
export function newestMtimeMs(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newestMtimeMs(join(path, name))));
}
