// Medians over repetitions, ratios Quill / Kafka, and the Markdown tables the harness prints and
// saves. Every ratio is Quill divided by Kafka: above 1 is better for throughput, below 1 is
// better for latency, RSS and start-up.
import type { BrokerKind } from "./brokers.ts";
import type { Measurement, Workload } from "./workloads.ts";

/** One workload on one broker in one repetition. */
export interface WorkloadRun {
  readonly workloadId: string;
  readonly measurement: Measurement | null;
  readonly error: string | null;
  readonly brokerCpuSeconds: number;
  readonly brokerPeakRssBytes: number;
  /** The machine's load average (1, 5, 15 min) when the workload finished. */
  readonly loadAverage: string;
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
  readonly failures: number;
}

export interface Ratios {
  readonly produce: number | null;
  readonly consume: number | null;
  readonly p99: number | null;
  readonly rss: number | null;
  readonly startup: number | null;
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
  const ok = all.filter((w) => w.measurement !== null);
  const pick = (f: (m: Measurement) => number | null) =>
    median(ok.map((w) => f(w.measurement!)).filter((v): v is number => v !== null));
  return {
    recordsPerSecond: pick((m) => m.recordsPerSecond),
    megabytesPerSecond: pick((m) => m.megabytesPerSecond),
    p50Ms: pick((m) => m.p50Ms),
    p99Ms: pick((m) => m.p99Ms),
    p999Ms: pick((m) => m.p999Ms),
    brokerCpuSeconds: median(ok.map((w) => w.brokerCpuSeconds)),
    brokerPeakRssBytes: median(ok.map((w) => w.brokerPeakRssBytes)),
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
 * produce and consume: geometric mean over the workloads of that kind of the ratio of medians;
 * p99: the fixed-rate end-to-end workload; rss: whole-run peak; startup: to first produce.
 */
export function ratios(runs: readonly BrokerRun[], workloads: readonly Workload[]): Ratios {
  const throughputRatio = (kind: Workload["kind"]) => {
    const values = workloads
      .filter((w) => w.kind === kind)
      .map((w) =>
        ratio(
          summarize(runs, "quill", w.id).recordsPerSecond,
          summarize(runs, "kafka", w.id).recordsPerSecond,
        ),
      )
      .filter((v): v is number => v !== null);
    return geometricMean(values);
  };
  return {
    produce: throughputRatio("produce"),
    consume: throughputRatio("consume"),
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
    `ratios: produce=${f(r.produce)} consume=${f(r.consume)} p99=${f(r.p99)} ` +
    `rss=${f(r.rss)} startup=${f(r.startup)}`
  );
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

export function throughputTable(
  runs: readonly BrokerRun[],
  workloads: readonly Workload[],
  scale: number,
): string {
  const lines = [
    "| workload | client | records | Kafka rec/s | Quill rec/s | Quill/Kafka | Kafka MB/s | " +
      "Quill MB/s | Kafka p99 ms | Quill p99 ms | Kafka CPU s | Quill CPU s | " +
      "Kafka peak RSS MB | Quill peak RSS MB |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const w of workloads.filter((x) => x.kind !== "latency")) {
    const k = summarize(runs, "kafka", w.id);
    const q = summarize(runs, "quill", w.id);
    lines.push(
      `| ${w.kind}: ${w.title}${failed(k, q)} | ${w.client} | ` +
        `${num(Math.round(w.fullRecords / scale))} | ${num(k.recordsPerSecond)} | ` +
        `${num(q.recordsPerSecond)} | ${times(ratio(q.recordsPerSecond, k.recordsPerSecond))} | ` +
        `${num(k.megabytesPerSecond, 1)} | ${num(q.megabytesPerSecond, 1)} | ${num(k.p99Ms)} | ` +
        `${num(q.p99Ms)} | ${num(k.brokerCpuSeconds, 2)} | ${num(q.brokerCpuSeconds, 2)} | ` +
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
