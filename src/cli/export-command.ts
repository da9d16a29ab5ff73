/**
 * `quill export TOPIC… --to DIR --format jsonl|parquet`: copies each partition's records from
 * `--from` (default the beginning) up to the high watermark at the start (the last stable
 * offset with `--isolation-level read_committed`, which also leaves out aborted transactions;
 * or `--to-time`) into
 * files of at most `--file-records` records / `--file-mb` MB, each within one hour or day of
 * record time with `--file-window` (export-window.ts), `--parallel` partitions at a time.
 *
 * With `--group`, each file is written, fsynced and listed in the manifest before the group's
 * offset for its partition is committed, so a killed export run again with the same group
 * continues after the last complete file: no gap, no duplicate. docs/cli.md has the details.
 */
import { mkdirSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { ClusterClient } from "../client/cluster-client.ts";
import { Consumer, DEFAULT_CONSUMER_OPTIONS, type IsolationLevel } from "../client/consumer.ts";
import type { ConsumedRecord } from "../client/fetched-records.ts";
import { commitOffsets, fetchCommitted } from "../client/group-offsets.ts";
import {
  describeTopics,
  LATEST_TIMESTAMP,
  listOffsets,
  type OffsetMap,
  type PartitionInfo,
  partitionKey,
} from "../client/partition-offsets.ts";
import { mapLimit } from "../util/map-limit.ts";
import { UsageError } from "./args.ts";
import type { CommandArgs } from "./command-args.ts";
import { withClient } from "./connection-options.ts";
import { writeDurably } from "./durable-file.ts";
import { ExportManifest } from "./export-manifest.ts";
import { ExportProgress, type PartitionProgress } from "./export-progress.ts";
import {
  type FileWindow,
  parseFileWindow,
  windowDir,
  windowEndMs,
  windowStartMs as windowStartOf,
} from "./export-window.ts";
import {
  type ExportFormat,
  newWriter,
  type RecordFileWriter,
  type ValueEncoding,
} from "./export-writers.ts";
import { isolationLevel } from "./isolation-level.ts";
import { printJson } from "./output.ts";
import { parseStart, parseTime, resolveStarts, type StartSpec } from "./start-offsets.ts";

interface ExportOptions {
  readonly topics: readonly string[];
  readonly dir: string;
  readonly format: ExportFormat;
  readonly from: StartSpec;
  readonly toTimeMs: bigint | null;
  readonly group: string | null;
  readonly parallel: number;
  readonly fileRecords: number;
  readonly fileBytes: number;
  readonly keyAs: ValueEncoding;
  readonly valueAs: ValueEncoding;
  readonly progressMs: number;
  readonly isolationLevel: IsolationLevel;
  readonly fileWindow: FileWindow;
}

function encoding(args: CommandArgs, flag: string, allowJson: boolean): ValueEncoding {
  const raw = args.get(flag) ?? "text";
  if (raw === "text" || raw === "bytes" || (raw === "json" && allowJson)) return raw;
  throw new UsageError(`${flag} expects text, bytes${allowJson ? " or json" : ""}, got "${raw}"`);
}

function exportOptions(args: CommandArgs): ExportOptions {
  if (args.positionals.length === 0) throw new UsageError("expected TOPIC...");
  const dir = args.get("--to");
  if (dir === undefined) throw new UsageError("export needs --to DIR");
  const format = args.get("--format") ?? "jsonl";
  if (format !== "jsonl" && format !== "parquet") {
    throw new UsageError(`--format expects jsonl or parquet, got "${format}"`);
  }
  const toTime = args.get("--to-time");
  return {
    topics: args.positionals,
    dir,
    format,
    from: parseStart(args.get("--from") ?? "beginning", "--from"),
    toTimeMs: toTime === undefined ? null : parseTime(toTime, "--to-time"),
    group: args.get("--group") ?? null,
    parallel: args.int("--parallel", 4, 1, 1024),
    fileRecords: args.int("--file-records", 500_000, 1, 100_000_000),
    fileBytes: args.int("--file-mb", 64, 1, 4096) * 1024 * 1024,
    keyAs: encoding(args, "--key-as", false),
    valueAs: encoding(args, "--value-as", true),
    progressMs: args.int("--progress-ms", 10_000, 100, 3_600_000),
    isolationLevel: isolationLevel(args),
    fileWindow: parseFileWindow(args.get("--file-window")),
  };
}

interface PartitionTask {
  readonly info: PartitionInfo;
  readonly start: bigint;
  readonly end: bigint;
  readonly progress: PartitionProgress;
}

/** Start of each partition: the group's offset or --from, moved past files already listed. */
async function startOffsets(
  client: ClusterClient,
  o: ExportOptions,
  partitions: readonly PartitionInfo[],
  manifest: ExportManifest,
): Promise<OffsetMap> {
  const starts = await resolveStarts(client, partitions, o.from);
  if (o.group !== null) {
    const topics = o.topics.map((name) => ({
      name,
      partitions: partitions.filter((p) => p.topic === name).map((p) => p.partition),
    }));
    for (const [key, offset] of await fetchCommitted(client, o.group, topics))
      starts.set(key, offset);
  }
  for (const p of partitions) {
    const listed = manifest.nextOffset(p.topic, p.partition);
    const key = partitionKey(p.topic, p.partition);
    if (listed !== null && BigInt(listed) > starts.get(key)!) starts.set(key, BigInt(listed));
  }
  return starts;
}

async function endOffsets(
  client: ClusterClient,
  o: ExportOptions,
  partitions: readonly PartitionInfo[],
): Promise<OffsetMap> {
  const ends = await listOffsets(client, partitions, LATEST_TIMESTAMP, o.isolationLevel);
  if (o.toTimeMs === null) return ends;
  const atTime = await listOffsets(client, partitions, o.toTimeMs);
  for (const [key, offset] of atTime) if (offset < ends.get(key)!) ends.set(key, offset);
  return ends;
}

export async function exportTopics(args: CommandArgs): Promise<number> {
  const o = exportOptions(args);
  mkdirSync(o.dir, { recursive: true });
  const manifest = await ExportManifest.open(o.dir, o.format, o.fileWindow);
  for (const topic of o.topics) {
    mkdirSync(join(o.dir, topic), { recursive: true });
    manifest.removeUnlisted(topic);
  }
  return withClient(args, async (client) => {
    const partitions = (await describeTopics(client, o.topics)).flatMap((t) => t.partitions);
    const starts = await startOffsets(client, o, partitions, manifest);
    const ends = await endOffsets(client, o, partitions);
    const progress = new ExportProgress(process.stderr.isTTY === true, o.progressMs);
    const tasks = partitions.map((info): PartitionTask => {
      const key = partitionKey(info.topic, info.partition);
      const start = starts.get(key)!;
      const end = ends.get(key)! > start ? ends.get(key)! : start;
      return { info, start, end, progress: progress.track(key, Number(end - start)) };
    });
    progress.start();
    let files: number[];
    try {
      files = await mapLimit(tasks, o.parallel, (t) => exportPartition(client, o, manifest, t));
    } finally {
      const totals = progress.finish();
      process.stderr.write(summaryLine(totals));
    }
    await manifest.save();
    printJson({ files: files.reduce((a, b) => a + b, 0), manifest: join(o.dir, "manifest.json") });
    return 0;
  });
}

function summaryLine(t: { done: number; bytes: number; seconds: number }): string {
  const mb = t.bytes / 1024 / 1024;
  return (
    `exported ${t.done} records, ${mb.toFixed(1)} MB in ${t.seconds.toFixed(1)} s ` +
    `(${Math.round(t.done / Math.max(t.seconds, 1e-3))} records/s, ` +
    `${(mb / Math.max(t.seconds, 1e-3)).toFixed(1)} MB/s)\n`
  );
}

/** The file being filled for one partition: its records, offsets, times and window. */
class OpenFile {
  readonly writer: RecordFileWriter;
  firstOffset = -1n;
  lastOffset = -1n;
  minTs = Number.MAX_SAFE_INTEGER;
  maxTs = 0;

  constructor(
    o: ExportOptions,
    readonly windowStartMs: number,
  ) {
    this.writer = newWriter(o.format, o.keyAs, o.valueAs);
  }

  add(r: ConsumedRecord): void {
    if (this.writer.records === 0) this.firstOffset = r.offset;
    this.writer.add(r);
    this.lastOffset = r.offset;
    if (r.timestampMs < this.minTs) this.minTs = r.timestampMs;
    if (r.timestampMs > this.maxTs) this.maxTs = r.timestampMs;
  }
}

/** Exports one partition's range; returns the number of files written. */
async function exportPartition(
  client: ClusterClient,
  o: ExportOptions,
  manifest: ExportManifest,
  task: PartitionTask,
): Promise<number> {
  if (task.start >= task.end) return 0;
  const { topic, partition } = task.info;
  const key = partitionKey(topic, partition);
  const consumer = new Consumer(
    client,
    [task.info],
    new Map([[key, task.start]]),
    new Map([[key, task.end]]),
    { ...DEFAULT_CONSUMER_OPTIONS, isolationLevel: o.isolationLevel },
  );
  let file: OpenFile | null = null;
  let files = 0;
  const close = async (next: bigint) => {
    await completeFile(client, o, manifest, { file: file!, topic, partition, next });
    file = null;
    files++;
  };
  for await (const chunk of consumer.chunks()) {
    for (const r of chunk.records) {
      const windowStartMs = windowStartOf(o.fileWindow, r.timestampMs);
      if (file !== null && file.windowStartMs !== windowStartMs) await close(r.offset);
      file ??= new OpenFile(o, windowStartMs);
      file.add(r);
      task.progress.bytes += (r.key?.length ?? 0) + (r.value?.length ?? 0);
      if (file.writer.records >= o.fileRecords || file.writer.bytes >= o.fileBytes) {
        await close(r.offset + 1n);
      }
    }
    task.progress.done = Number(chunk.nextOffset - task.start);
    if (chunk.done && file !== null) await close(chunk.nextOffset);
  }
  return files;
}

interface CompletedFile {
  readonly file: OpenFile;
  readonly topic: string;
  readonly partition: number;
  /** Where the partition resumes: the group's committed offset after this file. */
  readonly next: bigint;
}

/** Writes, fsyncs and lists the file, then (only then) commits the group's offset. */
async function completeFile(
  client: ClusterClient,
  o: ExportOptions,
  manifest: ExportManifest,
  f: CompletedFile,
): Promise<void> {
  const { writer, firstOffset, lastOffset, windowStartMs } = f.file;
  const name = `${f.topic}-${f.partition}-${firstOffset}-${lastOffset}.${o.format}`;
  const relative = join(f.topic, windowDir(o.fileWindow, windowStartMs), name);
  const bytes = writer.finish();
  await mkdir(dirname(join(o.dir, relative)), { recursive: true });
  await writeDurably(join(o.dir, relative), bytes);
  await manifest.add({
    topic: f.topic,
    partition: f.partition,
    file: relative,
    firstOffset: Number(firstOffset),
    lastOffset: Number(lastOffset),
    records: writer.records,
    bytes: bytes.byteLength,
    minTimestamp: f.file.minTs,
    maxTimestamp: f.file.maxTs,
    ...(o.fileWindow === "none"
      ? {}
      : { windowStart: windowStartMs, windowEnd: windowEndMs(o.fileWindow, windowStartMs) }),
  });
  if (o.group !== null) {
    await commitOffsets(client, o.group, new Map([[partitionKey(f.topic, f.partition), f.next]]));
  }
}
