// The previous release's binary, for the upgrade tests (test/release/upgrade.test.ts): a newer
// binary must open a data dir the previous one wrote, and a cluster of previous-release brokers
// must take a rolling upgrade under load. Built from that release's commit in this repository's
// history (a shared clone, so nothing in the checkout changes), with its own locked runtime
// dependencies from npm, and cached in ~/.cache/quill-release/previous/<commit>/.
//
// `bun scripts/previous-release.ts` builds it (if not cached) and prints its path. Each release
// moves PREVIOUS_RELEASE to itself (docs/development.md, "Releases").
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { runChecked } from "./build-info.ts";
import { withBuildLockSync } from "./build-lock.ts";

export const PREVIOUS_RELEASE = {
  version: "0.1.0",
  commit: "c96ea060f050ea0a4d39f739ff8c33c0e03640aa",
} as const;

const root = join(import.meta.dir, "..");
const cacheRoot = join(homedir(), ".cache", "quill-release", "previous");

/**
 * The path of the previous release's `quill` executable, built on first use. A clone without
 * that commit (a shallow one) fetches it from origin first.
 */
export function previousReleaseBinary(): string {
  const { commit } = PREVIOUS_RELEASE;
  const binary = join(cacheRoot, commit, "quill");
  if (existsSync(binary)) return binary;
  // Locked: test files running in parallel may both find it missing.
  return withBuildLockSync(binary, () => (existsSync(binary) ? binary : build(commit, binary)));
}

function build(commit: string, binary: string): string {
  const has = Bun.spawnSync(["git", "cat-file", "-e", `${commit}^{commit}`], { cwd: root });
  if (has.exitCode !== 0) runChecked(["git", "fetch", "--quiet", "origin", commit], root);
  mkdirSync(cacheRoot, { recursive: true });
  const stage = mkdtempSync(join(cacheRoot, "stage-"));
  try {
    runChecked(["git", "clone", "--quiet", "--shared", "--no-checkout", root, stage], root);
    runChecked(["git", "checkout", "--quiet", commit], stage);
    // Runtime dependencies only: the build needs the addons the binary embeds, not the tools.
    runChecked(["npm", "ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund"], stage);
    runChecked([process.execPath, join(stage, "scripts", "build.ts")], stage);
    mkdirSync(join(cacheRoot, commit), { recursive: true });
    renameSync(join(stage, "dist", "quill"), binary);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
  return binary;
}

if (import.meta.main) console.log(previousReleaseBinary());
