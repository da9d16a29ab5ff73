/**
 * `quill export --file-window hour|day`: files cut by the records' own timestamps (UTC), each
 * file holding records of one window only, under Hive-style directories named like Kafka
 * Connect's HourlyPartitioner and DailyPartitioner (`year=YYYY/month=MM/day=dd/hour=HH`), so
 * DuckDB, Spark, Trino or Athena read the window as columns and prune files by it.
 *
 * A file stays a contiguous offset range of one partition (what makes a resumed export exact),
 * so a record whose window differs from the open file's closes that file: timestamps that go
 * back and forth across a boundary (CreateTime from producers with skewed clocks) cut more,
 * smaller files, each still in its window's directory.
 */
import { UsageError } from "./args.ts";

export type FileWindow = "none" | "hour" | "day";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

export function parseFileWindow(raw: string | undefined): FileWindow {
  const value = raw ?? "none";
  if (value === "none" || value === "hour" || value === "day") return value;
  throw new UsageError(`--file-window expects hour, day or none, got "${value}"`);
}

/** The start (epoch ms) of the window holding `timestampMs`; 0 for every record without one. */
export function windowStartMs(window: FileWindow, timestampMs: number): number {
  if (window === "none") return 0;
  const size = window === "hour" ? HOUR_MS : DAY_MS;
  return Math.floor(timestampMs / size) * size;
}

export function windowEndMs(window: FileWindow, startMs: number): number {
  return startMs + (window === "hour" ? HOUR_MS : DAY_MS);
}

const two = (n: number) => String(n).padStart(2, "0");

/** The window's directory under the topic's, e.g. `year=2026/month=12/day=02/hour=05`. */
export function windowDir(window: FileWindow, startMs: number): string {
  if (window === "none") return "";
  const t = new Date(startMs);
  const day =
    `year=${String(t.getUTCFullYear()).padStart(4, "0")}/month=${two(t.getUTCMonth() + 1)}` +
    `/day=${two(t.getUTCDate())}`;
  return window === "day" ? day : `${day}/hour=${two(t.getUTCHours())}`;
}
