// The chaos harness's checker: reads what the client recorded (acked.jsonl, read.jsonl,
// commits.jsonl) and the brokers' segment files straight from their data dirs, without asking a
// broker, and reports what a Kafka user with acks=all and min.insync.replicas=2 may rely on:
// - every acknowledged record is in the final log exactly once, at the offset acknowledged;
// - per partition, acknowledged records keep the order they were sent in;
// - no consumer read a record (offset, value) that is not in the final log (no dirty reads);
// - the replicas' logs are byte-identical;
// - the committed offset read back never moved backwards;
// - how long each partition went without an acknowledgement (unavailability), by fault: each
//   gap is blamed on one fault (`owner`).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { batchSizeBytes, decodeRecords, readBatchHeader } from "../../src/protocol/record-batch.ts";

export interface FaultRecord {
  readonly kind: string;
  readonly target: string;
  readonly startMs: number;
  readonly endMs: number;
}

interface Acked {
  partition: number;
  offset: string;
  value: string;
  sentAtMs: number;
  atMs: number;
}

export interface Report {
  readonly acked: number;
  readonly lost: number;
  readonly duplicates: number;
  readonly dirtyReads: number;
  readonly reordered: number;
  readonly commitsBackwards: number;
  readonly replicasDiffer: string[];
  readonly rows: string[];
  readonly longestUnavailableMs: number;
}

function lines<T>(path: string): T[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as T);
}

/** The partition's log bytes (all segments in order) in one broker's data dir. */
export function logBytes(dataDir: string, topic: string, partition: number): Buffer {
  const dir = join(dataDir, `${topic}-${partition}`);
  if (!existsSync(dir)) return Buffer.alloc(0);
  const segments = readdirSync(dir)
    .filter((f) => f.endsWith(".log"))
    .sort();
  return Buffer.concat(segments.map((f) => readFileSync(join(dir, f))));
}

/** offset -> value of every record in whole batches of `bytes`. */
export function records(bytes: Uint8Array): Map<string, string> {
  const out = new Map<string, string>();
  let position = 0;
  while (bytes.length - position >= 12) {
    const size = batchSizeBytes(bytes, position);
    if (position + size > bytes.length) break;
    const batch = bytes.subarray(position, position + size);
    const base = readBatchHeader(batch).baseOffset;
    for (const rec of decodeRecords(batch)) {
      const value = rec.value === null ? "" : new TextDecoder().decode(rec.value);
      out.set(String(base + BigInt(rec.offsetDelta)), value);
    }
    position += size;
  }
  return out;
}

interface Finals {
  readonly logs: Map<number, Map<string, string>>;
  readonly replicasDiffer: string[];
}

function finalLogs(
  dataDirs: ReadonlyMap<number, string>,
  topic: string,
  partitions: number,
): Finals {
  const logs = new Map<number, Map<string, string>>();
  const replicasDiffer: string[] = [];
  for (let p = 0; p < partitions; p++) {
    // With more brokers than replicas, only the partition's replicas have its directory.
    const copies = [...dataDirs]
      .filter(([, dir]) => existsSync(join(dir, `${topic}-${p}`)))
      .map(([id, dir]) => ({ id, bytes: logBytes(dir, topic, p) }));
    if (copies.length === 0) {
      replicasDiffer.push(`${topic}-${p}: no replica found`);
      continue;
    }
    const first = copies[0]!;
    const differ = copies.filter((c) => !c.bytes.equals(first.bytes)).map((c) => c.id);
    if (differ.length > 0) replicasDiffer.push(`${topic}-${p}: broker ${first.id} vs ${differ}`);
    const longest = copies.reduce((a, b) => (b.bytes.length > a.bytes.length ? b : a));
    logs.set(p, records(longest.bytes));
  }
  return { logs, replicasDiffer };
}

function countDuplicates(logs: ReadonlyMap<number, Map<string, string>>): number {
  let duplicates = 0;
  for (const log of logs.values()) {
    const seen = new Set<string>();
    for (const value of log.values()) {
      if (seen.has(value)) duplicates++;
      seen.add(value);
    }
  }
  return duplicates;
}

/** Acknowledged records whose offsets do not grow in the order they were sent. */
function countReordered(acked: readonly Acked[]): number {
  let reordered = 0;
  const last = new Map<number, bigint>();
  for (const a of [...acked].sort((x, y) => x.sentAtMs - y.sentAtMs)) {
    const offset = BigInt(a.offset);
    if ((last.get(a.partition) ?? -1n) >= offset) reordered++;
    last.set(a.partition, offset);
  }
  return reordered;
}

