/**
 * `npm run test:unit`: the test files that start no process (no ZooKeeper, kcat, Java, Python,
 * child broker or compiled binary), run with a preload that makes starting one an error.
 *
 * The selection is derived, not listed: a test file is left out when it, or any module it imports
 * (transitively, by relative path, type-only imports aside), calls Bun.spawn/spawnSync or uses
 * node:child_process. So a new test is in the fast set unless it starts a process, and one that
 * starts a process through a path this scan misses fails under the preload instead of slipping in.
 * `--list` prints the selection without running it; other arguments go to `bun test`.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const REPO_ROOT = resolve(import.meta.dir, "..");
const STARTS_PROCESS = /\bBun\.spawn(Sync)?\b|["']node:child_process["']|["']child_process["']/;
/** Value imports and re-exports with a relative specifier; `import type` lines are skipped. */
const RELATIVE_IMPORT =
  /^\s*(?:import|export)\s+(?!type\s)(?:[^"';]*?\sfrom\s+)?["'](\.{1,2}\/[^"']+)["']/gm;
const DYNAMIC_IMPORT = /\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;

const startsProcessCache = new Map<string, boolean>();

/** Whether loading and running `path` can start a process. */
export function startsProcess(path: string, visiting = new Set<string>()): boolean {
  const cached = startsProcessCache.get(path);
  if (cached !== undefined) return cached;
  if (visiting.has(path)) return false;
  visiting.add(path);
  const text = readFileSync(path, "utf8");
  let result = STARTS_PROCESS.test(text);
  for (const pattern of [RELATIVE_IMPORT, DYNAMIC_IMPORT]) {
    for (const match of text.matchAll(pattern)) {
      if (result) break;
      const target = resolve(dirname(path), match[1]!);
      // Generators hold import lines in strings; only files that exist are followed.
      if (target.endsWith(".ts") && existsSync(target)) result = startsProcess(target, visiting);
    }
  }
  startsProcessCache.set(path, result);
  return result;
}

/** Repo-relative paths of the test files that start no process, sorted. */
export function unitTestFiles(): string[] {
  const glob = new Bun.Glob("test/**/*.test.ts");
  const files = [...glob.scanSync({ cwd: REPO_ROOT })].sort();
  return files.filter((file) => !startsProcess(join(REPO_ROOT, file)));
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const files = unitTestFiles();
  if (args.includes("--list")) {
    for (const file of files) console.log(file);
    process.exit(0);
  }
  const preload = relative(REPO_ROOT, join(REPO_ROOT, "test", "support", "no-processes.ts"));
  const argv = [process.execPath, "test", "--preload", `./${preload}`, ...args];
  const proc = Bun.spawn([...argv, ...files.map((file) => `./${file}`)], {
    cwd: REPO_ROOT,
    stdio: ["inherit", "inherit", "inherit"],
  });
  process.exit(await proc.exited);
}
