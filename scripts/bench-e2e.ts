// `bun scripts/bench-e2e.ts [--records N] [--batch1-records N] [--broker binary|source]
//                           [--load c|kcat]`
//
// End-to-end benchmark of the single broker on loopback, with librdkafka as the load: the small C
// program in scripts/bench-e2e/rdkafka-load.c (compiled here with cc into ~/.cache/quill-bench),
// or kcat when no C toolchain or librdkafka headers are present (apt: librdkafka-dev). Workloads,
// all with acks=1, on one and on six partitions, each on a fresh broker and data dir:
//   - 200-byte records in batches of 1 and of 50: the experiment of the 2011 Kafka paper
//     (Kreps, Narkhede, Rao: about 50,000 and 400,000 records/s);
//   - 100-byte records with the client's default batching: LinkedIn's 2014 single-producer test
//     (821,557 records/s, 78.3 MB/s, no replication);
// then every record is consumed back. Reported: records/s and MB/s (payload bytes, 1 MB = 1e6 B),
// broker CPU seconds (utime+stime from /proc/PID/stat) and peak RSS (VmHWM), next to the loopback
// iperf3 throughput measured in the same run. Prints a Markdown table. Not a test.
//
// Batches of 1 make one request per record, so they run several times slower than the rest; a
// quick run can give them fewer records with --batch1-records (default: the same N). The default
// 10 million records per row took under 10 minutes on the 2-core development machine. The table
// states the count every row used.
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileRdkafkaProgram, cpuSeconds, peakRssBytes } from "./bench-common.ts";

const ROOT = join(import.meta.dir, "..");
const LOAD_SOURCE = join(import.meta.dir, "bench-e2e", "rdkafka-load.c");
const IPERF_SECONDS = 3;
const START_TIMEOUT_MS = 30_000;
/** No single load run may take longer than this; the script then fails instead of hanging. */
const RUN_TIMEOUT_MS = 3_600_000;

interface Options {
  records: number;
  batch1Records: number;
  broker: "binary" | "source";
  load: "c" | "kcat";
}

interface Workload {
  readonly name: string;
  readonly recordBytes: number;
  readonly settings: readonly string[];
  readonly batchOfOne: boolean;
  readonly reference: string;
}

const WORKLOADS: readonly Workload[] = [
  {
    name: "200 B, batch 1",
    recordBytes: 200,
    settings: ["batch.num.messages=1", "linger.ms=0"],
    batchOfOne: true,
    reference: "paper 2011: ~50,000/s",
  },
  {
    name: "200 B, batch 50",
    recordBytes: 200,
    settings: ["batch.num.messages=50"],
    batchOfOne: false,
    reference: "paper 2011: ~400,000/s",
  },
  {
    name: "100 B, default batching",
    recordBytes: 100,
    settings: [],
    batchOfOne: false,
    reference: "LinkedIn 2014: 821,557/s, 78.3 MB/s",
  },
];
const PARTITION_COUNTS = [1, 6] as const;

interface RunResult {
  readonly records: number;
  readonly bytes: number;
  readonly seconds: number;
  readonly failed: number;
}

interface Row {
  readonly workload: Workload;
  readonly partitions: number;
  readonly produce: RunResult;
  readonly consume: RunResult;
  readonly produceCpuSeconds: number;
  readonly consumeCpuSeconds: number;
  readonly peakRssBytes: number;
}

function parseOptions(argv: readonly string[]): Options {
  const options: Options = { records: 10_000_000, batch1Records: -1, broker: "binary", load: "c" };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = argv[i + 1];
    if (flag === "--records") options.records = positiveInteger(flag, value);
    else if (flag === "--batch1-records") options.batch1Records = positiveInteger(flag, value);
    else if (flag === "--broker" && (value === "binary" || value === "source")) {
      options.broker = value;
    } else if (flag === "--load" && (value === "c" || value === "kcat")) options.load = value;
    else throw new Error(`unknown or incomplete option ${flag} (see scripts/bench-e2e.ts)`);
    i++;
  }
  if (options.batch1Records < 0) options.batch1Records = options.records;
  return options;
}

