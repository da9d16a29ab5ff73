/**
 * `quill export` on a terminal (a pseudo-terminal from util-linux `script`) redraws its progress
 * in place (cursor-up and erase codes, a total line), where piped stderr gets plain lines.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import {
  type InProcessBroker,
  REPO_ROOT,
  removeDir,
  startInProcessBroker,
  tempDir,
} from "../support/broker-harness.ts";
import { quill, quillJson } from "./quill-client.ts";

let broker: InProcessBroker;
const dir = tempDir("quill-export-tty-");

beforeAll(async () => {
  broker = await startInProcessBroker({});
}, 60_000);
afterAll(async () => {
  await broker.stop();
  removeDir(broker.dataDir);
  removeDir(dir);
});

test("export progress on a terminal is redrawn in place with a total line", async () => {
  const b = ["-b", broker.bootstrap];
  await quillJson(["topic", "create", "tty", "-p", "2", ...b]);
  await quillJson(["topic", "produce", "tty", ...b], "x\n".repeat(2000));
  const command = [process.execPath, join(REPO_ROOT, "src", "main.ts"), "export", "tty"];
  const line = [...command, "--to", join(dir, "out"), ...b].join(" ");
  const run = Bun.spawn(["script", "-qec", line, "/dev/null"], {
    cwd: REPO_ROOT,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [screen, code] = await Promise.all([new Response(run.stdout).text(), run.exited]);
  expect(code).toBe(0);
  expect(screen).toContain("\x1b[J");
  expect(screen).toContain("total: 2000/2000 records (100.0%)");
  expect(screen).toContain("exported 2000 records");
  const piped = await quill(["export", "tty", "--to", join(dir, "piped"), ...b]);
  expect(piped.stderr).not.toContain("\x1b[");
}, 30_000);
