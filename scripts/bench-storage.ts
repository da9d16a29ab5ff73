/**
 * Storage benchmark (not a timed test): append throughput of UnifiedLog for 1 KiB, 16 KiB and
 * 1 MiB batches, with no fsync and with a flush every 16 MiB, next to raw fs.writeSync of the
 * same buffers in the same run; then reading the whole log back through the fetch path
 * (FileRanges read into a reused buffer) next to a raw sequential read of the same bytes.
 *
 * Usage: bun scripts/bench-storage.ts [totalMiB=128] [repeats=3] [dir=$TMPDIR]
 * Each figure is the median of the repeats; raw and Quill runs alternate to share the noise.
 */

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { buildRecordBatch, verifyBatchCrc } from "../src/protocol/record-batch.ts";
import { DEFAULT_LOG_CONFIG } from "../src/storage/log-config.ts";
import { LogManager } from "../src/storage/log-manager.ts";
import type { UnifiedLog } from "../src/storage/unified-log.ts";
import { SILENT_LOGGER } from "../src/util/logger.ts";

const MIB = 1024 * 1024;
const totalBytes = Number(process.argv[2] ?? 128) * MIB;
const repeats = Number(process.argv[3] ?? 3);
const baseDir = fs.mkdtempSync(path.join(process.argv[4] ?? os.tmpdir(), "quill-bench-"));
const FLUSH_EVERY_BYTES = 16 * MIB;
const READ_MAX_BYTES = MIB;
const BATCH_SIZES = [1024, 16 * 1024, MIB];

