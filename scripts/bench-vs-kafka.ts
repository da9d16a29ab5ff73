// `bun scripts/bench-vs-kafka.ts [--quick] [--repetitions N] [--only kafka|quill]
//                                [--workloads ID,ID...] [--quill-binary PATH]`
// `bun scripts/bench-vs-kafka.ts --compaction [--compaction-mb N] [--only kafka|quill]`
//   (log compaction instead of the workloads: bench-vs-kafka/compaction.ts)
//
// Quill side by side with Apache Kafka 3.9 (ZooKeeper mode) on this machine, same clients, same
// settings, same disk; see the README section "Benchmark against Apache Kafka". Each repetition
// starts each broker in turn on a fresh data dir (never both at once: the development machine has
// two cores), measures start-up to the first successful produce, runs every workload, and stops
// it by PID. Prints throughput, latency and broker tables of medians with Quill/Kafka ratios, the
// loopback iperf3 ceiling, and writes JSON and Markdown to .bench/. The last line printed is
// `ratios: produce=X consume=Y p99=Z rss=W startup=V`. Without Java or Maven it says so and
// measures Quill alone. Not a test.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startZooKeeper, type ZooKeeperServer } from "../test/support/zookeeper-server.ts";
import {
  compileRdkafkaProgram,
  cpuSeconds,
  loadAverage,
  loopbackMegabytesPerSecond,
  peakRssBytes,
  resetPeakRss,
} from "./bench-common.ts";
import { createTopicsAndWait } from "./bench-vs-kafka/broker-probe.ts";
import {
  type BrokerKind,
  type BrokerProcess,
  startKafka,
  startQuill,
} from "./bench-vs-kafka/brokers.ts";
import {
  COMPACTION_BROKER_SETTINGS,
  COMPACTION_TOPIC,
  type CompactionResult,
  compactionTable,
  runCompaction,
} from "./bench-vs-kafka/compaction.ts";
import { ensureKafkaDist, KAFKA_VERSION } from "./bench-vs-kafka/kafka-dist.ts";
import {
  type BrokerRun,
  brokerTable,
  latencyTable,
  ratios,
  ratiosLine,
  throughputTable,
  type WorkloadRun,
} from "./bench-vs-kafka/report.ts";
import {
  runnable,
  type Tools,
  WARM_UP_TOPIC,
  type Workload,
  warmUp,
} from "./bench-vs-kafka/workloads.ts";

const ROOT = join(import.meta.dir, "..");
const RESULTS_DIR = join(ROOT, ".bench");
const QUICK_SCALE = 10;
const TOPIC_TIMEOUT_MS = 60_000;

interface Options {
  quick: boolean;
  repetitions: number;
  /** Measure one broker only (profiling, or Kafka is not wanted); ratios are then n/a. */
  only: BrokerKind | null;
  /** Workload ids to run (see workloads.ts); empty: all. */
  workloadIds: string[];
  /** A Quill binary to measure instead of building dist/quill (before/after comparisons). */
  quillBinary: string | null;
  /** Run the compaction workload (and nothing else) with a dirty log of this many MB. */
  compactionMegabytes: number | null;
}

function parseOptions(argv: readonly string[]): Options {
  const options: Options = {
    quick: false,
    repetitions: 3,
    only: null,
    workloadIds: [],
    quillBinary: null,
    compactionMegabytes: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = argv[i + 1];
    if (flag === "--quick") {
      options.quick = true;
      continue;
    }
    if (flag === "--compaction") {
      options.compactionMegabytes ??= 1000;
      continue;
    }
    if (flag === "--repetitions" && Number.isSafeInteger(Number(value)) && Number(value) > 0) {
      options.repetitions = Number(value);
    } else if (flag === "--only" && (value === "kafka" || value === "quill")) {
      options.only = value;
    } else if (flag === "--workloads" && value !== undefined) {
      options.workloadIds = value.split(",");
    } else if (flag === "--compaction-mb" && Number(value) > 0) {
      options.compactionMegabytes = Number(value);
    } else if (flag === "--quill-binary" && value !== undefined) {
      options.quillBinary = value;
    } else {
      throw new Error(`unknown or incomplete option ${flag} (see scripts/bench-vs-kafka.ts)`);
    }
    i++;
  }
  if (options.quick && !argv.includes("--repetitions")) options.repetitions = 1;
  return options;
}

