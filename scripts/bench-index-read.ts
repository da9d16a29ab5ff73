/**
 * Bun.file against node:fs for the two read patterns of log loading (docs/bun.md, File I/O):
 *
 * - index loading: a whole `.index`/`.timeindex` file read at once (fs.readFileSync today);
 * - recovery scans: a segment read front to back in 1 MiB chunks (fs.readSync into one reused
 *   buffer today, segment-batch-reader.ts).
 *
 * Every reader's bytes are compared with the file first: correctness decides before speed.
 *
 *   bun scripts/bench-index-read.ts [segmentMiB=128] [repeats=3]
 *
 * Prints a Markdown table; each figure is the median of the repeats, files in the page cache.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const segmentBytes = Number(process.argv[2] ?? 128) * 1024 * 1024;
const repeats = Number(process.argv[3] ?? 3);
const CHUNK_BYTES = 1024 * 1024;
const INDEX_SIZES = [4 * 1024, 64 * 1024, 1024 * 1024, 10 * 1024 * 1024];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "quill-bench-index-"));

function pattern(sizeBytes: number): Uint8Array {
  const data = new Uint8Array(sizeBytes);
  for (let i = 0; i < sizeBytes; i += 4096) data.fill((i / 4096) & 255, i, i + 4096);
  return data;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

type WholeReader = (file: string) => Promise<Uint8Array> | Uint8Array;
const wholeReaders: Record<string, WholeReader> = {
  "fs.readFileSync": (file) => fs.readFileSync(file),
  "await Bun.file(path).bytes()": (file) => Bun.file(file).bytes(),
};

/** Files per second for whole-file reads of `sizeBytes`, median of the repeats. */
async function wholeFileRate(read: WholeReader, file: string, expected: Uint8Array) {
  if (!sameBytes(await read(file), expected)) throw new Error(`wrong bytes from ${file}`);
  const count = Math.max(20, Math.floor((256 * 1024 * 1024) / expected.length / 4));
  const rates: number[] = [];
  for (let r = 0; r < repeats; r++) {
    const started = performance.now();
    for (let i = 0; i < count; i++) await read(file);
    rates.push(count / ((performance.now() - started) / 1000));
  }
  return median(rates);
}

type ScanReader = (file: string, sizeBytes: number, visit: (chunk: Uint8Array) => void) => unknown;
const scanReaders: Record<string, ScanReader> = {
  "fs.readSync, reused 1 MiB buffer": (file, sizeBytes, visit) => {
    const fd = fs.openSync(file, "r");
    const buffer = new Uint8Array(CHUNK_BYTES);
    try {
      for (let at = 0; at < sizeBytes; ) {
        const n = fs.readSync(fd, buffer, 0, CHUNK_BYTES, at);
        visit(buffer.subarray(0, n));
        at += n;
      }
    } finally {
      fs.closeSync(fd);
    }
  },
  "await Bun.file(path).slice(a, b).bytes()": async (file, sizeBytes, visit) => {
    const whole = Bun.file(file);
    for (let at = 0; at < sizeBytes; at += CHUNK_BYTES) {
      visit(await whole.slice(at, Math.min(at + CHUNK_BYTES, sizeBytes)).bytes());
    }
  },
};

/** MB/s of a chunked scan of the whole segment, median of the repeats. */
async function scanRate(read: ScanReader, file: string, expected: Uint8Array) {
  const copy = new Uint8Array(expected.length);
  let at = 0;
  await read(file, expected.length, (chunk) => {
    copy.set(chunk, at);
    at += chunk.length;
  });
  if (!sameBytes(copy, expected)) throw new Error("scan returned wrong bytes");
  const rates: number[] = [];
  for (let r = 0; r < repeats; r++) {
    let sum = 0;
    const started = performance.now();
    await read(file, expected.length, (chunk) => {
      sum += chunk[0]!;
    });
    rates.push(expected.length / 1e6 / ((performance.now() - started) / 1000) + sum * 0);
  }
  return median(rates);
}

async function main(): Promise<void> {
  console.log(
    `load average ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")}`,
  );
  console.log("\n| index file | method | files/s | MB/s |\n|---|---|---|---|");
  for (const sizeBytes of INDEX_SIZES) {
    const file = path.join(dir, `${sizeBytes}.index`);
    const data = pattern(sizeBytes);
    fs.writeFileSync(file, data);
    for (const [name, read] of Object.entries(wholeReaders)) {
      const rate = await wholeFileRate(read, file, data);
      const mbs = ((rate * sizeBytes) / 1e6).toFixed(0);
      console.log(`| ${sizeBytes / 1024} KiB | ${name} | ${rate.toFixed(0)} | ${mbs} |`);
    }
  }
  const segment = path.join(dir, "00000000000000000000.log");
  const data = pattern(segmentBytes);
  fs.writeFileSync(segment, data);
  console.log(`\n| recovery scan of ${segmentBytes >> 20} MiB | MB/s |\n|---|---|`);
  for (const [name, read] of Object.entries(scanReaders)) {
    console.log(`| ${name} | ${(await scanRate(read, segment, data)).toFixed(0)} |`);
  }
  console.log(
    `\nload average ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")}`,
  );
}

try {
  await main();
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
