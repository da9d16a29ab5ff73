/**
 * Progress of `quill export`: on a terminal, one line per partition and a total line, redrawn
 * in place twice a second; otherwise a plain total line every `intervalMs`, for logs.
 */
export interface PartitionProgress {
  readonly name: string;
  total: number;
  done: number;
  bytes: number;
}

const MB = 1024 * 1024;

function rateLine(name: string, p: { total: number; done: number; bytes: number }, secs: number) {
  const rate = secs > 0 ? p.done / secs : 0;
  const left = p.total - p.done;
  const eta = rate > 0 && left > 0 ? `${Math.ceil(left / rate)} s` : "-";
  const pct = p.total > 0 ? ((100 * p.done) / p.total).toFixed(1) : "100.0";
  return (
    `${name}: ${p.done}/${p.total} records (${pct}%), ${(p.bytes / MB).toFixed(1)} MB, ` +
    `${Math.round(rate)} records/s, ${(p.bytes / MB / Math.max(secs, 1e-3)).toFixed(1)} MB/s, ` +
    `ETA ${eta}`
  );
}

export class ExportProgress {
  private readonly started = performance.now();
  private readonly partitions: PartitionProgress[] = [];
  private timer: ReturnType<typeof setInterval> | null = null;
  private drawnLines = 0;

  constructor(
    private readonly terminal: boolean,
    private readonly intervalMs: number,
  ) {}

  track(name: string, total: number): PartitionProgress {
    const p = { name, total, done: 0, bytes: 0 };
    this.partitions.push(p);
    return p;
  }

  start(): void {
    this.timer = setInterval(() => this.draw(), this.terminal ? 500 : this.intervalMs);
  }

  private totals() {
    return this.partitions.reduce(
      (t, p) => ({ total: t.total + p.total, done: t.done + p.done, bytes: t.bytes + p.bytes }),
      { total: 0, done: 0, bytes: 0 },
    );
  }

  private draw(): void {
    const secs = (performance.now() - this.started) / 1000;
    if (!this.terminal) {
      process.stderr.write(`${rateLine("export", this.totals(), secs)}\n`);
      return;
    }
    const lines = this.partitions
      .filter((p) => p.done > 0 && p.done < p.total)
      .map((p) => rateLine(p.name, p, secs));
    lines.push(rateLine("total", this.totals(), secs));
    const up = this.drawnLines > 0 ? `\x1b[${this.drawnLines}F` : "";
    process.stderr.write(`${up}\x1b[J${lines.join("\n")}\n`);
    this.drawnLines = lines.length;
  }

  /** Stops redrawing and returns the totals with the elapsed seconds. */
  finish() {
    if (this.timer !== null) clearInterval(this.timer);
    if (this.terminal) this.draw();
    return { ...this.totals(), seconds: (performance.now() - this.started) / 1000 };
  }
}
