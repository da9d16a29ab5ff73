/**
 * Starts Quill brokers as child processes (`bun src/main.ts serve` or the compiled
 * `dist/quill serve`) whose address is read from the "listening on HOST:PORT" line. Child brokers
 * stop with SIGTERM or die with kill -9 and restart on the same data dir and port, which is what
 * the restart tests need.
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { newestMtimeMs, withBuildLockSync } from "../../scripts/build-lock.ts";
import {
  REPO_ROOT,
  removeDir,
  type Settings,
  tempDir,
  testBrokerSettings,
} from "./broker-harness.ts";

export const BUILT_BINARY = join(REPO_ROOT, "dist", "quill");

/** How long a child broker may take to print its listening line (a cold start takes ~0.1 s). */
const START_TIMEOUT_MS = 20_000;
/** How long a clean stop may take before the test calls it hung. */
const STOP_TIMEOUT_MS = 20_000;
const LISTENING_LINE = /listening on ([^\s:]+):(\d+)/;

/** Which executable a child broker runs: the source, dist/quill, or another build's binary. */
export type BrokerCommand = "source" | "binary" | { readonly executable: string };

export interface ChildBrokerOptions {
  /** "source" runs `bun src/main.ts serve`; "binary" runs `dist/quill serve` (built if stale). */
  readonly command?: BrokerCommand;
  /** Defaults to a new temp dir, which `remove()` deletes. */
  readonly dataDir?: string;
  /** 0 (the default) lets the kernel choose; a restart reuses the port first bound. */
  readonly port?: number;
  readonly settings?: Settings;
  /** Added to the broker's environment (test hooks such as TEST_QUILL_HOLD_TXN_MARKERS). */
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * A broker running as a child process. Its stderr is collected into `stderrText` so tests can
 * check what it logged, and `exited` resolves with its exit code.
 */
export class ChildBroker {
  readonly exited: Promise<number>;
  private readonly stderrDone: Promise<void>;

  private constructor(
    readonly proc: Subprocess<"ignore", "pipe", "pipe">,
    readonly options: Required<ChildBrokerOptions>,
    private readonly ownsDataDir: boolean,
    private readonly stderr: StderrText,
    readonly host: string,
    readonly port: number,
  ) {
    this.exited = proc.exited;
    this.stderrDone = stderr.done;
  }

  /** Starts `quill serve` and waits for its listening line. */
  static async start(options: ChildBrokerOptions = {}): Promise<ChildBroker> {
    const resolved: Required<ChildBrokerOptions> = {
      command: options.command ?? "source",
      dataDir: options.dataDir ?? tempDir(),
      port: options.port ?? 0,
      settings: testBrokerSettings(options.settings ?? {}),
      env: options.env ?? {},
    };
    return await ChildBroker.launch(resolved, options.dataDir === undefined);
  }