function positiveInteger(flag: string, value: string | undefined): number {
  const n = Number(value?.replaceAll("_", ""));
  if (!Number.isSafeInteger(n) || n <= 0) {
    throw new Error(`${flag} expects a positive integer, got ${value}`);
  }
  return n;
}

// ---- The load tool: the C program when it compiles, else kcat. ----

type LoadTool = { kind: "c"; path: string } | { kind: "kcat" };

function loadTool(): LoadTool {
  const compiled = compileRdkafkaProgram(LOAD_SOURCE);
  if ("path" in compiled) return { kind: "c", path: compiled.path };
  console.error(`note: ${compiled.error} (apt install librdkafka-dev?); using kcat`);
  return { kind: "kcat" };
}

function mtimeMs(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

async function run(argv: string[], stdinPath?: string): Promise<string> {
  const proc = Bun.spawn(argv, {
    stdin: stdinPath === undefined ? "ignore" : Bun.file(stdinPath),
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), RUN_TIMEOUT_MS);
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  if (code !== 0) throw new Error(`${argv.join(" ")} exited ${code}:\n${stderr}\n${stdout}`);
  return stdout;
}

async function produce(
  tool: LoadTool,
  bootstrap: string,
  topic: string,
  partitions: number,
  records: number,
  w: Workload,
): Promise<RunResult> {
  if (tool.kind === "c") {
    const out = await run([
      tool.path,
      "produce",
      bootstrap,
      topic,
      String(partitions),
      String(records),
      String(w.recordBytes),
      "1",
      ...w.settings,
    ]);
    return JSON.parse(out) as RunResult;
  }
  const file = join(tmpdir(), `quill-bench-input-${w.recordBytes}.txt`);
  if (mtimeMs(file) === 0 || statSync(file).size !== records * w.recordBytes) {
    await Bun.write(file, ("x".repeat(w.recordBytes - 1) + "\n").repeat(records));
  }
  const partitionFlag = partitions === 1 ? "0" : "-1";
  const settings = w.settings.flatMap((s) => ["-X", s]);
  const startedMs = performance.now();
  await run([
    "kcat",
    "-b",
    bootstrap,
    "-P",
    "-t",
    topic,
    "-p",
    partitionFlag,
    "-X",
    "acks=1",
    ...settings,
    "-l",
    file,
  ]);
  const seconds = (performance.now() - startedMs) / 1000;
  return { records, bytes: records * (w.recordBytes - 1), seconds, failed: 0 };
}

async function consume(
  tool: LoadTool,
  bootstrap: string,
  topic: string,
  partitions: number,
  records: number,
): Promise<RunResult> {
  if (tool.kind === "c") {
    const argv = [tool.path, "consume", bootstrap, topic, String(partitions), String(records)];
    return JSON.parse(await run(argv)) as RunResult;
  }
  const startedMs = performance.now();
  const out = await run([
    "kcat",
    "-b",
    bootstrap,
    "-C",
    "-e",
    "-q",
    "-t",
    topic,
    "-o",
    "beginning",
    "-f",
    "%S\n",
  ]);
  const seconds = (performance.now() - startedMs) / 1000;
  const lengths = out
    .split("\n")
    .filter((l) => l !== "")
    .map(Number);
  const bytes = lengths.reduce((a, b) => a + b, 0);
  return { records: lengths.length, bytes, seconds, failed: records - lengths.length };
}

// ---- The broker under test: a child process on a fresh data dir. ----

interface Broker {
  readonly proc: ReturnType<typeof Bun.spawn>;
  readonly bootstrap: string;
  readonly dataDir: string;
}

function brokerCommand(kind: Options["broker"]): string[] {
  if (kind === "source") return [process.execPath, join(ROOT, "src", "main.ts")];
  const build = Bun.spawnSync([process.execPath, "run", "build"], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (build.exitCode !== 0) throw new Error(`bun run build failed:\n${build.stderr}`);
  return [join(ROOT, "dist", "quill")];
}

async function startBroker(command: string[], partitions: number): Promise<Broker> {
  const dataDir = mkdtempSync(join(tmpdir(), "quill-bench-"));
  const argv = [
    ...command,
    "serve",
    "--listen",
    "127.0.0.1:0",
    "--data-dir",
    dataDir,
    "--set",
    `num.partitions=${partitions}`,
  ];
  const proc = Bun.spawn(argv, { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const reader = (proc.stderr as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const match = text.match(/listening on ([^\s:]+):(\d+)/);
    if (match !== null) {
      void drain(reader);
      return { proc, bootstrap: `${match[1]}:${match[2]}`, dataDir };
    }
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value);
  }
  proc.kill("SIGKILL");
  throw new Error(`the broker did not start:\n${text}`);
}

/** Keeps reading the broker's stderr so it never blocks on a full pipe; echoes warnings. */
async function drain(reader: {
  read(): Promise<{ value?: Uint8Array; done: boolean }>;
}): Promise<void> {
  const decoder = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    const text = decoder.decode(value);
    if (/warn|error|fail/i.test(text)) process.stderr.write(`broker: ${text}`);
  }
}

async function stopBroker(broker: Broker): Promise<void> {
  broker.proc.kill("SIGTERM");
  const code = await broker.proc.exited;
  rmSync(broker.dataDir, { recursive: true, force: true });
  if (code !== 0) throw new Error(`the broker exited ${code} on SIGTERM`);
}

async function measure(
  tool: LoadTool,
  command: string[],
  w: Workload,
  partitions: number,
  records: number,
): Promise<Row> {
  const broker = await startBroker(command, partitions);
  try {
    const pid = broker.proc.pid;
    const topic = `bench-${partitions}`;
    const cpuStart = cpuSeconds(pid);
    const produced = await produce(tool, broker.bootstrap, topic, partitions, records, w);
    const cpuProduced = cpuSeconds(pid);
    const consumed = await consume(tool, broker.bootstrap, topic, partitions, produced.records);
    const cpuConsumed = cpuSeconds(pid);
    return {
      workload: w,
      partitions,
      produce: produced,
      consume: consumed,
      produceCpuSeconds: cpuProduced - cpuStart,
      consumeCpuSeconds: cpuConsumed - cpuProduced,
      peakRssBytes: peakRssBytes(pid),
    };
  } finally {
    await stopBroker(broker);
  }
}

// ---- The loopback ceiling: iperf3 if installed, else a Bun socket pump. ----

async function loopbackMegabytesPerSecond(): Promise<{ tool: string; mbPerSecond: number }> {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const server = Bun.spawn(["iperf3", "-s", "-1", "-p", String(port)], {
    stdout: "ignore",
    stderr: "ignore",
  });
  try {
    await Bun.sleep(300);
    const out = await run([
      "iperf3",
      "-c",
      "127.0.0.1",
      "-p",
      String(port),
      "-t",
      String(IPERF_SECONDS),
      "-J",
    ]);
    const report = JSON.parse(out) as { end: { sum_received: { bits_per_second: number } } };
    return { tool: "iperf3", mbPerSecond: report.end.sum_received.bits_per_second / 8 / 1e6 };
  } catch (error) {
    const reason = (error as Error).message.split("\n")[0];
    console.error(`note: iperf3 unavailable (${reason}); using a Bun socket pump`);
    return { tool: "Bun socket pump", mbPerSecond: await bunPumpMegabytesPerSecond() };
  } finally {
    server.kill();
  }
}

async function bunPumpMegabytesPerSecond(): Promise<number> {
  let received = 0;
  const listener = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      data(_s, d) {
        received += d.length;
      },
    },
  });
  const chunk = new Uint8Array(1 << 20);
  let pending: Uint8Array | null = null;
  const endMs = performance.now() + IPERF_SECONDS * 1000;
  const pump = (s: { write(b: Uint8Array): number }) => {
    while (performance.now() < endMs) {
      const view: Uint8Array = pending ?? chunk;
      const n = s.write(view);
      pending = n < view.length ? view.subarray(n) : null;
      if (pending !== null) return;
    }
  };
  const client = await Bun.connect({
    hostname: "127.0.0.1",
    port: listener.port,
    socket: { drain: pump, data() {} },
  });
  const startMs = performance.now();
  pump(client);
  while (performance.now() < endMs) await Bun.sleep(50);
  const seconds = (performance.now() - startMs) / 1000;
  client.end();
  listener.stop(true);
  return received / seconds / 1e6;
}

