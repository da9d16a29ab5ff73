/**
 * Runs kcat (the Debian `kcat` package, a librdkafka client) as a separate process, with a
 * deadline so a hung client fails the test instead of the whole run.
 */
const KCAT_TIMEOUT_MS = 30_000;

export interface KcatResult {
  readonly exitCode: number;
  readonly stdout: Uint8Array;
  readonly stderr: string;
}

/** kcat's stdout as text (for -L, -Q and -f formats that print text). */
export const stdoutText = (result: KcatResult) => new TextDecoder().decode(result.stdout);

/**
 * Runs `kcat -b bootstrap ...args`, feeding `stdin` if given. `-m 10` makes a metadata wait fail
 * after 10 s rather than kcat's default 5 s, which a loaded 2-core machine can exceed.
 */
export async function kcat(
  bootstrap: string,
  args: readonly string[],
  options: { stdin?: Uint8Array | string; timeoutMs?: number } = {},
): Promise<KcatResult> {
  const input = options.stdin === undefined ? "ignore" : new Blob([options.stdin]);
  const proc = Bun.spawn(["kcat", "-b", bootstrap, "-m", "10", ...args], {
    stdin: input,
    stdout: "pipe",
    stderr: "pipe",
  });
  const timeoutMs = options.timeoutMs ?? KCAT_TIMEOUT_MS;
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(proc.stdout).bytes(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  if (proc.signalCode === "SIGKILL") {
    throw new Error(`kcat ${args.join(" ")} did not finish in ${timeoutMs} ms; stderr:\n${stderr}`);
  }
  return { exitCode, stdout, stderr };
}

/** Like `kcat`, but throws with kcat's stderr when it exits non-zero. */
export async function kcatOk(
  bootstrap: string,
  args: readonly string[],
  options: { stdin?: Uint8Array | string; timeoutMs?: number } = {},
): Promise<KcatResult> {
  const result = await kcat(bootstrap, args, options);
  if (result.exitCode !== 0) {
    throw new Error(`kcat ${args.join(" ")} exited ${result.exitCode}; stderr:\n${result.stderr}`);
  }
  return result;
}
