/**
 * `quill export` against a real broker: records over 6 partitions exported as JSON lines by a
 * process that is killed (kill -9) part-way, then resumed with the same group; every file is
 * compared record by record with what kcat reads from the topic (no gap, no duplicate, nothing
 * unlisted in the manifest). The same topic as Parquet is read back with DuckDB.
 *
 * QUILL_EXPORT_RECORDS sets the record count (default 120,000 keeps `npm test` short);
 * `scripts/export-check` runs it with the 1,000,000.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type InProcessBroker,
  REPO_ROOT,
  removeDir,
  startInProcessBroker,
  tempDir,
} from "../support/broker-harness.ts";
import { venvPython } from "../support/python-venv.ts";
import { waitUntil } from "../support/wait-until.ts";
import { type Json, quill, quillJson } from "./quill-client.ts";

const RECORDS = Number(process.env.QUILL_EXPORT_RECORDS ?? 120_000);
const FILE_RECORDS = Math.max(500, Math.floor(RECORDS / 60));
const TOPIC = "exported";
let broker: InProcessBroker;
let b: string[];
const dir = tempDir("quill-export-");

beforeAll(async () => {
  broker = await startInProcessBroker();
  b = ["-b", broker.bootstrap];
  await quillJson(["topic", "create", TOPIC, "-p", "6", ...b]);
  const lines = Array.from({ length: RECORDS }, (_, i) => `k${i}\t{"n":${i},"s":"v${i}"}`);
  writeFileSync(join(dir, "input.txt"), `${lines.join("\n")}\n`);
  const produced = await quillJson([
    "topic",
    "produce",
    TOPIC,
    "-K",
    "\\t",
    "--file",
    join(dir, "input.txt"),
    "-z",
    "lz4",
    ...b,
  ]);
  expect(produced.records).toBe(RECORDS);
}, 300_000);
afterAll(async () => {
  await broker.stop();
  removeDir(dir);
});

/** `partition offset key value` lines of the whole topic, read by kcat. */
async function topicLines(): Promise<string[]> {
  const proc = Bun.spawn(
    ["kcat", "-C", "-b", broker.bootstrap, "-t", TOPIC, "-e", "-q", "-f", "%p %o %k %s\n"],
    { stdout: "pipe", stderr: "pipe" },
  );
  const text = await new Response(proc.stdout).text();
  expect(await proc.exited).toBe(0);
  return text.trimEnd().split("\n").sort();
}

function manifestOf(out: string): Json {
  return JSON.parse(readFileSync(join(out, "manifest.json"), "utf8"));
}

function exportArgs(out: string, format: string): string[] {
  return [
    "export",
    TOPIC,
    "--to",
    out,
    "--format",
    format,
    "--file-records",
    String(FILE_RECORDS),
    "--parallel",
    "2",
    ...b,
  ];
}

test("an export killed with kill -9 resumes with its group: files equal the topic", async () => {
  const out = join(dir, "jsonl");
  const args = [...exportArgs(out, "jsonl"), "--group", "exporter", "--progress-ms", "100"];
  const first = Bun.spawn([process.execPath, join(REPO_ROOT, "src", "main.ts"), ...args], {
    stdout: "ignore",
    stderr: "pipe",
  });
  // Read while it runs, so a full pipe never holds the export up.
  const progressText = new Response(first.stderr).text();
  await waitUntil(
    () => existsSync(join(out, "manifest.json")) && manifestOf(out).files.length >= 8,
    60_000,
    "eight files listed",
  );
  first.kill("SIGKILL");
  await first.exited;
  expect(first.signalCode).toBe("SIGKILL");
  const listedAtKill = manifestOf(out).files.length;
  expect(listedAtKill).toBeLessThan(60);
  const progress = await progressText;

  const resumed = await quill(args);
  expect(resumed.code).toBe(0);
  // Periodic lines when not on a terminal; an idle machine may write the first eight files
  // before the first tick, so the two runs' lines are checked together.
  expect(progress + resumed.stderr).toMatch(
    /^export: \d+\/\d+ records \(.*%\), .* MB, \d+ records\/s/m,
  );
  const manifest = manifestOf(out);
  expect(manifest.files.length).toBeGreaterThan(listedAtKill);
  const onDisk = readdirSync(join(out, TOPIC))
    .map((f) => `${TOPIC}/${f}`)
    .sort();
  expect(onDisk).toEqual(manifest.files.map((f: Json) => f.file).sort());
  const exported: string[] = [];
  for (const f of manifest.files) {
    const rows = readFileSync(join(out, f.file), "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(rows.length).toBe(f.records);
    expect([rows[0].offset, rows.at(-1).offset]).toEqual([f.firstOffset, f.lastOffset]);
    for (const r of rows) exported.push(`${r.partition} ${r.offset} ${r.key} ${r.value}`);
  }
  expect(exported.length).toBe(RECORDS);
  expect(exported.sort()).toEqual(await topicLines());
  const lag = await quillJson(["group", "describe", "exporter", ...b]);
  expect(lag.totalLag).toBe(0);
  const again = await quill(args);
  expect(again.code).toBe(0);
  expect(manifestOf(out).files.length).toBe(manifest.files.length);
}, 300_000);

test("a Parquet export reads back in DuckDB row for row as the topic", async () => {
  const out = join(dir, "parquet");
  const run = await quill(exportArgs(out, "parquet"));
  expect(run.code).toBe(0);
  expect(run.stderr).toMatch(/exported \d+ records/);
  const files = manifestOf(out).files.map((f: Json) => join(out, f.file));
  const python = await venvPython(
    "parquet-reader",
    join(import.meta.dir, "parquet-reader", "requirements.txt"),
  );
  const proc = Bun.spawn(
    [python, join(import.meta.dir, "parquet-reader", "read_parquet.py"), ...files],
    {
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  const [text, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  expect({ code, err }).toEqual({ code: 0, err: "" });
  expect(text.trimEnd().split("\n").sort()).toEqual(await topicLines());
}, 300_000);

test("--from, --to-time and bad export input", async () => {
  const fromOut = join(dir, "from");
  const none = await quill([
    "export",
    TOPIC,
    "--to",
    fromOut,
    "--from",
    "10",
    "--to-time",
    "0",
    ...b,
  ]);
  expect(none.code).toBe(0);
  expect(manifestOf(fromOut)).toEqual({
    version: 1,
    format: "jsonl",
    fileWindow: "none",
    files: [],
  });
  const tail = join(dir, "tail");
  expect((await quill(["export", TOPIC, "--to", tail, "--from", "-3", ...b])).code).toBe(0);
  const files = manifestOf(tail).files as Json[];
  expect(files.map((f) => f.records)).toEqual([3, 3, 3, 3, 3, 3]);
  const unknown = await quill(["export", "nope", "--to", join(dir, "x"), ...b]);
  expect(unknown.code).toBe(3);
  expect(unknown.stderr).toContain("UNKNOWN_TOPIC_OR_PARTITION");
  const mixed = await quill(["export", TOPIC, "--to", tail, "--format", "parquet", ...b]);
  expect(mixed.code).toBe(2);
  expect(mixed.stderr).toContain("holds a jsonl export");
  expect((await quill(["export", TOPIC, ...b])).stderr).toContain("export needs --to DIR");
}, 120_000);
