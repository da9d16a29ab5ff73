// Medians over repetitions, ratios Quill / Kafka, and the Markdown tables the harness prints and
// saves. Every ratio is Quill divided by Kafka: above 1 is better for throughput, below 1 is
// better for latency, RSS and start-up.
import type { BrokerKind } from "./brokers.ts";
import type { ScaleFigures, ScaleWorkload } from "./scale.ts";
import type { Measurement, Workload } from "./workloads.ts";

/** One workload row on one broker in one repetition: its passes, or the error that ended it. */
export interface WorkloadRun {
  readonly workloadId: string;
  readonly passes: readonly Measurement[];
  readonly error: string | null;
  /** Over all passes of the row. */
  readonly brokerCpuSeconds: number;
  readonly brokerPeakRssBytes: number;
  /** Requests the broker received during the row. */
  readonly requests: number;
  /** Record value bytes the row produced or consumed, in MB (1e6 B). */
  readonly megabytes: number;
  /** The machine's load average (1, 5, 15 min) when the workload finished. */
  readonly loadAverage: string;
}

/** One scale workload on one broker (bench-vs-kafka/scale.ts). */
export interface ScaleRun {
  readonly kind: BrokerKind;
  readonly workloadId: string;
  readonly figures: ScaleFigures;
  readonly error: string | null;
  readonly brokerCpuSeconds: number;
}

/** One broker start, its workloads, and its stop. */
export interface BrokerRun {
  readonly kind: BrokerKind;
  readonly repetition: number;
  readonly startupMs: number;
  /** Highest VmHWM seen over start-up and every workload. */
  readonly peakRssBytes: number;
  readonly cpuSeconds: number;
  readonly workloads: readonly WorkloadRun[];
}

export interface Summary {
  readonly recordsPerSecond: number | null;
  readonly megabytesPerSecond: number | null;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  readonly p999Ms: number | null;
  readonly brokerCpuSeconds: number | null;
  readonly brokerPeakRssBytes: number | null;
  /** (max - min) / median of records/s over every pass of every repetition. */
  readonly spread: number | null;
  /** Broker CPU seconds per GB of record values, and per million requests. */
  readonly cpuPerGb: number | null;
  readonly cpuPerMillionRequests: number | null;
  readonly failures: number;
}

export interface Ratios {
  readonly produce: number | null;
  readonly consume: number | null;
  /** The lowest consume ratio of any workload (any client). */
  readonly consumeMin: number | null;
  readonly p99: number | null;
  readonly rss: number | null;
  readonly startup: number | null;
  /** Geometric mean of the scale workloads' throughput ratios. */
  readonly scale: number | null;
  /** Geometric means over produce and consume rows of Quill/Kafka CPU per GB, per M requests. */
  readonly cpuPerGb: number | null;
  readonly cpuPerMillionRequests: number | null;
  /** Geometric mean of the SASL_SSL rows' throughput ratios (produce and consume). */
  readonly tls: number | null;
}

export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function geometricMean(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  return Math.exp(values.reduce((sum, v) => sum + Math.log(v), 0) / values.length);
}

export function summarize(
  runs: readonly BrokerRun[],
  kind: BrokerKind,
  workloadId: string,
): Summary {
  const all = runs
    .filter((r) => r.kind === kind)
    .flatMap((r) => r.workloads.filter((w) => w.workloadId === workloadId));
  const ok = all.filter((w) => w.error === null && w.passes.length > 0);
  const passes = ok.flatMap((w) => w.passes);
  const pick = (f: (m: Measurement) => number | null) =>
    median(passes.map(f).filter((v): v is number => v !== null));
  const rates = passes.map((m) => m.recordsPerSecond);
  const medianRate = median(rates);
  const perUnit = (f: (w: WorkloadRun) => number) =>
    median(ok.filter((w) => f(w) > 0).map((w) => w.brokerCpuSeconds / f(w)));
  return {
    recordsPerSecond: medianRate,
    megabytesPerSecond: pick((m) => m.megabytesPerSecond),
    p50Ms: pick((m) => m.p50Ms),
    p99Ms: pick((m) => m.p99Ms),
    p999Ms: pick((m) => m.p999Ms),
    brokerCpuSeconds: median(ok.map((w) => w.brokerCpuSeconds)),
    brokerPeakRssBytes: median(ok.map((w) => w.brokerPeakRssBytes)),
    spread:
      medianRate === null || rates.length < 2
        ? null
        : (Math.max(...rates) - Math.min(...rates)) / medianRate,
    cpuPerGb: perUnit((w) => w.megabytes / 1000),
    cpuPerMillionRequests: perUnit((w) => w.requests / 1e6),
    failures: all.length - ok.length,
  };
}

function brokerMedian(
  runs: readonly BrokerRun[],
  kind: BrokerKind,
  f: (r: BrokerRun) => number,
): number | null {
  return median(runs.filter((r) => r.kind === kind).map(f));
}

const ratio = (quill: number | null, kafka: number | null): number | null =>
  quill === null || kafka === null || kafka === 0 ? null : quill / kafka;

