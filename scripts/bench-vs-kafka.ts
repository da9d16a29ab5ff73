// `bun scripts/bench-vs-kafka.ts [--quick] [--repetitions N] [--only kafka|quill]
//                                [--workloads ID,ID...] [--quill-binary PATH]
//                                [--no-scale | --scale-only]`
// `bun scripts/bench-vs-kafka.ts --compaction [--compaction-mb N] [--only kafka|quill]`
//   (log compaction instead of the workloads: bench-vs-kafka/compaction.ts)
//
// Quill side by side with Apache Kafka 3.9 (ZooKeeper mode) on this machine, same clients, same
// settings, same disk; see the README section "Benchmark against Apache Kafka". Each repetition
// starts each broker in turn on a fresh data dir (never both at once: the development machine has
// two cores), measures start-up to the first successful produce, runs every workload, and stops
// it by PID. Every workload row runs in passes until it has lasted ROW_SECONDS and made at least
// MIN_PASSES passes; the table gives the median pass and the spread over all passes of all
// repetitions, and broker CPU seconds per GB and per million requests. Then the scale workloads
// (bench-vs-kafka/scale.ts) run once per broker. The `-tls` rows run the main produce and consume
// rows over a SASL_SSL listener (SCRAM-SHA-512) that both brokers get with the same certificates,
// made with openssl at the start (bench-vs-kafka/sasl-ssl.ts). Prints the tables with Quill/Kafka
// ratios, the loopback iperf3 ceiling, and writes JSON and Markdown to .bench/. The last line
// printed is `ratios: produce=X consume=Y consume_min=M p99=Z rss=W startup=V scale=S cpu_gb=C
// cpu_mreq=R tls=T`. What the harness needs (librdkafka-dev, Java, Maven, iperf3) it installs
// as .ci/run does (bench-vs-kafka/requirements.ts); whatever it still lacks it names, and then it
// prints no ratios line and exits 1. Not a test.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";

import { tmpdir } from "node:os";
import { join } from "node:path";
import { startZooKeeper } from "../test/support/zookeeper-server.ts";
import { loadAverage, loopbackMegabytesPerSecond } from "./bench-common.ts";
import { type BrokerKind, startKafka, startQuill } from "./bench-vs-kafka/brokers.ts";
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
  type ScaleRun,
  scaleTable,
  throughputTable,
} from "./bench-vs-kafka/report.ts";
import { ensureHarnessTools, type HarnessTools } from "./bench-vs-kafka/requirements.ts";
import {
  MIN_PASSES,
  passRecords,
  type RunContext,
  runRepetition,
  runScale,
} from "./bench-vs-kafka/runner.ts";
import { makeSaslSsl, type SaslSsl } from "./bench-vs-kafka/sasl-ssl.ts";
import {
  FULL_SIZES,
  QUICK_SIZES,
  SCALE_WORKLOADS,
  type ScaleWorkload,
} from "./bench-vs-kafka/scale.ts";
import { runnable, type Workload } from "./bench-vs-kafka/workloads.ts";

const ROOT = join(import.meta.dir, "..");
const RESULTS_DIR = join(ROOT, ".bench");
/** --quick divides producer passes by this; rows still run ROW_SECONDS_QUICK at least. */
const QUICK_SCALE = 4;
const ROW_SECONDS_FULL = 10;
const ROW_SECONDS_QUICK = 3;

interface Options {
  quick: boolean;
  repetitions: number;
  /** Measure one broker only (profiling, or Kafka is not wanted); ratios are then n/a. */
  only: BrokerKind | null;
  /** Workload ids to run (see workloads.ts and scale.ts); empty: all. */
  workloadIds: string[];
  /** A Quill binary to measure instead of building dist/quill (before/after comparisons). */
  quillBinary: string | null;
  /** Run the compaction workload (and nothing else) with a dirty log of this many MB. */
  compactionMegabytes: number | null;
  /** Which of the workload rows and the scale workloads run. */
  scale: "with" | "without" | "only";
}

