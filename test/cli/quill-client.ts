/**
 * Runs `bun src/main.ts <args>` as a process (asynchronously, so a broker in the test's own
 * process keeps answering), with no QUILL_ variables but the ones given.
 */
import { join } from "node:path";
import { REPO_ROOT } from "../support/broker-harness.ts";

export interface QuillResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export async function quill(
  args: readonly string[],
  options: { env?: Record<string, string>; stdin?: string; cwd?: string } = {},
): Promise<QuillResult> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("QUILL_")),
  );
  const proc = Bun.spawn([process.execPath, join(REPO_ROOT, "src", "main.ts"), ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...env, ...options.env },
    stdin: options.stdin === undefined ? "ignore" : new TextEncoder().encode(options.stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}

/** A command's JSON output, read field by field by the tests. */
// biome-ignore lint/suspicious/noExplicitAny: the tests check the shape with expect()
export type Json = any;

/** Runs and parses stdout as JSON, failing with stderr when the exit code is not 0. */
export async function quillJson(args: readonly string[], stdin?: string): Promise<Json> {
  const r = await quill([...args, "--format", "json"], { stdin });
  if (r.code !== 0) throw new Error(`quill ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}
