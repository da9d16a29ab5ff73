// The commit and date a build embeds (src/version.ts reads them through `bun build --define`).
// Neither is written to a file, so a build leaves the checkout unchanged.

/**
 * The modules `bun build --compile` bundles as entry points, relative to the repository root:
 * the executable's, and the Workers (the cleaner's, and the clean stop's syncfs), which the binary
 * can start only when they are ones (Bun looks a Worker's module up among the bundle's entry
 * points). The bundle's root is their common folder, `src/`; src/storage/cleaner-thread.ts and
 * file-system-sync.ts name the Workers relative to it.
 */
export const BUILD_ENTRY_POINTS = [
  "src/main.ts",
  "src/storage/cleaner-worker.ts",
  "src/storage/syncfs-worker.ts",
] as const;

/** HEAD (12 hex digits), `-dirty` when tracked files differ; "unknown" outside a git checkout. */
export function buildCommit(root: string): string {
  const head = Bun.spawnSync(["git", "rev-parse", "--short=12", "HEAD"], { cwd: root });
  if (head.exitCode !== 0) return "unknown";
  const commit = head.stdout.toString().trim();
  const status = Bun.spawnSync(["git", "status", "--porcelain", "--untracked-files=no"], {
    cwd: root,
  });
  return status.stdout.toString().trim() === "" ? commit : `${commit}-dirty`;
}

/** Now, or SOURCE_DATE_EPOCH (seconds) when set so that a rebuild can be byte-identical. */
export function buildDate(env: NodeJS.ProcessEnv = process.env): string {
  const epoch = env.SOURCE_DATE_EPOCH;
  const date = epoch === undefined ? new Date() : new Date(Number(epoch) * 1000);
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** The `--define` arguments that fill src/version.ts's BUILD_COMMIT and BUILD_DATE. */
export function defineArgs(commit: string, date: string): string[] {
  return [
    "--define",
    `QUILL_BUILD_COMMIT=${JSON.stringify(commit)}`,
    "--define",
    `QUILL_BUILD_DATE=${JSON.stringify(date)}`,
  ];
}

/** Runs a command the build scripts need; its stdout, or an Error carrying its stderr. */
export function runChecked(argv: string[], cwd: string): string {
  const result = Bun.spawnSync(argv, { cwd, stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) {
    throw new Error(`${argv.join(" ")} exited ${result.exitCode}:\n${result.stderr.toString()}`);
  }
  return result.stdout.toString();
}