function countCommitsBackwards(outDir: string): number {
  const last = new Map<number, bigint>();
  let backwards = 0;
  for (const c of lines<{ partition: number; committed: string }>(join(outDir, "commits.jsonl"))) {
    const committed = BigInt(c.committed);
    if (committed < (last.get(c.partition) ?? -1n)) backwards++;
    last.set(c.partition, committed);
  }
  return backwards;
}

/** Gaps between acknowledgements of one partition, as [from, to] in ms. */
function gaps(acked: readonly Acked[], startMs: number, endMs: number): [number, number][] {
  const out: [number, number][] = [];
  const byPartition = new Map<number, number[]>();
  for (const a of acked) {
    const times = byPartition.get(a.partition);
    if (times === undefined) byPartition.set(a.partition, [a.atMs]);
    else times.push(a.atMs);
  }
  for (const times of byPartition.values()) {
    const sorted = [startMs, ...times.sort((a, b) => a - b), endMs];
    for (let i = 1; i < sorted.length; i++) out.push([sorted[i - 1]!, sorted[i]!]);
  }
  return out;
}

/**
 * The fault a gap is blamed on: the one in progress (applied, held or recovering) when the
 * partition's last acknowledgement before the gap came, else the first that began during the
 * gap. A gap is counted once, for what caused it, not for every later fault it runs into (a
 * client still waiting out a request timeout after one fault healed is not unavailability of
 * the next one).
 */
function owner(faults: readonly FaultRecord[], [from, to]: [number, number]) {
  const during = faults.find((f) => from >= f.startMs && from <= f.endMs);
  return during ?? faults.find((f) => f.startMs > from && f.startMs <= to);
}

function faultRows(
  faults: readonly FaultRecord[],
  acked: readonly Acked[],
  lostValues: ReadonlySet<string>,
  allGaps: readonly [number, number][],
): string[] {
  const kinds = [...new Set(faults.map((f) => f.kind))];
  return kinds.map((kind) => {
    const windows = faults.filter((f) => f.kind === kind);
    const inWindow = (t: number) => windows.some((w) => t >= w.startMs && t <= w.endMs);
    const during = acked.filter((a) => inWindow(a.atMs));
    const lost = during.filter((a) => lostValues.has(a.value)).length;
    const longest = allGaps
      .filter((gap) => windows.includes(owner(faults, gap)!))
      .reduce((m, [from, to]) => Math.max(m, to - from), 0);
    return `| ${kind} | ${windows.length} | ${during.length} | ${lost} | ${longest} |`;
  });
}

export function checkAll(input: {
  readonly outDir: string;
  readonly dataDirs: ReadonlyMap<number, string>;
  readonly topic: string;
  readonly partitions: number;
  readonly faults: readonly FaultRecord[];
  readonly startMs: number;
  readonly endMs: number;
}): Report {
  const acked = lines<Acked>(join(input.outDir, "acked.jsonl"));
  const reads = lines<{ partition: number; offset: string; value: string }>(
    join(input.outDir, "read.jsonl"),
  );
  const { logs, replicasDiffer } = finalLogs(input.dataDirs, input.topic, input.partitions);
  const lostValues = new Set(
    acked.filter((a) => logs.get(a.partition)?.get(a.offset) !== a.value).map((a) => a.value),
  );
  const dirtyReads = reads.filter((r) => logs.get(r.partition)?.get(r.offset) !== r.value).length;
  const allGaps = gaps(acked, input.startMs, input.endMs);
  return {
    acked: acked.length,
    lost: lostValues.size,
    duplicates: countDuplicates(logs),
    dirtyReads,
    reordered: countReordered(acked),
    commitsBackwards: countCommitsBackwards(input.outDir),
    replicasDiffer,
    rows: faultRows(input.faults, acked, lostValues, allGaps),
    longestUnavailableMs: allGaps.reduce((m, [from, to]) => Math.max(m, to - from), 0),
  };
}

export function printReport(report: Report, faults: number, notes: readonly string[]): void {
  const differ = report.replicasDiffer.length === 0 ? "none" : report.replicasDiffer.join("; ");
  console.log("| fault | count | acked during | lost | longest unavailability ms |");
  console.log("|---|---:|---:|---:|---:|");
  for (const row of report.rows) console.log(row);
  for (const note of notes) console.log(`note: ${note}`);
  console.log(
    `reordered=${report.reordered} commits_backwards=${report.commitsBackwards} ` +
      `replicas_differ=${differ} ` +
      `longest_unavailable_ms=${report.longestUnavailableMs}`,
  );
  console.log(
    `chaos: faults=${faults} acked=${report.acked} lost=${report.lost} ` +
      `duplicates=${report.duplicates} dirty_reads=${report.dirtyReads}`,
  );
}