// ---- The report. ----

const integer = (n: number) => Math.round(n).toLocaleString("en-US");
const fixed = (n: number, digits = 1) => n.toFixed(digits);

function table(rows: readonly Row[]): string {
  const header =
    "| workload (acks=1) | partitions | records | produce rec/s | produce MB/s | " +
    "consume rec/s | consume MB/s | broker CPU s (produce + consume) | broker CPU µs/record | " +
    "broker peak RSS MB | reference |";
  const rule = "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|";
  const lines = rows.map((r) => {
    const cpu = r.produceCpuSeconds + r.consumeCpuSeconds;
    const { produce: p, consume: c } = r;
    const cells = [
      r.workload.name,
      String(r.partitions),
      integer(p.records),
      integer(p.records / p.seconds),
      fixed(p.bytes / p.seconds / 1e6),
      integer(c.records / c.seconds),
      fixed(c.bytes / c.seconds / 1e6),
      `${fixed(r.produceCpuSeconds)} + ${fixed(r.consumeCpuSeconds)}`,
      fixed((cpu * 1e6) / (p.records * 2)),
      integer(r.peakRssBytes / 1e6),
      r.workload.reference,
    ];
    return `| ${cells.join(" | ")} |`;
  });
  return [header, rule, ...lines].join("\n");
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const tool: LoadTool = options.load === "kcat" ? { kind: "kcat" } : loadTool();
  const command = brokerCommand(options.broker);
  const loopback = await loopbackMegabytesPerSecond();
  const rows: Row[] = [];
  for (const w of WORKLOADS) {
    for (const partitions of PARTITION_COUNTS) {
      const records = w.batchOfOne ? options.batch1Records : options.records;
      console.error(`running: ${w.name}, ${partitions} partition(s), ${integer(records)} records`);
      const row = await measure(tool, command, w, partitions, records);
      if (row.produce.failed > 0 || row.consume.records !== row.produce.records) {
        throw new Error(
          `${w.name}/${partitions}: produced ${row.produce.records} ` +
            `(failed ${row.produce.failed}), consumed ${row.consume.records}`,
        );
      }
      rows.push(row);
    }
  }
  const load =
    tool.kind === "c" ? "librdkafka C client (scripts/bench-e2e/rdkafka-load.c)" : "kcat";
  const broker = options.broker === "binary" ? "dist/quill" : "bun src/main.ts";
  console.log(
    `Quill ${broker}, one broker on 127.0.0.1, load: ${load}, ` +
      `${navigator.hardwareConcurrency} cores.\n`,
  );
  console.log(table(rows));
  const gbits = fixed((loopback.mbPerSecond * 8) / 1000, 1);
  console.log(
    `\nLoopback ceiling (${loopback.tool}, same run): ` +
      `${integer(loopback.mbPerSecond)} MB/s (${gbits} Gbit/s).`,
  );
  console.log("Broker CPU µs/record counts produce and consume: CPU seconds / (2 × records).");
  console.log("References: the 2011 Kafka paper's single producer (200 B, batch 1 and 50);");
  console.log("LinkedIn's 2014 benchmark (one producer thread, 100 B records, no replication).");
}

await main();
