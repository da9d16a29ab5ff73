/**
 * The Kafka 4.4 Java client programs of test/compat/java4, built with Maven on first use, and
 * run as processes whose stdout lines a test can wait for.
 */
import { expect } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ensureMavenPackage } from "../../scripts/maven-project.ts";
import { REPO_ROOT } from "./broker-harness.ts";
import { waitUntil } from "./wait-until.ts";

export const JAVA4_DIR = join(REPO_ROOT, "test", "compat", "java4");

/**
 * Builds the programs (and their classpath file) when their sources changed, under a lock that
 * test files running in parallel share, and checks that `className` is among them.
 */
export function ensureJava4Built(className: string): void {
  ensureMavenPackage(JAVA4_DIR);
  const classFile = join(JAVA4_DIR, "target", "classes", "quill", "compat4", `${className}.class`);
  if (!existsSync(classFile)) throw new Error(`${classFile} is missing after the build`);
}

export function java4Command(main: string, args: readonly string[]): string[] {
  return javaCommand(JAVA4_DIR, main, args);
}

/** `java` running `main` of a built Maven project (test/compat/java or java4). */
export function javaCommand(dir: string, main: string, args: readonly string[]): string[] {
  const classpath = readFileSync(join(dir, "target", "classpath.txt"), "utf8").trim();
  return [
    "java",
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
    "-cp",
    `${join(dir, "target", "classes")}:${classpath}`,
    main,
    ...args,
  ];
}

/**
 * Runs a program to its end and returns its stdout lines; it must exit 0 with "OK" as its last
 * line (its output is printed when it does not exit 0).
 */
export async function runJava4(main: string, args: readonly string[]): Promise<string[]> {
  const proc = Bun.spawn(java4Command(main, args), { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0) console.log(out, err);
  expect(code).toBe(0);
  const lines = out.trim().split("\n");
  expect(lines.at(-1)).toBe("OK");
  return lines;
}

/** A running Java program: its stdout as lines so far, its stderr, and its exit. */
export class Java4Process {
  readonly lines: string[] = [];
  stderr = "";
  readonly exited: Promise<number>;
  private readonly proc: ReturnType<typeof Bun.spawn>;

  /** Runs `quill.compat4.<main>`, or `command` (another program) when given. */
  constructor(main: string, args: readonly string[], command?: readonly string[]) {
    this.proc = Bun.spawn([...(command ?? java4Command(`quill.compat4.${main}`, args))], {
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    const out = this.pump(this.proc.stdout as ReadableStream<Uint8Array>, (l) =>
      this.lines.push(l),
    );
    const err = this.pump(this.proc.stderr as ReadableStream<Uint8Array>, (l) => {
      this.stderr += `${l}\n`;
    });
    this.exited = Promise.all([out, err, this.proc.exited]).then(([, , code]) => code);
  }

  /** The first stdout line starting with `prefix`, waiting for it. */
  async line(prefix: string, timeoutMs: number): Promise<string> {
    const find = () => this.lines.find((l) => l.startsWith(prefix));
    await waitUntil(() => find() !== undefined || this.proc.exitCode !== null, timeoutMs, prefix);
    const found = find();
    if (found === undefined) {
      throw new Error(`exited without "${prefix}":\n${this.lines.join("\n")}\n${this.stderr}`);
    }
    return found;
  }

  /** Writes one line to the program's stdin. */
  send(line: string): void {
    const stdin = this.proc.stdin as import("bun").FileSink;
    stdin.write(`${line}\n`);
    stdin.flush();
  }

  kill(): void {
    this.proc.kill(9);
  }

  private async pump(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void) {
    const decoder = new TextDecoder();
    let partial = "";
    for await (const chunk of stream) {
      partial += decoder.decode(chunk, { stream: true });
      const parts = partial.split("\n");
      partial = parts.pop()!;
      for (const l of parts) onLine(l);
    }
    if (partial !== "") onLine(partial);
  }
}