function buildQuill(): string {
  const build = Bun.spawnSync([process.execPath, "run", "build"], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (build.exitCode !== 0) throw new Error(`bun run build failed:\n${build.stderr}`);
  return join(ROOT, "dist", "quill");
}

function compileTools(runDir: string, classpath: string | null): Tools {
  const compile = (source: string) => {
    const result = compileRdkafkaProgram(source);
    if ("path" in result) return result.path;
    console.error(`note: ${result.error}; librdkafka workloads are skipped`);
    return null;
  };
  return {
    rdkafkaLoad: compile(join(import.meta.dir, "bench-e2e", "rdkafka-load.c")),
    rdkafkaLatency: compile(join(import.meta.dir, "bench-vs-kafka", "rdkafka-latency.c")),
    classpath,
    runDir,
  };
}

function selectWorkloads(available: readonly Workload[], ids: readonly string[]): Workload[] {
  if (ids.length === 0) return [...available];
  const unknown = ids.filter((id) => !available.some((w) => w.id === id));
  if (unknown.length > 0) {
    const known = available.map((w) => w.id).join(", ");
    throw new Error(`unknown or unavailable workload(s) ${unknown.join(", ")}; known: ${known}`);
  }
  return available.filter((w) => ids.includes(w.id));
}

interface RunContext {
  readonly options: Options;
  readonly tools: Tools;
  readonly workloads: readonly Workload[];
  readonly quillBinary: string;
  readonly zookeeper: ZooKeeperServer | null;
  readonly runDir: string;
}

async function startBroker(
  ctx: RunContext,
  kind: BrokerKind,
  repetition: number,
): Promise<BrokerProcess> {
  const dir = join(ctx.runDir, `${kind}-${repetition}`);
  if (kind === "quill") return startQuill(ctx.quillBinary, dir);
  return startKafka(
    {
      classpath: ctx.tools.classpath!,
      zookeeperConnect: ctx.zookeeper!.connectString,
    },
    dir,
    `kafka-${repetition}`,
  );
}

/** Starts one broker, runs every workload against it, stops it, removes its data. */
async function runRepetition(
  ctx: RunContext,
  kind: BrokerKind,
  repetition: number,
): Promise<BrokerRun> {
  const broker = await startBroker(ctx, kind, repetition);
  const scale = ctx.options.quick ? QUICK_SCALE : 1;
  const results: WorkloadRun[] = [];
  try {
    const topics = new Map(ctx.workloads.map((w) => [w.topic.name, w.topic]));
    const warmUpLatencyTopic = { name: `${WARM_UP_TOPIC.name}-latency`, partitions: 1 };
    await createTopicsAndWait(
      broker.port,
      [...topics.values(), WARM_UP_TOPIC, warmUpLatencyTopic],
      performance.now() + TOPIC_TIMEOUT_MS,
    );
    const warmUpStartedMs = performance.now();
    await warmUp(ctx.tools, broker.bootstrap);
    console.error(
      `  ${kind} #${repetition} started in ${Math.round(broker.startupMs)} ms, ` +
        `warmed up in ${((performance.now() - warmUpStartedMs) / 1000).toFixed(1)} s`,
    );
    // VmHWM has not been reset yet, so this covers start-up and warm-up.
    let peakRss = peakRssBytes(broker.pid);
    const cpuAtStart = cpuSeconds(broker.pid);
    for (const w of ctx.workloads) {
      const run = await runWorkload(ctx.tools, broker, w, Math.round(w.fullRecords / scale));
      peakRss = Math.max(peakRss, run.brokerPeakRssBytes);
      results.push(run);
      console.error(`  ${kind} #${repetition} ${w.id}: ${describe(run)}`);
    }
    return {
      kind,
      repetition,
      startupMs: broker.startupMs,
      peakRssBytes: peakRss,
      cpuSeconds: cpuSeconds(broker.pid) - cpuAtStart,
      workloads: results,
    };
  } finally {
    await broker.stop();
    rmSync(join(ctx.runDir, `${kind}-${repetition}`, "data"), { recursive: true, force: true });
  }
}

async function runWorkload(
  tools: Tools,
  broker: BrokerProcess,
  w: Workload,
  records: number,
): Promise<WorkloadRun> {
  resetPeakRss(broker.pid);
  const cpuBefore = cpuSeconds(broker.pid);
  let measurement = null;
  let error = null;
  try {
    measurement = await w.run(tools, broker.bootstrap, records);
  } catch (e) {
    error = (e as Error).message;
  }
  return {
    workloadId: w.id,
    measurement,
    error,
    brokerCpuSeconds: cpuSeconds(broker.pid) - cpuBefore,
    brokerPeakRssBytes: peakRssBytes(broker.pid),
    loadAverage: loadAverage(),
  };
}

function describe(run: WorkloadRun): string {
  const m = run.measurement;
  if (m === null) return `FAILED: ${run.error?.split("\n").slice(0, 3).join(" ")}`;
  const latency = m.p99Ms === null ? "" : `, p50 ${m.p50Ms} ms, p99 ${m.p99Ms} ms`;
  return (
    `${Math.round(m.recordsPerSecond).toLocaleString("en-US")} rec/s` +
    `${latency}, broker CPU ${run.brokerCpuSeconds.toFixed(2)} s, ` +
    `peak RSS ${Math.round(run.brokerPeakRssBytes / 1e6)} MB, load ${run.loadAverage}`
  );
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const startedMs = performance.now();
  const loadAtStart = loadAverage();
  const quillBinary = options.quillBinary ?? buildQuill();
  const dist = await ensureKafkaDist();
  if ("missing" in dist) console.error(`note: ${dist.missing}; measuring Quill alone`);
  const classpath = "classpath" in dist ? dist.classpath : null;
  const runDir = mkdtempSync(join(tmpdir(), "quill-vs-kafka-"));
  if (options.compactionMegabytes !== null) {
    await compactionRun(options, quillBinary, classpath, runDir, options.compactionMegabytes);
    return;
  }
  const tools = compileTools(runDir, classpath);
  const workloads = selectWorkloads(runnable(tools), options.workloadIds);
  const kinds: BrokerKind[] =
    classpath === null ? ["quill"] : options.only === null ? ["kafka", "quill"] : [options.only];
  const zookeeper = kinds.includes("kafka") ? await startZooKeeper() : null;
  const ctx: RunContext = { options, tools, workloads, quillBinary, zookeeper, runDir };
  const runs: BrokerRun[] = [];
  try {
    const loopback = await loopbackMegabytesPerSecond();
    for (let repetition = 1; repetition <= options.repetitions; repetition++) {
      // Alternate which broker goes first, so a drift in machine load hits both alike.
      const order = repetition % 2 === 1 ? kinds : [...kinds].reverse();
      for (const kind of order) {
        console.error(`repetition ${repetition}/${options.repetitions}: ${kind}`);
        runs.push(await runRepetition(ctx, kind, repetition));
      }
    }
    const seconds = (performance.now() - startedMs) / 1000;
    report({ options, runs, workloads, loopback, loadAtStart, seconds, missing: dist });
  } finally {
    await zookeeper?.stop();
    rmSync(runDir, { recursive: true, force: true });
  }
}

interface ReportInput {
  readonly options: Options;
  readonly runs: readonly BrokerRun[];
  readonly workloads: readonly Workload[];
  readonly loopback: number | null;
  readonly loadAtStart: string;
  readonly seconds: number;
  readonly missing: Awaited<ReturnType<typeof ensureKafkaDist>>;
}

function report(input: ReportInput): void {
  const { options, runs, workloads, loopback } = input;
  const scale = options.quick ? QUICK_SCALE : 1;
  const r = ratios(runs, workloads);
  const quick = options.quick ? ", --quick (a tenth of the records)" : "";
  const heading =
    `Quill (${options.quillBinary ?? "dist/quill"}) vs Apache Kafka ` +
    `${KAFKA_VERSION} (ZooKeeper mode, -Xmx1G), one broker at a time on 127.0.0.1, ` +
    `${navigator.hardwareConcurrency} cores; medians of ${options.repetitions} ` +
    `repetition(s)${quick}` +
    `; load average ${input.loadAtStart} at start, ${loadAverage()} at end; ` +
    `${Math.round(input.seconds)} s in all.`;
  const notes = [
    "missing" in input.missing
      ? `Kafka not measured: ${input.missing.missing}.`
      : options.only !== null
        ? `Only ${options.only} measured (--only).`
        : "",
    loopback === null
      ? "Loopback ceiling: iperf3 unavailable."
      : `Loopback ceiling (iperf3, same run): ${Math.round(loopback).toLocaleString("en-US")} MB/s ` +
        `(${((loopback * 8) / 1000).toFixed(1)} Gbit/s).`,
    "MB = 1e6 bytes of record values. Broker CPU s and peak RSS are per workload (VmHWM reset " +
      "before each); Kafka's figures are the broker JVM only, not ZooKeeper.",
    "produce/consume ratios: geometric mean over those workloads of the ratio of medians; p99: " +
      "the fixed-rate 1 KiB end-to-end workload.",
  ].filter((n) => n !== "");
  const markdown = [
    heading,
    "",
    throughputTable(runs, workloads, scale),
    "",
    latencyTable(runs, workloads),
    "",
    brokerTable(runs),
    "",
    ...notes,
    "",
    ratiosLine(r),
  ].join("\n");
  mkdirSync(RESULTS_DIR, { recursive: true });
  const stamp = new Date().toISOString().replaceAll(":", "-").slice(0, 19);
  const name = `bench-vs-kafka-${options.quick ? "quick-" : ""}${stamp}`;
  writeFileSync(join(RESULTS_DIR, `${name}.md`), markdown + "\n");
  writeFileSync(
    join(RESULTS_DIR, `${name}.json`),
    JSON.stringify(
      {
        options,
        kafkaVersion: KAFKA_VERSION,
        cores: navigator.hardwareConcurrency,
        loadAverageAtStart: input.loadAtStart,
        loadAverageAtEnd: loadAverage(),
        seconds: input.seconds,
        loopbackMegabytesPerSecond: loopback,
        ratios: r,
        runs,
      },
      null,
      2,
    ) + "\n",
  );
  console.log(markdown.slice(0, markdown.lastIndexOf("\n")));
  console.log(`\nResults: ${join(RESULTS_DIR, name)}.{md,json}`);
  console.log(ratiosLine(r));
}

/** --compaction: each broker in turn compacts the same dirty log (bench-vs-kafka/compaction.ts). */
async function compactionRun(
  options: Options,
  quillBinary: string,
  classpath: string | null,
  runDir: string,
  megabytes: number,
): Promise<void> {
  const kinds: BrokerKind[] =
    classpath === null ? ["quill"] : options.only === null ? ["kafka", "quill"] : [options.only];
  const zookeeper = kinds.includes("kafka") ? await startZooKeeper() : null;
  const results: CompactionResult[] = [];
  const loadAtStart = loadAverage();
  try {
    for (const kind of kinds) {
      const dir = join(runDir, `${kind}-compaction`);
      const broker =
        kind === "quill"
          ? await startQuill(quillBinary, dir, COMPACTION_BROKER_SETTINGS)
          : await startKafka(
              { classpath: classpath!, zookeeperConnect: zookeeper!.connectString },
              dir,
              "kafka-compaction",
              COMPACTION_BROKER_SETTINGS,
            );
      const cleanerLog =
        kind === "quill"
          ? { path: join(dir, "quill.out"), line: new RegExp(`cleaned ${COMPACTION_TOPIC}-0 `) }
          : {
              path: join(dir, "kafka.log"),
              line: new RegExp(`cleaned log ${COMPACTION_TOPIC}-0 `),
            };
      try {
        console.error(`compaction: ${kind}, ${megabytes} MB dirty log`);
        const result = await runCompaction(
          kind,
          broker.bootstrap,
          join(dir, "data"),
          cleanerLog,
          megabytes,
        );
        console.error(`  ${JSON.stringify(result)}`);
        results.push(result);
      } finally {
        await broker.stop();
        rmSync(join(dir, "data"), { recursive: true, force: true });
      }
    }
  } finally {
    await zookeeper?.stop();
    rmSync(runDir, { recursive: true, force: true });
  }
  const markdown = [
    `Log compaction, Quill vs Apache Kafka ${KAFKA_VERSION}: one ${megabytes} MB dirty log ` +
      "each (100,000 keys, 10% tombstones, 1 KB values, 64 MiB segments or an eighth of the " +
      `log); load average ${loadAtStart} at start, ${loadAverage()} at end.`,
    "",
    compactionTable(results),
  ].join("\n");
  mkdirSync(RESULTS_DIR, { recursive: true });
  const stamp = new Date().toISOString().replaceAll(":", "-").slice(0, 19);
  writeFileSync(join(RESULTS_DIR, `bench-compaction-${stamp}.md`), markdown + "\n");
  console.log(markdown);
}

await main();
