/**
 * Protocol layer benchmark (not a test): CRC-32C throughput, each compression codec's
 * throughput on JSON log lines, and encode/decode rates of a ProduceRequest v9 and a
 * FetchResponse v12 that each carry one 16 KiB record batch.
 *
 *   bun scripts/bench-protocol.ts
 *
 * Every figure is the median of 5 timed runs of at least 100 ms each, after a warm-up run.
 * The machine is noisy (see docs/bun.md): read them as orders of magnitude.
 */
import { CompressionType, compress, decompress } from "../src/protocol/compression.ts";
import { crc32c, tableCrc32cRange } from "../src/protocol/crc32c.ts";
import { decodeFetchResponse, encodeFetchResponse } from "../src/protocol/generated/fetch.ts";
import { decodeProduceRequest, encodeProduceRequest } from "../src/protocol/generated/produce.ts";
import { Reader } from "../src/protocol/reader.ts";
import { buildRecordBatch, decodeRecords, verifyBatchCrc } from "../src/protocol/record-batch.ts";
import { Writer } from "../src/protocol/writer.ts";

const KiB = 1024;
const MiB = 1024 * KiB;
const RUNS = 5;
const RUN_MIN_MS = 100;

/** Calls `op` repeatedly for at least RUN_MIN_MS; returns the median rate in calls per second. */
function opsPerSecond(op: () => unknown): number {
  op();
  const rates: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    let calls = 0;
    const started = performance.now();
    let elapsedMs = 0;
    while (elapsedMs < RUN_MIN_MS) {
      op();
      calls++;
      elapsedMs = performance.now() - started;
    }
    rates.push((calls * 1000) / elapsedMs);
  }
  return rates.sort((a, b) => a - b)[RUNS >> 1];
}

const mbPerSecond = (bytesPerCall: number, op: () => unknown) =>
  (opsPerSecond(op) * bytesPerCall) / 1e6;

/** JSON log lines like a service's access log: realistic redundancy for the codecs. */
function logLines(sizeBytes: number): Uint8Array {
  const lines: string[] = [];
  let total = 0;
  for (let i = 0; total < sizeBytes; i++) {
    const line =
      `{"ts":${1_700_000_000_000 + i * 7},"level":"${i % 9 ? "info" : "warn"}",` +
      `"msg":"request ${(i * 2654435761) % 100_000} served","path":"/api/v1/items/${i % 97}",` +
      `"user":"u${(i * 7919) % 5000}","ms":${(i * 31) % 500}}\n`;
    lines.push(line);
    total += line.length;
  }
  return new TextEncoder().encode(lines.join("")).subarray(0, sizeBytes);
}