/**
 * produce and consume: geometric mean over the plaintext workloads of that kind of the ratio of
 * medians (as before the SASL_SSL rows existed, so runs compare); tls: the same over the SASL_SSL
 * rows; p99: the fixed-rate end-to-end workload; rss: whole-run peak; startup: to first produce.
 */
export function ratios(
  runs: readonly BrokerRun[],
  workloads: readonly Workload[],
  scaleRuns: readonly ScaleRun[],
  scaleWorkloads: readonly ScaleWorkload[],
): Ratios {
  const perWorkload = (
    kinds: readonly Workload["kind"][],
    f: (s: Summary) => number | null,
    listener: Workload["listener"] = "PLAINTEXT",
  ) =>
    workloads
      .filter((w) => kinds.includes(w.kind) && w.listener === listener)
      .map((w) => ratio(f(summarize(runs, "quill", w.id)), f(summarize(runs, "kafka", w.id))))
      .filter((v): v is number => v !== null);
  const consume = perWorkload(["consume"], (s) => s.recordsPerSecond);
  return {
    produce: geometricMean(perWorkload(["produce"], (s) => s.recordsPerSecond)),
    consume: geometricMean(consume),
    consumeMin: consume.length === 0 ? null : Math.min(...consume),
    scale: geometricMean(scaleRatios(scaleRuns, scaleWorkloads)),
    cpuPerGb: geometricMean(perWorkload(["produce", "consume"], (s) => s.cpuPerGb)),
    cpuPerMillionRequests: geometricMean(
      perWorkload(["produce", "consume"], (s) => s.cpuPerMillionRequests),
    ),
    tls: geometricMean(perWorkload(["produce", "consume"], (s) => s.recordsPerSecond, "SASL_SSL")),
    p99: ratio(
      summarize(runs, "quill", "latency-1k").p99Ms,
      summarize(runs, "kafka", "latency-1k").p99Ms,
    ),
    rss: ratio(
      brokerMedian(runs, "quill", (r) => r.peakRssBytes),
      brokerMedian(runs, "kafka", (r) => r.peakRssBytes),
    ),
    startup: ratio(
      brokerMedian(runs, "quill", (r) => r.startupMs),
      brokerMedian(runs, "kafka", (r) => r.startupMs),
    ),
  };
}

export function ratiosLine(r: Ratios): string {
  const f = (v: number | null) => (v === null ? "n/a" : v.toFixed(3));
  return (
    `ratios: produce=${f(r.produce)} consume=${f(r.consume)} consume_min=${f(r.consumeMin)} ` +
    `p99=${f(r.p99)} rss=${f(r.rss)} startup=${f(r.startup)} scale=${f(r.scale)} ` +
    `cpu_gb=${f(r.cpuPerGb)} cpu_mreq=${f(r.cpuPerMillionRequests)} tls=${f(r.tls)}`
  );
}

/** Quill/Kafka of every throughput figure of every scale workload both brokers finished. */
function scaleRatios(
  scaleRuns: readonly ScaleRun[],
  scaleWorkloads: readonly ScaleWorkload[],
): number[] {
  const values: number[] = [];
  for (const w of scaleWorkloads) {
    const figures = (kind: BrokerKind) =>
      scaleRuns.find((r) => r.kind === kind && r.workloadId === w.id && r.error === null)?.figures;
    const q = figures("quill");
    const k = figures("kafka");
    if (q === undefined || k === undefined) continue;
    for (const key of w.throughputKeys) {
      const value = ratio(q[key] ?? null, k[key] ?? null);
      if (value !== null) values.push(value);
    }
  }
  return values;
}

/**
 * Every figure of every scale workload, Kafka beside Quill, with the ratio; the figures whose
 * ratios make up `scale=` say so.
 */
export function scaleTable(
  scaleRuns: readonly ScaleRun[],
  scaleWorkloads: readonly ScaleWorkload[],
): string {
  const lines = [
    "| scale workload | figure | Kafka | Quill | Quill/Kafka |",
    "|---|---|---:|---:|---:|",
  ];
  for (const w of scaleWorkloads) {
    const run = (kind: BrokerKind) =>
      scaleRuns.find((r) => r.kind === kind && r.workloadId === w.id);
    const k = run("kafka");
    const q = run("quill");
    const errors = [
      k?.error ? `Kafka failed: ${k.error.slice(0, 120)}` : "",
      q?.error ? `Quill failed: ${q.error.slice(0, 120)}` : "",
    ].filter((e) => e !== "");
    if (errors.length > 0) lines.push(`| ${w.title} | ${errors.join("; ")} | | | |`);
    const keys = [...new Set([...Object.keys(k?.figures ?? {}), ...Object.keys(q?.figures ?? {})])];
    keys.push("brokerCpuSeconds");
    for (const key of keys) {
      const pickFigure = (r: ScaleRun | undefined) =>
        r === undefined || r.error !== null
          ? null
          : key === "brokerCpuSeconds"
            ? r.brokerCpuSeconds
            : (r.figures[key] ?? null);
      const kv = pickFigure(k);
      const qv = pickFigure(q);
      const small = /(Ms|CpuS)$/.test(key) && Math.max(kv ?? 0, qv ?? 0) < 100;
      const digits = small ? 1 : 0;
      const label = w.throughputKeys.includes(key) ? `${key} (in scale=)` : key;
      lines.push(
        `| ${w.title} | ${label} | ${num(kv, digits)} | ${num(qv, digits)} | ` +
          `${times(ratio(qv, kv))} |`,
      );
    }
  }
  return lines.join("\n");
}

