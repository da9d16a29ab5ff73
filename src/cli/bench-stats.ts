/**
 * Figures of `quill bench`: records and bytes over time, and latency percentiles weighted by
 * records (a request's latency counts once per record it carried, as kafka-producer-perf-test
 * reports per-record latency). Samples are bounded: past SAMPLES_MAX requests, every other one
 * is kept (the percentiles stay those of an even sample).
 */
const SAMPLES_MAX = 200_000;
const MB = 1024 * 1024;

export interface BenchSummary {
  readonly records: number;
  readonly bytes: number;
  readonly seconds: number;
  readonly recordsPerSec: number;
  readonly mbPerSec: number;
  readonly latencyMs: {
    readonly avg: number;
    readonly p50: number;
    readonly p95: number;
    readonly p99: number;
    readonly p999: number;
    readonly max: number;
  };
}

export class BenchStats {
  private readonly started = performance.now();
  private samples: [number, number][] = [];
  private keepEvery = 1;
  private seen = 0;
  records = 0;
  bytes = 0;
  private windowRecords = 0;
  private windowBytes = 0;
  private windowStarted = performance.now();
  private latencyTotalMs = 0;
  private maxMs = 0;

  record(records: number, bytes: number, latencyMs: number): void {
    this.records += records;
    this.bytes += bytes;
    this.windowRecords += records;
    this.windowBytes += bytes;
    this.latencyTotalMs += latencyMs * records;
    if (latencyMs > this.maxMs) this.maxMs = latencyMs;
    if (this.seen++ % this.keepEvery !== 0) return;
    this.samples.push([latencyMs, records]);
    if (this.samples.length >= SAMPLES_MAX) {
      this.samples = this.samples.filter((_, i) => i % 2 === 0);
      this.keepEvery *= 2;
    }
  }

  private percentiles(qs: readonly number[]): number[] {
    const sorted = [...this.samples].sort((a, b) => a[0] - b[0]);
    const total = sorted.reduce((n, s) => n + s[1], 0);
    return qs.map((q) => {
      let seen = 0;
      for (const [ms, n] of sorted) {
        seen += n;
        if (seen >= q * total) return ms;
      }
      return sorted.at(-1)?.[0] ?? 0;
    });
  }

  /** The live line: the last window's rates and the latency so far. */
  progressLine(verb: string): string {
    const now = performance.now();
    const secs = Math.max((now - this.windowStarted) / 1000, 1e-3);
    const [p50, p99] = this.percentiles([0.5, 0.99]);
    const line =
      `${verb} ${this.records} records, ${Math.round(this.windowRecords / secs)} records/s, ` +
      `${(this.windowBytes / MB / secs).toFixed(1)} MB/s, ` +
      `latency p50 ${p50!.toFixed(1)} ms p99 ${p99!.toFixed(1)} ms`;
    this.windowRecords = 0;
    this.windowBytes = 0;
    this.windowStarted = now;
    return line;
  }

  summary(): BenchSummary {
    const seconds = (performance.now() - this.started) / 1000;
    const [p50, p95, p99, p999] = this.percentiles([0.5, 0.95, 0.99, 0.999]);
    const round = (n: number) => Math.round(n * 100) / 100;
    return {
      records: this.records,
      bytes: this.bytes,
      seconds: round(seconds),
      recordsPerSec: Math.round(this.records / seconds),
      mbPerSec: round(this.bytes / MB / seconds),
      latencyMs: {
        avg: round(this.records > 0 ? this.latencyTotalMs / this.records : 0),
        p50: round(p50!),
        p95: round(p95!),
        p99: round(p99!),
        p999: round(p999!),
        max: round(this.maxMs),
      },
    };
  }
}

/** Prints the live line every second: redrawn in place on a terminal, one line each otherwise. */
export function startProgress(stats: BenchStats, verb: string): () => void {
  const terminal = process.stderr.isTTY === true;
  const timer = setInterval(() => {
    const line = stats.progressLine(verb);
    process.stderr.write(terminal ? `\r\x1b[K${line}` : `${line}\n`);
  }, 1000);
  return () => {
    clearInterval(timer);
    if (terminal) process.stderr.write("\n");
  };
}
