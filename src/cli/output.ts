/**
 * Output of the client commands: aligned tables for people, JSON for scripts (`--format json`).
 * Offsets are bigints inside; JSON prints them as numbers while exact (below 2^53) and as strings
 * beyond, so a script never reads a rounded offset.
 */
import { UsageError } from "./args.ts";
import type { CommandArgs } from "./command-args.ts";

export type OutputFormat = "table" | "json";

export function outputFormat(args: CommandArgs): OutputFormat {
  const format = args.get("--format") ?? "table";
  if (format !== "table" && format !== "json") {
    throw new UsageError(`--format expects table or json, got "${format}"`);
  }
  return format;
}

export function jsonText(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    typeof v === "bigint"
      ? v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER)
        ? Number(v)
        : v.toString()
      : v,
  );
}

export function printJson(value: unknown): void {
  process.stdout.write(`${jsonText(value)}\n`);
}

type Cell = string | number | bigint | boolean | null | undefined;

/** Columns padded to their widest cell; numbers right-aligned. */
export function tableText(headers: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const text = rows.map((row) => row.map((c) => (c === null || c === undefined ? "-" : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...text.map((r) => r[i]?.length ?? 0)));
  const numeric = headers.map((_, i) =>
    rows.every((r) => typeof r[i] === "number" || typeof r[i] === "bigint"),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...text.map(line)].join("\n") + "\n";
}

export function printTable(headers: readonly string[], rows: readonly (readonly Cell[])[]): void {
  process.stdout.write(tableText(headers, rows));
}

/** A list of broker ids as Kafka's tools print them: `1,2,3`. */
export const ids = (list: readonly number[]) => list.join(",");
