import type { Histogram } from "../util/histogram.ts";

/**
 * Prometheus' text exposition format (version 0.0.4): families with HELP and TYPE lines, then
 * their samples; histograms as cumulative `_bucket{le}` lines, `_sum` and `_count`.
 */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export type Labels = Readonly<Record<string, string | number>>;

export class Exposition {
  private readonly lines: string[] = [];

  counter(name: string, help: string, samples: Iterable<[Labels, number]>): void {
    this.family(name, help, "counter", samples);
  }

  gauge(name: string, help: string, samples: Iterable<[Labels, number]>): void {
    this.family(name, help, "gauge", samples);
  }

  histogram(name: string, help: string, series: Iterable<[Labels, Histogram]>): void {
    this.lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} histogram`);
    for (const [labels, h] of series) {
      let cumulative = 0;
      h.bounds.forEach((bound, i) => {
        cumulative += h.buckets[i]!;
        this.lines.push(`${name}_bucket${labelText({ ...labels, le: bound })} ${cumulative}`);
      });
      this.lines.push(`${name}_bucket${labelText({ ...labels, le: "+Inf" })} ${h.count}`);
      this.lines.push(`${name}_sum${labelText(labels)} ${h.sum}`);
      this.lines.push(`${name}_count${labelText(labels)} ${h.count}`);
    }
  }

  text(): string {
    return `${this.lines.join("\n")}\n`;
  }

  private family(
    name: string,
    help: string,
    type: string,
    samples: Iterable<[Labels, number]>,
  ): void {
    this.lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, value] of samples) this.lines.push(`${name}${labelText(labels)} ${value}`);
  }
}

/** A single unlabelled sample. */
export function one(value: number): [Labels, number][] {
  return [[{}, value]];
}

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${labelValue(String(v))}"`);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

/** Label values escape backslash, double quote and newline, as the format requires. */
function labelValue(text: string): string {
  return text.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
}