function parseOptions(argv: readonly string[]): Options {
  const options: Options = {
    quick: false,
    repetitions: 3,
    only: null,
    workloadIds: [],
    quillBinary: null,
    compactionMegabytes: null,
    scale: "with",
  };
  const flags: Record<string, () => void> = {
    "--quick": () => (options.quick = true),
    "--compaction": () => (options.compactionMegabytes ??= 1000),
    "--no-scale": () => (options.scale = "without"),
    "--scale-only": () => (options.scale = "only"),
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = argv[i + 1];
    if (flags[flag] !== undefined) {
      flags[flag]();
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

function select<T extends { id: string }>(all: readonly T[], ids: readonly string[]): T[] {
  return ids.length === 0 ? [...all] : all.filter((w) => ids.includes(w.id));
}

function checkIds(ids: readonly string[], known: readonly { id: string }[]): void {
  const unknown = ids.filter((id) => !known.some((w) => w.id === id));
  if (unknown.length === 0) return;
  const names = known.map((w) => w.id).join(", ");
  throw new Error(`unknown or unavailable workload(s) ${unknown.join(", ")}; known: ${names}`);
}

interface Plan {
  readonly workloads: readonly Workload[];
  readonly scaleWorkloads: readonly ScaleWorkload[];
  readonly kinds: readonly BrokerKind[];
}

function plan(options: Options, tools: HarnessTools, saslSsl: SaslSsl | null): Plan {
  const available = runnable(toolsOf(tools, "", saslSsl));
  const workloads = options.scale === "only" ? [] : select(available, options.workloadIds);
  const scaleWorkloads =
    options.scale === "without" || tools.rdkafkaScale === null || tools.rdkafkaLatency === null
      ? []
      : select(SCALE_WORKLOADS, options.workloadIds);
  checkIds(options.workloadIds, [...available, ...SCALE_WORKLOADS]);
  const kinds: BrokerKind[] =
    tools.classpath === null
      ? ["quill"]
      : options.only === null
        ? ["kafka", "quill"]
        : [options.only];
  return { workloads, scaleWorkloads, kinds };
}

function toolsOf(tools: HarnessTools, runDir: string, saslSsl: SaslSsl | null) {
  return {
    rdkafkaLoad: tools.rdkafkaLoad,
    rdkafkaLatency: tools.rdkafkaLatency,
    classpath: tools.classpath,
    runDir,
    saslSsl,
  };
}

/** The certificates of the SASL_SSL rows; without openssl those rows are missing (named). */
function saslSslOrMissing(missing: string[]): SaslSsl | null {
  try {
    return makeSaslSsl();
  } catch (error) {
    missing.push(`certificates for the SASL_SSL rows: ${(error as Error).message.slice(0, 300)}`);
    return null;
  }
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const startedMs = performance.now();
  const loadAtStart = loadAverage();
  const quillBinary = options.quillBinary ?? buildQuill();
  const runDir = mkdtempSync(join(tmpdir(), "quill-vs-kafka-"));
  if (options.compactionMegabytes !== null) {
    const dist = await ensureKafkaDist();
    const classpath = "classpath" in dist ? dist.classpath : null;
    await compactionRun(options, quillBinary, classpath, runDir, options.compactionMegabytes);
    return;
  }
  const harnessTools = await ensureHarnessTools();
  const missing = [...harnessTools.missing];
  const saslSsl = saslSslOrMissing(missing);
  const tools = { ...harnessTools, missing };
  for (const m of tools.missing) console.error(`missing: ${m}`);
  const { workloads, scaleWorkloads, kinds } = plan(options, tools, saslSsl);
  const zookeeper = kinds.includes("kafka") ? await startZooKeeper() : null;
  const ctx: RunContext = {
    tools: toolsOf(tools, runDir, saslSsl),
    workloads,
    quillBinary,
    zookeeper,
    runDir,
    scale: options.quick ? QUICK_SCALE : 1,
    rowSeconds: options.quick ? ROW_SECONDS_QUICK : ROW_SECONDS_FULL,
  };
  try {
    const loopback = await loopbackMegabytesPerSecond();
    const runs = workloads.length === 0 ? [] : await runRepetitions(ctx, options, kinds);
    const scaleRuns = await runScaleWorkloads(ctx, options, kinds, tools, scaleWorkloads);
    const seconds = (performance.now() - startedMs) / 1000;
    report({
      options,
      ctx,
      runs,
      scaleRuns,
      scaleWorkloads,
      loopback,
      loadAtStart,
      seconds,
      tools,
    });
  } finally {
    await zookeeper?.stop();
    saslSsl?.remove();
    rmSync(runDir, { recursive: true, force: true });
  }
}

async function runRepetitions(
  ctx: RunContext,
  options: Options,
  kinds: readonly BrokerKind[],
): Promise<BrokerRun[]> {
  const runs: BrokerRun[] = [];
  for (let repetition = 1; repetition <= options.repetitions; repetition++) {
    // Alternate which broker goes first, so a drift in machine load hits both alike.
    const order = repetition % 2 === 1 ? kinds : [...kinds].reverse();
    for (const kind of order) {
      console.error(`repetition ${repetition}/${options.repetitions}: ${kind}`);
      runs.push(await runRepetition(ctx, kind, repetition));
    }
  }
  return runs;
}

async function runScaleWorkloads(
  ctx: RunContext,
  options: Options,
  kinds: readonly BrokerKind[],
  tools: HarnessTools,
  scaleWorkloads: readonly ScaleWorkload[],
): Promise<ScaleRun[]> {
  const scaleTools = {
    rdkafkaScale: tools.rdkafkaScale!,
    rdkafkaLatency: tools.rdkafkaLatency!,
    franzScale: tools.franzScale,
  };
  const sizes = options.quick ? QUICK_SIZES : FULL_SIZES;
  const scaleRuns: ScaleRun[] = [];
  for (const w of scaleWorkloads) {
    for (const kind of kinds) {
      console.error(`scale ${w.id}: ${kind}`);
      const run = await runScale(ctx, kind, w, scaleTools, sizes);
      console.error(`  ${JSON.stringify(run)}; load ${loadAverage()}`);
      scaleRuns.push(run);
    }
  }
  return scaleRuns;
}

interface ReportInput {
  readonly options: Options;
  readonly ctx: RunContext;
  readonly runs: readonly BrokerRun[];
  readonly scaleRuns: readonly ScaleRun[];
  readonly scaleWorkloads: readonly ScaleWorkload[];
  readonly loopback: number | null;
  readonly loadAtStart: string;
  readonly seconds: number;
  readonly tools: HarnessTools;
}

function notes(input: ReportInput): string[] {
  const { options, loopback, tools } = input;
  return [
    ...tools.missing.map((m) => `Missing: ${m}.`),
    options.only !== null ? `Only ${options.only} measured (--only).` : "",
    loopback === null
      ? "Loopback ceiling: iperf3 unavailable."
      : `Loopback ceiling (iperf3, same run): ${Math.round(loopback).toLocaleString("en-US")} MB/s ` +
        `(${((loopback * 8) / 1000).toFixed(1)} Gbit/s).`,
    `Each row ran at least ${MIN_PASSES} passes and ${input.ctx.rowSeconds} s; rates are the ` +
      "median pass, spread is (max - min) / median over every pass of every repetition. " +
      "Consumers read two producer passes of a topic holding at least three.",
    "MB = 1e6 bytes of record values. Broker CPU s per GB of record values and per million " +
      "requests the broker received during the row; peak RSS per row (VmHWM reset before " +
      "each). Kafka's figures are the broker JVM only, not ZooKeeper.",
    "produce/consume ratios: geometric mean over those workloads of the ratio of medians; " +
      "consume_min: the lowest consume ratio; p99: the fixed-rate 1 KiB end-to-end workload; " +
      "scale: geometric mean of the scale workloads' throughput ratios; cpu_gb, cpu_mreq: " +
      "geometric means of Quill/Kafka CPU per GB and per million requests over the rows; " +
      "all of these over the PLAINTEXT rows. tls: geometric mean of the throughput ratios of " +
      "the SASL_SSL rows (SCRAM-SHA-512, one CA and server certificate for both brokers).",
  ].filter((n) => n !== "");
}

function report(input: ReportInput): void {
  const { options, runs, ctx } = input;
  const r = ratios(runs, ctx.workloads, input.scaleRuns, input.scaleWorkloads);
  const quick = options.quick ? `, --quick (producer passes of 1/${QUICK_SCALE})` : "";
  const heading =
    `Quill (${options.quillBinary ?? "dist/quill"}) vs Apache Kafka ` +
    `${KAFKA_VERSION} (ZooKeeper mode, -Xmx1G), one broker at a time on 127.0.0.1, ` +
    `${navigator.hardwareConcurrency} cores; medians of ${options.repetitions} ` +
    `repetition(s)${quick}` +
    `; load average ${input.loadAtStart} at start, ${loadAverage()} at end; ` +
    `${Math.round(input.seconds)} s in all.`;
  // A comparison with a client or Kafka missing is partial: no ratios line for it.
  const ratiosText =
    input.tools.missing.length > 0 && options.only === null
      ? `no ratios: the comparison is incomplete (missing: ${input.tools.missing.join("; ")})`
      : ratiosLine(r);
  const markdown = [
    heading,
    "",
    throughputTable(runs, ctx.workloads, (w) => passRecords(ctx, w)),
    "",
    latencyTable(runs, ctx.workloads),
    "",
    brokerTable(runs),
    "",
    scaleTable(input.scaleRuns, input.scaleWorkloads),
    "",
    ...notes(input),
    "",
    ratiosText,
  ].join("\n");
  save(input, markdown, r);
  console.log(markdown.slice(0, markdown.lastIndexOf("\n")));
  console.log(ratiosText);
  if (ratiosText.startsWith("no ratios")) process.exitCode = 1;
}

function save(input: ReportInput, markdown: string, r: ReturnType<typeof ratios>): void {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const stamp = new Date().toISOString().replaceAll(":", "-").slice(0, 19);
  const name = `bench-vs-kafka-${input.options.quick ? "quick-" : ""}${stamp}`;
  writeFileSync(join(RESULTS_DIR, `${name}.md`), markdown + "\n");
  const json = {
    options: input.options,
    kafkaVersion: KAFKA_VERSION,
    cores: navigator.hardwareConcurrency,
    loadAverageAtStart: input.loadAtStart,
    loadAverageAtEnd: loadAverage(),
    seconds: input.seconds,
    loopbackMegabytesPerSecond: input.loopback,
    missing: input.tools.missing,
    ratios: r,
    runs: input.runs,
    scaleRuns: input.scaleRuns,
  };
  writeFileSync(join(RESULTS_DIR, `${name}.json`), JSON.stringify(json, null, 2) + "\n");
  console.error(`Results: ${join(RESULTS_DIR, name)}.{md,json}`);
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
