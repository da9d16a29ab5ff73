/**
 * Is a Worker worth it for the cleaner's CPU work? Measures, for one cleaner chunk (512 KiB of
 * the bench-cleaner-lag log: 500-record batches, 1 KB values, 10% tombstones):
 *
 * - what the event loop spends on it today: the offset-map build of the chunk and its filtering
 *   (cleaner-batch-filter.ts), in-thread;
 * - what handing it to a Worker and back costs: a postMessage round trip of the 512 KiB buffer,
 *   transferred and copied, as wall time and as time spent on the posting thread.
 *
 *   bun scripts/bench-cleaner-worker.ts [iterations=400]
 *
 * Not a test; figures go in docs/log-compaction.md with the load average.
 */
import { buildRecordBatch } from "../src/protocol/record-batch.ts";
import { RecordCursor } from "../src/protocol/record-cursor.ts";
import { CleanedTransactionMetadata } from "../src/storage/cleaned-transaction-metadata.ts";
import { filterBatch } from "../src/storage/cleaner-batch-filter.ts";
import { OffsetMap } from "../src/storage/offset-map.ts";
import { loadAverage } from "./bench-common.ts";

const CHUNK_BYTES = 512 * 1024;
const BATCH_RECORDS = 500;
const KEYS = 100_000;
const iterations = Number(process.argv[2] ?? 400);

function chunkOfBatches(): Uint8Array {
  const encoder = new TextEncoder();
  const value = new Uint8Array(1000).fill(120);
  const records = Array.from({ length: BATCH_RECORDS }, (_, i) => ({
    key: encoder.encode(`key-${(i * 7919) % KEYS}`),
    value: i % 10 === 0 ? null : value,
  }));
  const batch = buildRecordBatch(records, {});
  // Offsets: the batch is written at base 0 (the map is keyed by offset, not by position).
  const out = new Uint8Array(Math.max(CHUNK_BYTES, batch.length));
  out.set(batch);
  return out.subarray(0, batch.length);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function inThread(batch: Uint8Array): { mapMs: number; filterMs: number } {
  const map = new OffsetMap(16 << 20, 0.9);
  const mapMs: number[] = [];
  const filterMs: number[] = [];
  const body = batch.subarray(61);
  for (let i = 0; i < iterations; i++) {
    map.clear(BATCH_RECORDS * 4);
    let t = performance.now();
    const cursor = new RecordCursor(body, 0, body.length, BATCH_RECORDS);
    while (cursor.next()) map.put(body, cursor.keyStart, cursor.keyLength, cursor.offsetDelta);
    map.latestOffset = BATCH_RECORDS - 1;
    mapMs.push(performance.now() - t);
    t = performance.now();
    filterBatch(batch, {
      map,
      nowMs: Date.now(),
      deleteRetentionMs: 86_400_000,
      lastOffsetOfProducer: new Map(),
      markerOnlyProducers: new Map(),
      transactions: new CleanedTransactionMetadata(),
    });
    filterMs.push(performance.now() - t);
  }
  return { mapMs: median(mapMs), filterMs: median(filterMs) };
}

async function roundTrips(transfer: boolean): Promise<{ wallMs: number; postMs: number }> {
  const worker = new Worker(new URL("./bench-cleaner-worker-echo.ts", import.meta.url).href);
  const wallMs: number[] = [];
  const postMs: number[] = [];
  let buffer = new ArrayBuffer(CHUNK_BYTES);
  for (let i = 0; i < iterations; i++) {
    const started = performance.now();
    const back = new Promise<ArrayBuffer>((resolve) => {
      worker.onmessage = (e: MessageEvent<{ buffer: ArrayBuffer }>) => resolve(e.data.buffer);
    });
    worker.postMessage({ buffer, transfer }, transfer ? [buffer] : []);
    postMs.push(performance.now() - started);
    buffer = await back;
    wallMs.push(performance.now() - started);
  }
  worker.terminate();
  return { wallMs: median(wallMs), postMs: median(postMs) };
}

const batch = chunkOfBatches();
const cpu = inThread(batch);
const moved = await roundTrips(true);
const copied = await roundTrips(false);
const f = (ms: number) => `${(ms * 1000).toFixed(0)} µs`;
const kib = (batch.length / 1024).toFixed(0);
console.log(`one ${kib} KiB chunk (${BATCH_RECORDS} records), medians of ${iterations}:`);
console.log(`  in-thread: offset-map build ${f(cpu.mapMs)}, filter ${f(cpu.filterMs)}`);
for (const [name, r] of [
  ["transferred", moved],
  ["copied", copied],
] as const) {
  console.log(
    `  Worker round trip, ${name}: wall ${f(r.wallMs)}, on the posting thread ${f(r.postMs)}`,
  );
}
console.log(`load average ${loadAverage()}`);