const num = (v: number | null, digits = 0) =>
  v === null
    ? "—"
    : v.toLocaleString("en-US", {
        minimumFractionDigits: digits,
        maximumFractionDigits: digits,
      });
const mb = (bytes: number | null) => (bytes === null ? "—" : num(bytes / 1e6));
const times = (v: number | null) => (v === null ? "—" : `${v.toFixed(2)}×`);
const percent = (v: number | null) => (v === null ? "—" : `${Math.round(v * 100)}%`);

export function throughputTable(
  runs: readonly BrokerRun[],
  workloads: readonly Workload[],
  recordsPerPass: (w: Workload) => number,
): string {
  const lines = [
    "| workload | client | records per pass | Kafka rec/s | Quill rec/s | Quill/Kafka | " +
      "spread Kafka / Quill | Kafka MB/s | Quill MB/s | Kafka p99 ms | Quill p99 ms | " +
      "CPU s/GB Kafka / Quill | CPU s/M req Kafka / Quill | " +
      "Kafka peak RSS MB | Quill peak RSS MB |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const w of workloads.filter((x) => x.kind !== "latency")) {
    const k = summarize(runs, "kafka", w.id);
    const q = summarize(runs, "quill", w.id);
    lines.push(
      `| ${w.kind}: ${w.title}${failed(k, q)} | ${w.client} | ` +
        `${num(recordsPerPass(w))} | ${num(k.recordsPerSecond)} | ` +
        `${num(q.recordsPerSecond)} | ${times(ratio(q.recordsPerSecond, k.recordsPerSecond))} | ` +
        `${percent(k.spread)} / ${percent(q.spread)} | ` +
        `${num(k.megabytesPerSecond, 1)} | ${num(q.megabytesPerSecond, 1)} | ${num(k.p99Ms)} | ` +
        `${num(q.p99Ms)} | ${num(k.cpuPerGb, 1)} / ${num(q.cpuPerGb, 1)} | ` +
        `${num(k.cpuPerMillionRequests)} / ${num(q.cpuPerMillionRequests)} | ` +
        `${mb(k.brokerPeakRssBytes)} | ${mb(q.brokerPeakRssBytes)} |`,
    );
  }
  return lines.join("\n");
}

export function latencyTable(runs: readonly BrokerRun[], workloads: readonly Workload[]): string {
  const lines = [
    "| workload | client | Kafka p50 / p99 / p99.9 ms | Quill p50 / p99 / p99.9 ms | " +
      "p99 Quill/Kafka | Kafka CPU s | Quill CPU s |",
    "|---|---|---:|---:|---:|---:|---:|",
  ];
  const triple = (s: Summary) => `${num(s.p50Ms, 2)} / ${num(s.p99Ms, 2)} / ${num(s.p999Ms, 2)}`;
  for (const w of workloads.filter((x) => x.kind === "latency")) {
    const k = summarize(runs, "kafka", w.id);
    const q = summarize(runs, "quill", w.id);
    lines.push(
      `| ${w.title}${failed(k, q)} | ${w.client} | ${triple(k)} | ${triple(q)} | ` +
        `${times(ratio(q.p99Ms, k.p99Ms))} | ${num(k.brokerCpuSeconds, 2)} | ` +
        `${num(q.brokerCpuSeconds, 2)} |`,
    );
  }
  return lines.join("\n");
}

export function brokerTable(runs: readonly BrokerRun[]): string {
  const row = (label: string, f: (r: BrokerRun) => number, digits: number, scale = 1) => {
    const k = brokerMedian(runs, "kafka", f);
    const q = brokerMedian(runs, "quill", f);
    const s = (v: number | null) => (v === null ? null : v / scale);
    return `| ${label} | ${num(s(k), digits)} | ${num(s(q), digits)} | ${times(ratio(q, k))} |`;
  };
  return [
    "| broker, whole repetition | Kafka | Quill | Quill/Kafka |",
    "|---|---:|---:|---:|",
    row("start-up to first produce, ms", (r) => r.startupMs, 0),
    row("peak RSS, MB", (r) => r.peakRssBytes, 0, 1e6),
    row("CPU seconds, all workloads", (r) => r.cpuSeconds, 1),
  ].join("\n");
}

function failed(k: Summary, q: Summary): string {
  const notes = [];
  if (k.failures > 0) notes.push(`Kafka failed ${k.failures}×`);
  if (q.failures > 0) notes.push(`Quill failed ${q.failures}×`);
  return notes.length === 0 ? "" : ` (${notes.join(", ")})`;
}
