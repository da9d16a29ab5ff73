// Pieces the benchmark scripts share (bench-vs-kafka, bench-e2e): child processes with a
// deadline, librdkafka C programs compiled once into ~/.cache/quill-bench, per-process CPU time
// and peak RSS from /proc, the machine's load average, the loopback ceiling from iperf3
// (bench-e2e keeps its own, which falls back to a Bun socket pump), and the longest event-loop
// gap of an in-process benchmark (the fold benchmarks).
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { homedir, loadavg } from "node:os";
import { basename, join } from "node:path";

/** Compiled load programs and the Apache Kafka download live here, outside the repository. */
export const CACHE_DIR = join(homedir(), ".cache", "quill-bench");
const CLOCK_TICKS_PER_SECOND = 100;
const IPERF_SECONDS = 3;

export class CommandError extends Error {}

/**
 * Runs `argv` to completion and returns its stdout; a non-zero exit or running past `timeoutMs`
 * (the process is then killed) throws with the command's stderr.
 */
export async function runCommand(argv: readonly string[], timeoutMs: number): Promise<string> {
  const proc = Bun.spawn([...argv], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    proc.kill("SIGKILL");
  }, timeoutMs);
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  if (code !== 0) {
    const why = timedOut ? `timed out after ${timeoutMs} ms` : `exited ${code}`;
    const output = `${stderr.slice(-4000)}\n${stdout.slice(-2000)}`;
    throw new CommandError(`${argv.join(" ")} ${why}:\n${output}`);
  }
  return stdout;
}

/**
 * Compiles a single-file librdkafka C program into the cache, once per version of its source.
 * Returns the binary's path, or the compiler's complaint when there is no C toolchain or no
 * librdkafka headers (apt: librdkafka-dev).
 */
export function compileRdkafkaProgram(source: string): { path: string } | { error: string } {
  mkdirSync(CACHE_DIR, { recursive: true });
  // Named by the source's hash: worktrees holding other versions of it share the cache, and a
  // run never picks up a binary another checkout built.
  const hash = Bun.hash(readFileSync(source)).toString(16);
  const path = join(CACHE_DIR, `${basename(source, ".c")}-${hash}`);
  if (mtimeMs(path) > 0) return { path };
  const building = `${path}.${process.pid}`;
  const cc = Bun.spawnSync(["cc", "-O2", "-o", building, source, "-lrdkafka"], { stderr: "pipe" });
  if (cc.exitCode !== 0) return { error: `cannot compile ${source}: ${cc.stderr.toString()}` };
  renameSync(building, path);
  return { path };
}

function mtimeMs(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

/** User plus system CPU seconds the process has used so far. */
export function cpuSeconds(pid: number): number {
  // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

/** The process's peak resident set (VmHWM) since it started or since `resetPeakRss`. */
export function peakRssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = status.match(/^VmHWM:\s+(\d+) kB$/m);
  return match === null ? 0 : Number(match[1]) * 1024;
}

/** Sets VmHWM back to the current RSS (Linux: writing 5 to clear_refs), so a phase's peak shows. */
export function resetPeakRss(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
  } catch {
    // Without permission the peak simply stays the process-wide one, which is still an upper bound.
  }
}

/** The number after `flag` on the command line (`--records 1000`), else `fallback`. */
export function numberOption(flag: string, fallback: number): number {
  const i = process.argv.indexOf(flag);
  return i < 0 ? fallback : Number(process.argv[i + 1]);
}

/** The word after `flag` on the command line (`--quill ./dist/quill`), else undefined. */
export function stringOption(flag: string): string | undefined {
  const i = process.argv.indexOf(flag);
  return i < 0 ? undefined : process.argv[i + 1];
}

/** A one-line launcher in `dir` that execs Bun on the sources, so the PID is the broker's. */
export function sourceLauncher(dir: string): string {
  const launcher = join(dir, "quill-from-source");
  const main = join(import.meta.dir, "..", "src", "main.ts");
  writeFileSync(launcher, `#!/bin/sh\nexec '${process.execPath}' '${main}' "$@"\n`);
  chmodSync(launcher, 0o755);
  return launcher;
}

/** The 1-minute load average, to print next to every figure on a shared machine. */
export function loadAverage(): string {
  return loadavg()
    .map((n) => n.toFixed(2))
    .join(" ");
}

/** Loopback TCP throughput in MB/s (1 MB = 1e6 B) from a short iperf3 run, or null without it. */
export async function loopbackMegabytesPerSecond(): Promise<number | null> {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  let server: ReturnType<typeof Bun.spawn> | null = null;
  try {
    server = Bun.spawn(["iperf3", "-s", "-1", "-p", String(port)], {
      stdout: "ignore",
      stderr: "ignore",
    });
    await Bun.sleep(300);
    const argv = [
      "iperf3",
      "-c",
      "127.0.0.1",
      "-p",
      String(port),
      "-t",
      String(IPERF_SECONDS),
      "-J",
    ];
    const out = await runCommand(argv, 30_000);
    const report = JSON.parse(out) as { end: { sum_received: { bits_per_second: number } } };
    return report.end.sum_received.bits_per_second / 8 / 1e6;
  } catch (error) {
    console.error(`note: iperf3 unavailable (${(error as Error).message.split("\n")[0]})`);
    return null;
  } finally {
    server?.kill();
  }
}

/** The port a `quill serve --listen 127.0.0.1:0` child prints once it listens. */
export async function listeningPort(stderr: ReadableStream<Uint8Array>): Promise<number> {
  let text = "";
  for await (const chunk of stderr) {
    text += new TextDecoder().decode(chunk);
    const match = /listening on [\d.]+:(\d+)/.exec(text);
    if (match !== null) return Number(match[1]);
  }
  throw new Error(`broker exited: ${text}`);
}

/**
 * The longest gap between the ticks of a 1 ms interval (any stall of the event loop shows as a
 * long gap) and the process's CPU time within a gap (all threads; a gap during which other
 * processes had the cores uses little), from `reset()` until `stop()`.
 */
export class LoopGapMeter {
  worstGapMs = 0;
  worstGapCpuMs = 0;
  private lastMs = performance.now();
  private lastCpuUs = processCpuUs();
  private readonly ticker = setInterval(() => {
    const nowMs = performance.now();
    const nowCpuUs = processCpuUs();
    this.worstGapMs = Math.max(this.worstGapMs, nowMs - this.lastMs);
    this.worstGapCpuMs = Math.max(this.worstGapCpuMs, (nowCpuUs - this.lastCpuUs) / 1000);
    this.lastMs = nowMs;
    this.lastCpuUs = nowCpuUs;
  }, 1);

  reset(): void {
    this.worstGapMs = 0;
    this.worstGapCpuMs = 0;
    this.lastMs = performance.now();
    this.lastCpuUs = processCpuUs();
  }

  stop(): void {
    clearInterval(this.ticker);
  }
}

function processCpuUs(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}
