/**
 * Benchmark of the client commands (issue 18), one run against one `dist/quill serve`:
 *
 * - `quill bench produce` and `quill bench consume` next to librdkafka (the C load program of
 *   scripts/bench-e2e/rdkafka-load.c) for the same workload: RECORDS records of RECORD_BYTES
 *   bytes over 6 partitions, acks=1;
 * - `quill export` as JSON lines and as Parquet next to a plain `quill topic consume` of the
 *   same topic to /dev/null.
 *
 *   npm run build && bun scripts/bench-cli.ts [records]
 *
 * Prints a Markdown table with the load average; a figure, not a pass/fail check.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileRdkafkaProgram, loadAverage, runCommand } from "./bench-common.ts";

const RECORDS = Number(process.argv[2] ?? 1_000_000);
const RECORD_BYTES = 100;
const PARTITIONS = 6;
const BINARY = join(import.meta.dir, "..", "dist", "quill");
const TIMEOUT_MS = 20 * 60_000;
const MB = 1024 * 1024;

interface Row {
  readonly what: string;
  readonly records: number;
  readonly seconds: number;
  readonly note: string;
}

async function freePort(): Promise<number> {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

async function startBroker(dataDir: string) {
  const port = await freePort();
  const proc = Bun.spawn(
    [BINARY, "serve", "--listen", `127.0.0.1:${port}`, "--data-dir", dataDir],
    {
      stdout: "ignore",
      stderr: "ignore",
    },
  );
  const bootstrap = `127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    const probe = Bun.spawnSync([BINARY, "cluster", "info", "-b", bootstrap]);
    if (probe.exitCode === 0) return { proc, bootstrap };
    await Bun.sleep(100);
  }
  proc.kill();
  throw new Error("the broker did not start");
}

async function timed(argv: string[]): Promise<{ seconds: number; stdout: string }> {
  const started = performance.now();
  const stdout = await runCommand(argv, TIMEOUT_MS);
  return { seconds: (performance.now() - started) / 1000, stdout };
}

async function quillBench(b: string, topic: string): Promise<Row[]> {
  const q = (...args: string[]) => [BINARY, ...args, "-b", b];
  await runCommand(q("topic", "create", topic, "-p", String(PARTITIONS)), TIMEOUT_MS);
  const produce = JSON.parse(
    (
      await timed(
        q(
          "bench",
          "produce",
          topic,
          "-n",
          String(RECORDS),
          "-s",
          String(RECORD_BYTES),
          "-a",
          "1",
          "--format",
          "json",
        ),
      )
    ).stdout,
  );
  const consume = JSON.parse(
    (await timed(q("bench", "consume", topic, "--format", "json"))).stdout,
  );
  const lat = (s: { latencyMs: { p50: number; p99: number } }) =>
    `p50 ${s.latencyMs.p50} ms, p99 ${s.latencyMs.p99} ms`;
  return [
    {
      what: "quill bench produce (acks=1)",
      records: produce.records,
      seconds: produce.seconds,
      note: `request latency ${lat(produce)}`,
    },
    {
      what: "quill bench consume",
      records: consume.records,
      seconds: consume.seconds,
      note: `fetch latency ${lat(consume)}`,
    },
  ];
}

async function rdkafkaBench(b: string, topic: string): Promise<Row[]> {
  const tool = compileRdkafkaProgram(join(import.meta.dir, "bench-e2e", "rdkafka-load.c"));
  if ("error" in tool) return [{ what: "librdkafka", records: 0, seconds: 0, note: tool.error }];
  await runCommand(
    [BINARY, "topic", "create", topic, "-p", String(PARTITIONS), "-b", b],
    TIMEOUT_MS,
  );
  const produce = JSON.parse(
    await runCommand(
      [
        tool.path,
        "produce",
        b,
        topic,
        String(PARTITIONS),
        String(RECORDS),
        String(RECORD_BYTES),
        "1",
      ],
      TIMEOUT_MS,
    ),
  );
  const consume = JSON.parse(
    await runCommand(
      [tool.path, "consume", b, topic, String(PARTITIONS), String(RECORDS)],
      TIMEOUT_MS,
    ),
  );
  return [
    {
      what: "librdkafka produce (acks=1, its defaults)",
      records: produce.records,
      seconds: produce.seconds,
      note: `${produce.failed} failed`,
    },
    { what: "librdkafka consume", records: consume.records, seconds: consume.seconds, note: "" },
  ];
}

async function exportBench(b: string, topic: string, dir: string): Promise<Row[]> {
  const plain = await timed([
    "sh",
    "-c",
    `'${BINARY}' topic consume ${topic} -e -f '%s\\n' -b ${b} > /dev/null`,
  ]);
  const rows: Row[] = [
    {
      what: "quill topic consume -e > /dev/null",
      records: RECORDS,
      seconds: plain.seconds,
      note: "",
    },
  ];
  for (const format of ["jsonl", "parquet"]) {
    const out = join(dir, format);
    const run = await timed([
      BINARY,
      "export",
      topic,
      "--to",
      out,
      "--format",
      format,
      "--parallel",
      String(PARTITIONS),
      "-b",
      b,
    ]);
    const manifest = await Bun.file(join(out, "manifest.json")).json();
    const files = manifest.files as { records: number; bytes: number }[];
    const fileMb = files.reduce((n, f) => n + f.bytes, 0) / MB;
    rows.push({
      what: `quill export --format ${format}`,
      records: RECORDS,
      seconds: run.seconds,
      note: `${files.length} files, ${fileMb.toFixed(1)} MB written`,
    });
  }
  return rows;
}

/**
 * How export writes its files: Bun.write then an fsync through a node:fs handle, against
 * writing and fsyncing through the one node:fs handle (what durable-file.ts does); 16 files of
 * 16 MB each, node:fs first then Bun, three rounds (docs/cli.md, "File I/O").
 */
