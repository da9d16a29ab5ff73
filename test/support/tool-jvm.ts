/**
 * Kafka's command-line tools run in one long-lived JVM per classpath (tool-jvm/ToolRunner.java)
 * instead of one `java` process per command: each command's exit code, stdout and stderr are
 * what the process would have given, but the JVM's start and the tools' class loading (seconds
 * per command on the loaded 2-core machine, over forty commands in the suite) are paid once per
 * test process. The JVM is killed when the test process exits, or by a watchdog if it dies.
 */
import { join } from "node:path";
import type { Subprocess } from "bun";
import { startWatchdog } from "./zookeeper-server.ts";

export interface ToolRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

const RUNNER = join(import.meta.dir, "tool-jvm", "ToolRunner.java");

type Pending = { resolve: (run: ToolRun) => void; reject: (error: Error) => void };

class ToolJvm {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private readonly ready: Promise<void>;
  private readonly proc: Subprocess<"pipe", "pipe", "inherit">;

  constructor(classpath: string, jvmOptions: readonly string[]) {
    this.proc = Bun.spawn(["java", ...jvmOptions, "-cp", classpath, RUNNER], {
      stdin: "pipe",
      stdout: "pipe",
      stderr: "inherit",
    });
    startWatchdog(this.proc.pid);
    let started: () => void = () => {};
    this.ready = new Promise((resolve) => {
      started = resolve;
    });
    void this.read(started);
  }

  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  async run(mainClass: string, args: readonly string[]): Promise<ToolRun> {
    const id = this.nextId++;
    const answer = new Promise<ToolRun>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
    });
    const fields = [mainClass, ...args].map((f) => Buffer.from(f, "utf8").toString("base64"));
    this.proc.stdin.write(`${id}\t${fields.join("\t")}\n`);
    this.proc.stdin.flush();
    await this.ready;
    return await answer;
  }

  kill(): void {
    this.proc.kill("SIGKILL");
  }

  private async read(started: () => void): Promise<void> {
    const decoder = new TextDecoder();
    let partial = "";
    for await (const chunk of this.proc.stdout) {
      partial += decoder.decode(chunk, { stream: true });
      const lines = partial.split("\n");
      partial = lines.pop()!;
      for (const line of lines) {
        if (line === "READY") started();
        else this.answer(line);
      }
    }
    const code = await this.proc.exited;
    started();
    for (const { reject } of this.pending.values()) {
      reject(new Error(`the tool JVM exited with ${code} before answering`));
    }
    this.pending.clear();
  }

  private answer(line: string): void {
    const [id, code, out, err] = line.split("\t");
    const waiting = this.pending.get(Number(id));
    if (waiting === undefined) return;
    this.pending.delete(Number(id));
    const text = (b64 = "") => Buffer.from(b64, "base64").toString("utf8");
    waiting.resolve({ code: Number(code), stdout: text(out), stderr: text(err) });
  }
}

const jvms = new Map<string, ToolJvm>();
process.on("exit", () => {
  for (const jvm of jvms.values()) jvm.kill();
});

/**
 * Runs `mainClass` with `args` to its end in the tool JVM for `classpath` (started on first use,
 * again if it died); a non-zero exit is returned, not thrown. Calls may overlap.
 */
export function runToolInJvm(
  classpath: string,
  mainClass: string,
  args: readonly string[],
  jvmOptions: readonly string[] = [],
): Promise<ToolRun> {
  const key = [classpath, ...jvmOptions].join("\0");
  let jvm = jvms.get(key);
  if (jvm === undefined || !jvm.alive) {
    // C1 only: short commands gain nothing from C2, whose compiles compete for the two cores.
    const options = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", ...jvmOptions];
    jvm = new ToolJvm(classpath, options);
    jvms.set(key, jvm);
  }
  return jvm.run(mainClass, args);
}
