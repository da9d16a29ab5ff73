// Runs the README's "Using kcat / kafkajs" commands against a broker, with 127.0.0.1:9092
// replaced by the broker's address, so the documented commands are ones that work.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, removeDir, tempDir } from "../support/broker-harness.ts";
import { ChildBroker } from "../support/child-broker.ts";
import { kcatOk, stdoutText } from "./kcat-process.ts";

const README_ADDRESS = "127.0.0.1:9092";
const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
const section = readme.slice(readme.indexOf("## Using kcat / kafkajs"));
const sectionText = section.slice(0, section.indexOf("\n## ", 5));
const blocks = (lang: string) =>
  [...sectionText.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]!);

let broker: ChildBroker;
let workDir: string;

beforeAll(async () => {
  const serve = blocks("sh")[0]!;
  // The README's serve line, with its --set flags, is the broker under test.
  expect(serve.trim()).toBe("./dist/quill serve --set num.partitions=3");
  broker = await ChildBroker.start({ settings: { "num.partitions": "3" } });
  workDir = tempDir("quill-readme-");
}, 60_000);
afterAll(async () => {
  await broker.remove();
  removeDir(workDir);
});

describe("the README's client commands", () => {
  test("the kcat block runs as written and reads back what it wrote", async () => {
    const script = blocks("sh")[1]!.replaceAll(README_ADDRESS, broker.bootstrap);
    const proc = Bun.spawn(["bash", "-euo", "pipefail", "-c", script], {
      cwd: workDir,
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err, code] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
      proc.exited,
    ]);
    expect({ code, err: code === 0 ? "" : err }).toEqual({ code: 0, err: "" });
    expect(out).toContain(`broker 0 at ${broker.bootstrap} (controller)`);
    expect(out).toMatch(/^user-1 \d 0 logged in$/m);
    expect(out).toMatch(/^user-2 \d 0 logged out$/m);
    expect(out).toMatch(/^demo \[0\] offset -?\d+$/m);
  }, 30_000);

  test("the kafkajs producer block runs as written", async () => {
    const proc = spawnReadmeScript(blocks("js")[0]!, "producer");
    const [err, exitCode] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
    expect({ exitCode, err: exitCode === 0 ? "" : err }).toEqual({ exitCode: 0, err: "" });
    const back = await kcatOk(broker.bootstrap, [
      "-C",
      "-e",
      "-q",
      "-t",
      "demo",
      "-X",
      "fetch.wait.max.ms=100",
      "-f",
      "%k=%s\n",
    ]);
    expect(stdoutText(back)).toContain("user-1=hello\n");
  }, 30_000);

  test("the kafkajs consumer block joins its group and prints the records", async () => {
    const proc = spawnReadmeScript(blocks("js")[1]!, "consumer");
    const printed = await readUntil(proc.stdout, /^\d+ \d+ user-1 hello$/m, 20_000);
    proc.kill();
    await proc.exited;
    expect(printed).toMatch(/^\d+ 0 user-1 logged in$/m);
    expect(printed).toMatch(/^\d+ \d+ user-1 hello$/m);
  }, 30_000);
});

/**
 * Runs a README block as an ES module with the broker's address. The file goes under the repo's
 * node_modules so that `import "kafkajs"` resolves, and is removed once the process exits.
 */
function spawnReadmeScript(code: string, name: string) {
  const dir = join(REPO_ROOT, "node_modules", ".cache", "quill-readme-test");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `readme-${name}-${process.pid}.mjs`);
  writeFileSync(file, code.replaceAll(README_ADDRESS, broker.bootstrap));
  const proc = Bun.spawn([process.execPath, file], { stdout: "pipe", stderr: "pipe" });
  void proc.exited.then(() => rmSync(file, { force: true }));
  return proc;
}

/** Reads a child's stdout until `pattern` matches or the deadline passes; returns the text. */
async function readUntil(stream: ReadableStream<Uint8Array>, pattern: RegExp, timeoutMs: number) {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(text) && Date.now() < deadline) {
    const next = await Promise.race([reader.read(), Bun.sleep(deadline - Date.now())]);
    if (next === undefined || next.done) break;
    text += decoder.decode(next.value);
  }
  reader.releaseLock();
  return text;
}