async function fileWriteBench(dir: string): Promise<string> {
  const data = new Uint8Array(16 * MB).fill(97);
  const { open } = await import("node:fs/promises");
  const run = async (bunWrite: boolean) => {
    const started = performance.now();
    for (let i = 0; i < 16; i++) {
      const path = join(dir, `w${i}`);
      if (bunWrite) await Bun.write(path, data);
      const handle = await open(path, bunWrite ? "r" : "w");
      if (!bunWrite) await handle.writeFile(data);
      await handle.sync();
      await handle.close();
    }
    return Math.round((16 * 16) / ((performance.now() - started) / 1000));
  };
  const rounds: string[] = [];
  for (let i = 0; i < 3; i++)
    rounds.push(`node:fs ${await run(false)} / Bun.write ${await run(true)}`);
  return `export file writes, MB/s (16 x 16 MB, each fsynced): ${rounds.join("; ")}`;
}

function table(rows: readonly Row[]): string {
  const lines = rows.map((r) => {
    const rate = r.seconds > 0 ? Math.round(r.records / r.seconds) : 0;
    const mbps = r.seconds > 0 ? ((r.records * RECORD_BYTES) / MB / r.seconds).toFixed(1) : "-";
    return `| ${r.what} | ${r.records} | ${r.seconds.toFixed(2)} | ${rate} | ${mbps} | ${r.note} |`;
  });
  return [
    "| run | records | seconds | records/s | MB/s (values) | notes |",
    "|---|---:|---:|---:|---:|---|",
    ...lines,
  ].join("\n");
}

const dir = mkdtempSync(join(tmpdir(), "quill-bench-cli-"));
const broker = await startBroker(join(dir, "data"));
try {
  const before = loadAverage();
  const rows = [
    ...(await quillBench(broker.bootstrap, "bench-quill")),
    ...(await rdkafkaBench(broker.bootstrap, "bench-rdkafka")),
    ...(await exportBench(broker.bootstrap, "bench-quill", join(dir, "export"))),
  ];
  console.log(
    `${RECORDS} records of ${RECORD_BYTES} bytes, ${PARTITIONS} partitions, ` +
      `load average before ${before}, after ${loadAverage()}\n`,
  );
  console.log(table(rows));
  console.log(`\n${await fileWriteBench(dir)}`);
} finally {
  broker.proc.kill();
  await broker.proc.exited;
  rmSync(dir, { recursive: true, force: true });
}