  private static async launch(
    options: Required<ChildBrokerOptions>,
    ownsDataDir: boolean,
  ): Promise<ChildBroker> {
    const argv = [
      ...commandPrefix(options.command),
      "serve",
      "--listen",
      `127.0.0.1:${options.port}`,
      "--data-dir",
      options.dataDir,
      ...Object.entries(options.settings).flatMap(([k, v]) => ["--set", `${k}=${v}`]),
    ];
    // The data dir as working directory: a compiled binary must not need the repo around it.
    const proc = Bun.spawn(argv, {
      cwd: options.dataDir,
      env: { ...process.env, ...options.env },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const stderr = new StderrText(proc.stderr);
    let match: RegExpMatchArray;
    try {
      match = await stderr.waitFor(LISTENING_LINE, START_TIMEOUT_MS);
    } catch (error) {
      proc.kill("SIGKILL");
      throw error;
    }
    return new ChildBroker(proc, options, ownsDataDir, stderr, match[1]!, Number(match[2]));
  }

  get pid(): number {
    return this.proc.pid;
  }

  get bootstrap(): string {
    return `${this.host}:${this.port}`;
  }

  get dataDir(): string {
    return this.options.dataDir;
  }

  /** Everything the broker wrote to stderr so far. */
  get stderrText(): string {
    return this.stderr.text;
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Sends SIGTERM and resolves with the exit code once the process and its stderr are done. */
  async terminate(): Promise<number> {
    this.proc.kill("SIGTERM");
    const what = `broker ${this.pid} to stop on SIGTERM`;
    const code = await withTimeout(this.exited, STOP_TIMEOUT_MS, what);
    await this.stderrDone;
    return code;
  }

  /** kill -9: no flush, no clean-shutdown marker. Resolves once the process is gone. */
  async kill9(): Promise<void> {
    this.proc.kill("SIGKILL");
    await this.exited;
    await this.stderrDone;
  }

  /**
   * Starts a new broker process on the same data dir and port (this one must have exited),
   * running `command` when given (an upgrade), else what this one ran.
   */
  async restart(command: BrokerCommand = this.options.command): Promise<ChildBroker> {
    if (this.running) {
      throw new Error(`broker ${this.pid} is still running; stop it before restarting`);
    }
    const options = { ...this.options, port: this.port, command };
    return await ChildBroker.launch(options, this.ownsDataDir);
  }

  /** Kills the process if it still runs and deletes the data dir if the harness made it. */
  async remove(): Promise<void> {
    if (this.running) await this.kill9();
    if (this.ownsDataDir) removeDir(this.options.dataDir);
  }
}

function commandPrefix(command: BrokerCommand): string[] {
  if (typeof command === "object") return [command.executable];
  if (command === "binary") return [ensureBuiltBinary()];
  return [process.execPath, join(REPO_ROOT, "src", "main.ts")];
}

/** Collects a child's stderr as text for as long as the child writes it. */
class StderrText {
  text = "";
  readonly done: Promise<void>;
  private readonly waiters = new Set<() => void>();

  constructor(stream: ReadableStream<Uint8Array>) {
    this.done = this.pump(stream);
  }

  /** Resolves with the first match of `pattern` in the text, now or once it is written. */
  async waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    let ended = false;
    void this.done.then(() => {
      ended = true;
    });
    for (;;) {
      const match = this.text.match(pattern);
      if (match !== null) return match;
      if (ended) throw new Error(`broker exited before printing ${pattern}; stderr:\n${this.text}`);
      const changed = new Promise<void>((resolve) => this.waiters.add(resolve));
      const what = `${pattern} on stderr`;
      await withTimeout(Promise.race([changed, this.done]), deadline - Date.now(), what, this.text);
    }
  }

  private async pump(stream: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      this.text += decoder.decode(chunk, { stream: true });
      for (const wake of this.waiters) wake();
      this.waiters.clear();
    }
  }
}

async function withTimeout<T>(
  promise: Promise<T>,
  timeoutMs: number,
  what: string,
  context = "",
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    const message = `timed out after ${timeoutMs} ms waiting for ${what}\n${context}`;
    timer = setTimeout(() => reject(new Error(message)), Math.max(0, timeoutMs));
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Returns the path of dist/quill, running `bun run build` first when the binary is missing or
 * older than any source it is built from (CI builds before testing, so there it is reused).
 */
export function ensureBuiltBinary(): string {
  // Under a lock: two `bun test --parallel` workers must not build dist/quill at once.
  return withBuildLockSync(BUILT_BINARY, () => {
    const inputsMs = Math.max(
      newestMtimeMs(join(REPO_ROOT, "src")),
      newestMtimeMs(join(REPO_ROOT, "package.json")),
      newestMtimeMs(join(REPO_ROOT, "scripts", "build.ts")),
    );
    let builtMs = 0;
    try {
      builtMs = statSync(BUILT_BINARY).mtimeMs;
    } catch {
      // Not built yet.
    }
    if (builtMs > inputsMs) return BUILT_BINARY;
    const result = Bun.spawnSync([process.execPath, "run", "build"], {
      cwd: REPO_ROOT,
      stdout: "pipe",
      stderr: "pipe",
    });
    if (result.exitCode !== 0) {
      throw new Error(`bun run build failed:\n${result.stdout}\n${result.stderr}`);
    }
    return BUILT_BINARY;
  });
}