/** Distinct valid batches of about `sizeBytes` each, reused round-robin. */
function buildBatches(sizeBytes: number): Uint8Array[] {
  const count = Math.max(4, Math.min(256, (64 * MIB) / sizeBytes));
  const recordsPerBatch = sizeBytes >= 16 * 1024 ? 16 : 4;
  const valueBytes = Math.floor(sizeBytes / recordsPerBatch) - 20;
  return Array.from({ length: count }, (_, b) =>
    buildRecordBatch(
      Array.from({ length: recordsPerBatch }, (_, i) => ({
        value: new Uint8Array(valueBytes).fill((b + i) & 0xff),
      })),
    ),
  );
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mbPerSec = (bytes: number, ms: number) => bytes / MIB / (ms / 1000);

function rawAppend(batches: Uint8Array[], count: number, flush: boolean): number {
  const file = path.join(baseDir, "raw.log");
  fs.rmSync(file, { force: true });
  const fd = fs.openSync(file, "a");
  const start = performance.now();
  let sinceFlush = 0;
  for (let i = 0; i < count; i++) {
    const b = batches[i % batches.length];
    fs.writeSync(fd, b);
    sinceFlush += b.length;
    if (flush && sinceFlush >= FLUSH_EVERY_BYTES) {
      fs.fdatasyncSync(fd);
      sinceFlush = 0;
    }
  }
  const ms = performance.now() - start;
  fs.closeSync(fd);
  return ms;
}

function openLog(name: string): { manager: LogManager; log: UnifiedLog } {
  const dir = path.join(baseDir, name);
  fs.rmSync(dir, { recursive: true, force: true });
  const manager = LogManager.open({
    logDirs: [dir],
    defaultConfig: { ...DEFAULT_LOG_CONFIG, maxMessageBytes: 2 * MIB },
    logger: SILENT_LOGGER,
  });
  return { manager, log: manager.getOrCreateLog("bench", 0) };
}

function quillAppend(log: UnifiedLog, batches: Uint8Array[], count: number, flush: boolean) {
  const start = performance.now();
  let sinceFlush = 0;
  for (let i = 0; i < count; i++) {
    const b = batches[i % batches.length];
    log.appendAsLeader(b, 0);
    sinceFlush += b.length;
    if (flush && sinceFlush >= FLUSH_EVERY_BYTES) {
      log.flush();
      sinceFlush = 0;
    }
  }
  return performance.now() - start;
}

/** Reads the whole log through read() and FileRanges into one reused buffer. */
function quillReadAll(log: UnifiedLog, buffer: Uint8Array): { ms: number; bytes: number } {
  const start = performance.now();
  let offset = 0n;
  let bytes = 0;
  while (offset < log.logEndOffset) {
    const { ranges } = log.read(offset, READ_MAX_BYTES, {
      maxOffset: log.logEndOffset,
      minOneMessage: true,
    });
    for (const r of ranges) {
      fs.readSync(r.fd, buffer, 0, r.sizeBytes, r.position);
      bytes += r.sizeBytes;
      r.release();
    }
    // The next fetch offset comes from the last batch read, as a consumer computes it.
    const end = ranges[ranges.length - 1];
    const tail = new DataView(buffer.buffer);
    let at = 0;
    let lastBase = 0n;
    let lastDelta = 0;
    while (at < end.sizeBytes) {
      lastBase = tail.getBigInt64(at);
      lastDelta = tail.getInt32(at + 23);
      at += 12 + tail.getInt32(at + 8);
    }
    offset = lastBase + BigInt(lastDelta) + 1n;
  }
  return { ms: performance.now() - start, bytes };
}

function rawReadAll(file: string, buffer: Uint8Array): number {
  const fd = fs.openSync(file, "r");
  const start = performance.now();
  let position = 0;
  for (;;) {
    const n = fs.readSync(fd, buffer, 0, READ_MAX_BYTES, position);
    if (n === 0) break;
    position += n;
  }
  const ms = performance.now() - start;
  fs.closeSync(fd);
  return ms;
}

/** MB/s of checking every batch's CRC, the validation a broker cannot skip (Kafka does it too). */
function crcMbPerSec(batches: Uint8Array[], count: number): number {
  const start = performance.now();
  for (let i = 0; i < count; i++) verifyBatchCrc(batches[i % batches.length], 0);
  return mbPerSec(count * batches[0].length, performance.now() - start);
}

function benchSize(sizeBytes: number): string[] {
  const batches = buildBatches(sizeBytes);
  const count = Math.floor(totalBytes / batches[0].length);
  const bytes = count * batches[0].length;
  const crcMbs = median(Array.from({ length: repeats }, () => crcMbPerSec(batches, count)));
  const rows: string[] = [];
  for (const flush of [false, true]) {
    const raw: number[] = [];
    const quill: number[] = [];
    for (let r = 0; r < repeats; r++) {
      raw.push(rawAppend(batches, count, flush));
      const { manager, log } = openLog("append");
      quill.push(quillAppend(log, batches, count, flush));
      manager.close();
    }
    const rawMbs = mbPerSec(bytes, median(raw));
    const quillMbs = mbPerSec(bytes, median(quill));
    // Writing and CRC-checking one after the other can go no faster than this.
    const ceilingMbs = 1 / (1 / rawMbs + 1 / crcMbs);
    rows.push(
      `| append ${label(sizeBytes)} ${flush ? "flush/16 MiB" : "no fsync"} | ` +
        `${rawMbs.toFixed(0)} | ${quillMbs.toFixed(0)} | ${(quillMbs / rawMbs).toFixed(2)} | ` +
        `${crcMbs.toFixed(0)} | ${(ceilingMbs / rawMbs).toFixed(2)} |`,
    );
  }
  rows.push(readRow(sizeBytes, batches, count));
  return rows;
}

function readRow(sizeBytes: number, batches: Uint8Array[], count: number): string {
  const { manager, log } = openLog("read");
  quillAppend(log, batches, count, false);
  log.flush();
  const buffer = new Uint8Array(Math.max(READ_MAX_BYTES, batches[0].length) + 64 * 1024);
  const file = path.join(baseDir, "read", "bench-0", "00000000000000000000.log");
  const raw: number[] = [];
  const quill: number[] = [];
  let bytes = 0;
  for (let r = 0; r < repeats; r++) {
    raw.push(rawReadAll(file, buffer));
    const result = quillReadAll(log, buffer);
    quill.push(result.ms);
    bytes = result.bytes;
  }
  manager.close();
  const rawMbs = mbPerSec(bytes, median(raw));
  const quillMbs = mbPerSec(bytes, median(quill));
  return (
    `| read ${label(sizeBytes)} batches, 1 MiB fetches | ${rawMbs.toFixed(0)} | ` +
    `${quillMbs.toFixed(0)} | ${(quillMbs / rawMbs).toFixed(2)} | | |`
  );
}

const label = (sizeBytes: number) =>
  sizeBytes >= MIB ? `${sizeBytes / MIB} MiB` : `${sizeBytes / 1024} KiB`;

console.log(`Quill storage benchmark: ${totalBytes / MIB} MiB per run, median of ${repeats}`);
console.log(`dir ${baseDir}\n`);
console.log("| case | raw MB/s | Quill MB/s | ratio | CRC check MB/s | ratio ceiling (raw+CRC) |");
console.log("|---|---|---|---|---|---|");
try {
  for (const sizeBytes of BATCH_SIZES) for (const row of benchSize(sizeBytes)) console.log(row);
} finally {
  fs.rmSync(baseDir, { recursive: true, force: true });
}