function table(title: string, header: string[], rows: (string | number)[][]): void {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, c) => Math.max(...cells.map((r) => r[c].length)));
  const line = (r: string[]) => `| ${r.map((v, c) => v.padStart(widths[c])).join(" | ")} |`;
  console.log(`\n${title}\n${line(header)}\n|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
  for (const r of cells.slice(1)) console.log(line(r));
}

/** crc32c() as append uses it (native from 1 KiB) beside the pure TS table code alone. */
function benchCrc(): void {
  const rows = [256, 1 * KiB, 16 * KiB, 1 * MiB].map((sizeBytes) => {
    const data = logLines(sizeBytes);
    const used = mbPerSecond(sizeBytes, () => crc32c(data));
    const table = mbPerSecond(sizeBytes, () => tableCrc32cRange(data, 0, data.length));
    const label = sizeBytes < KiB ? `${sizeBytes} B` : `${sizeBytes / KiB} KiB`;
    return [label, used.toFixed(0), table.toFixed(0)];
  });
  table("CRC-32C", ["input", "crc32c() MB/s", "pure TS table MB/s"], rows);
}

function benchCodecs(): void {
  const codecs = [
    ["gzip", CompressionType.Gzip],
    ["snappy", CompressionType.Snappy],
    ["lz4", CompressionType.Lz4],
    ["zstd", CompressionType.Zstd],
  ] as const;
  const rows: (string | number)[][] = [];
  for (const sizeBytes of [16 * KiB, 1 * MiB]) {
    const data = logLines(sizeBytes);
    for (const [name, codec] of codecs) {
      const packed = compress(codec, data);
      rows.push([
        name,
        `${sizeBytes / KiB} KiB`,
        (sizeBytes / packed.length).toFixed(2),
        mbPerSecond(sizeBytes, () => compress(codec, data)).toFixed(0),
        mbPerSecond(sizeBytes, () => decompress(codec, packed, sizeBytes)).toFixed(0),
      ]);
    }
  }
  table(
    "Codecs on JSON log lines (MB/s of uncompressed bytes)",
    ["codec", "input", "ratio", "compress MB/s", "decompress MB/s"],
    rows,
  );
}

/** The smallest uncompressed batch of log-line records of at least 16 KiB. */
function batch16KiB(): Uint8Array {
  const lines = new TextDecoder().decode(logLines(32 * KiB)).split("\n");
  for (let count = 1; count <= lines.length; count++) {
    const batch = buildRecordBatch(
      lines.slice(0, count).map((line) => ({ value: new TextEncoder().encode(line) })),
      { timestampMs: 1_700_000_000_000 },
    );
    if (batch.length >= 16 * KiB) return batch;
  }
  throw new Error("32 KiB of log lines did not fill a 16 KiB batch");
}

function benchMessages(): void {
  const batch = batch16KiB();
  const writer = new Writer();
  const produce = {
    transactionalId: null,
    acks: -1,
    timeoutMs: 30_000,
    topicData: [{ name: "bench-topic", partitionData: [{ index: 0, records: batch }] }],
  };
  const fetch = {
    throttleTimeMs: 0,
    errorCode: 0,
    sessionId: 0,
    responses: [
      {
        topic: "bench-topic",
        partitions: [
          {
            partitionIndex: 0,
            errorCode: 0,
            highWatermark: 1000n,
            lastStableOffset: 1000n,
            logStartOffset: 0n,
            abortedTransactions: [],
            preferredReadReplica: -1,
            records: batch,
          },
        ],
      },
    ],
  };
  const encodeProduce = () => {
    writer.reset();
    encodeProduceRequest(writer, 9, produce);
    return writer.finish();
  };
  const encodeFetch = () => {
    writer.reset();
    encodeFetchResponse(writer, 12, fetch);
    return writer.finish();
  };
  encodeProduce();
  const produceBytes = writer.toBytes().slice();
  encodeFetch();
  const fetchBytes = writer.toBytes().slice();
  const rows = [
    ["ProduceRequest v9", produceBytes.length, "encode", opsPerSecond(encodeProduce)],
    [
      "ProduceRequest v9",
      produceBytes.length,
      "decode",
      opsPerSecond(() => decodeProduceRequest(new Reader(produceBytes), 9)),
    ],
    ["FetchResponse v12", fetchBytes.length, "encode", opsPerSecond(encodeFetch)],
    [
      "FetchResponse v12",
      fetchBytes.length,
      "decode",
      opsPerSecond(() => decodeFetchResponse(new Reader(fetchBytes), 12)),
    ],
    ["16 KiB batch", batch.length, "verifyBatchCrc", opsPerSecond(() => verifyBatchCrc(batch))],
    ["16 KiB batch", batch.length, "decodeRecords", opsPerSecond(() => decodeRecords(batch))],
  ].map(([what, sizeBytes, op, rate]) => [what, sizeBytes, op, Math.round(rate as number)]);
  table(
    "Messages carrying one 16 KiB batch (ops/s)",
    ["message", "bytes", "operation", "ops/s"],
    rows,
  );
}

const cpus = navigator.hardwareConcurrency;
console.log(`Bun ${Bun.version}, ${cpus} CPUs, ${new Date().toISOString()}`);
benchCrc();
benchCodecs();
benchMessages();
