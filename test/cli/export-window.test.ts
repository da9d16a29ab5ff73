/**
 * `quill export --file-window hour|day`: records with timestamps spread over three hours and
 * two days (one arriving late, back in an earlier hour) are exported; every file holds records
 * of one window only, lies in that window's Hive-style directory, and the files together hold
 * every record once. DuckDB reads the Parquet export with hive_partitioning and the year,
 * month, day and hour it derives from the paths match each record's timestamp.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import {
  type InProcessBroker,
  removeDir,
  startInProcessBroker,
  tempDir,
} from "../support/broker-harness.ts";
import { venvPython } from "../support/python-venv.ts";
import { type Json, quill } from "./quill-client.ts";

const HOUR_MS = 3_600_000;
/** 2026-12-01T22:00:00Z: two hours later is the next day. */
const BASE_MS = Date.UTC(2026, 11, 1, 22);
/** Hours after BASE of each record of partition 0, in offset order (the 1 after 2 is late). */
const HOURS_P0 = [0, 0, 0, 1, 1, 0, 2, 2];
/** Partition 1: in order, minutes apart within hour 1, then hour 2. */
const HOURS_P1 = [1, 1, 2];

let broker: InProcessBroker;
let b: string[];
const dir = tempDir("quill-export-window-");

const timestampOf = (hours: number, i: number) => BASE_MS + hours * HOUR_MS + i * 60_000;

beforeAll(async () => {
  broker = await startInProcessBroker();
  b = ["-b", broker.bootstrap];
  expect((await quill(["topic", "create", "logs", "-p", "2", ...b])).code).toBe(0);
  const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  await producer.connect();
  const messages = (partition: number, hours: number[]) =>
    hours.map((h, i) => ({
      partition,
      value: `p${partition}-${i}`,
      timestamp: String(timestampOf(h, i)),
    }));
  for (const m of [...messages(0, HOURS_P0), ...messages(1, HOURS_P1)]) {
    await producer.send({ topic: "logs", messages: [m] });
  }
  await producer.disconnect();
}, 60_000);
afterAll(async () => {
  await broker.stop();
  removeDir(broker.dataDir);
  removeDir(dir);
});

const two = (n: number) => String(n).padStart(2, "0");
function hourDir(ms: number): string {
  const t = new Date(ms);
  return (
    `year=${t.getUTCFullYear()}/month=${two(t.getUTCMonth() + 1)}/day=${two(t.getUTCDate())}` +
    `/hour=${two(t.getUTCHours())}`
  );
}

function manifestFiles(out: string): Json[] {
  return JSON.parse(readFileSync(join(out, "manifest.json"), "utf8")).files;
}

test("--file-window hour: each file within one hour, in its hour's directory", async () => {
  const out = join(dir, "hourly");
  const run = await quill(["export", "logs", "--to", out, "--file-window", "hour", ...b]);
  expect(run).toMatchObject({ code: 0 });
  const files = manifestFiles(out);
  // Partition 0 changes hour at offsets 3, 5 (late record) and 6; partition 1 at offset 2.
  expect(files.map((f) => [f.partition, f.firstOffset, f.lastOffset])).toEqual([
    [0, 0, 2],
    [0, 3, 4],
    [0, 5, 5],
    [0, 6, 7],
    [1, 0, 1],
    [1, 2, 2],
  ]);
  const seen: string[] = [];
  for (const f of files) {
    expect(f.windowEnd - f.windowStart).toBe(HOUR_MS);
    expect(f.file).toBe(
      `logs/${hourDir(f.windowStart)}/logs-${f.partition}-${f.firstOffset}-${f.lastOffset}.jsonl`,
    );
    const rows = readFileSync(join(out, f.file), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    for (const r of rows) {
      expect(r.timestamp).toBeGreaterThanOrEqual(f.windowStart);
      expect(r.timestamp).toBeLessThan(f.windowEnd);
      seen.push(r.value);
    }
  }
  const all = [...HOURS_P0.map((_, i) => `p0-${i}`), ...HOURS_P1.map((_, i) => `p1-${i}`)];
  expect(seen.sort()).toEqual(all.sort());
  const other = await quill(["export", "logs", "--to", out, "--file-window", "day", ...b]);
  expect(other.code).toBe(2);
  expect(other.stderr).toContain("--file-window hour");
  const bad = await quill(["export", "logs", "--to", join(dir, "x"), "--file-window", "week"]);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("--file-window expects hour, day or none");
}, 60_000);

test("--file-window day with --from/--to-time bounds cuts at the day boundary", async () => {
  const out = join(dir, "daily");
  const from = new Date(timestampOf(1, 0)).toISOString();
  const run = await quill([
    ...["export", "logs", "--to", out, "--file-window", "day"],
    ...["--from", `@${from}`, "--to-time", String(timestampOf(2, 7)), ...b],
  ]);
  expect(run).toMatchObject({ code: 0 });
  const files = manifestFiles(out).map((f) => [f.file, f.firstOffset, f.lastOffset]);
  // From the first record at or after hour 1 to the first at or after the last one's time.
  expect(files).toEqual([
    ["logs/year=2026/month=12/day=01/logs-0-3-5.jsonl", 3, 5],
    ["logs/year=2026/month=12/day=02/logs-0-6-6.jsonl", 6, 6],
    ["logs/year=2026/month=12/day=01/logs-1-0-1.jsonl", 0, 1],
    ["logs/year=2026/month=12/day=02/logs-1-2-2.jsonl", 2, 2],
  ]);
}, 60_000);

test("an hourly Parquet export reads back in DuckDB with the hour as columns", async () => {
  const out = join(dir, "parquet");
  const run = await quill([
    ...["export", "logs", "--to", out, "--format", "parquet", "--file-window", "hour", ...b],
  ]);
  expect(run).toMatchObject({ code: 0 });
  const python = await venvPython(
    "parquet-reader",
    join(import.meta.dir, "parquet-reader", "requirements.txt"),
  );
  const proc = Bun.spawn(
    [
      python,
      join(import.meta.dir, "parquet-reader", "read_windows.py"),
      `${out}/logs/**/*.parquet`,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const [text, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  expect({ code, err }).toEqual({ code: 0, err: "" });
  const expected = [
    ...HOURS_P0.map((h, i) => [0, i, timestampOf(h, i)]),
    ...HOURS_P1.map((h, i) => [1, i, timestampOf(h, i)]),
  ].map(([p, o, ms]) => {
    const t = new Date(ms!);
    // Zero-padded in the paths (as Connect's HourlyPartitioner), so DuckDB keeps them as text.
    const hive = [t.getUTCFullYear(), two(t.getUTCMonth() + 1), two(t.getUTCDate())];
    hive.push(two(t.getUTCHours()));
    return [p, o, ms, ...hive].join(" ");
  });
  expect(text.trimEnd().split("\n")).toEqual(expected);
}, 300_000);
