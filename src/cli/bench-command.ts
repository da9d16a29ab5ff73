/**
 * `quill bench produce|consume TOPIC`: a load generator with a live line (records/s, MB/s,
 * latency percentiles) and a final summary, so a user can measure a cluster on their own
 * hardware. Produce sends `-n` records of `-s` random bytes through the CLI's producer; consume
 * reads the topic from the beginning up to its end at the start (or `-n` records).
 */
import { Consumer } from "../client/consumer.ts";
import {
  describeTopics,
  EARLIEST_TIMESTAMP,
  LATEST_TIMESTAMP,
  listOffsets,
} from "../client/partition-offsets.ts";
import { Producer } from "../client/producer.ts";
import { BenchStats, type BenchSummary, startProgress } from "./bench-stats.ts";
import type { CommandArgs } from "./command-args.ts";
import { producerRetryOptions, withClient } from "./connection-options.ts";
import { outputFormat, printJson, printTable } from "./output.ts";
import { parseAcks, parseCompression } from "./topic-produce.ts";

function printSummary(args: CommandArgs, s: BenchSummary): void {
  if (outputFormat(args) === "json") {
    printJson(s);
    return;
  }
  const l = s.latencyMs;
  printTable(
    [
      "RECORDS",
      "SECONDS",
      "RECORDS/S",
      "MB/S",
      "AVG-MS",
      "P50-MS",
      "P95-MS",
      "P99-MS",
      "P99.9-MS",
      "MAX-MS",
    ],
    [
      [
        s.records,
        s.seconds,
        s.recordsPerSec,
        s.mbPerSec,
        l.avg,
        l.p50,
        l.p95,
        l.p99,
        l.p999,
        l.max,
      ],
    ],
  );
}

/** Printable random payload: one buffer, every record a view of it at a different start. */
function payload(recordBytes: number): Uint8Array {
  const pool = new Uint8Array(recordBytes + 4096);
  for (let i = 0; i < pool.length; i++) pool[i] = 65 + Math.floor(Math.random() * 26);
  return pool;
}

export async function benchProduce(args: CommandArgs): Promise<number> {
  const [topic] = args.expect(["TOPIC"]);
  const records = args.int("--count", 1_000_000, 1);
  const recordBytes = args.int("--record-size", 100, 0, 10 * 1024 * 1024);
  const acks = parseAcks(args.get("--acks"));
  const compression = parseCompression(args.get("--compression"));
  const batchBytes = args.int("--batch-bytes", 256 * 1024, 1, 64 * 1024 * 1024);
  const maxInFlight = args.int("--in-flight", 5, 1, 1000);
  const rate = args.int("--rate", 0, 0);
  return withClient(args, async (client) => {
    const [info] = await describeTopics(client, [topic]);
    const stats = new BenchStats();
    const producer = new Producer(client, info!, {
      acks,
      compression,
      batchBytes,
      maxInFlight,
      timeoutMs: 30_000,
      ...producerRetryOptions(args, acks),
      // MB/s counts record values, as kafka-producer-perf-test does, not compressed wire bytes.
      onAck: (n, _wireBytes, ms) => stats.record(n, n * recordBytes, ms),
    });
    await producer.init();
    const pool = payload(recordBytes);
    const stop = startProgress(stats, "produced");
    const started = performance.now();
    try {
      for (let i = 0; i < records; i++) {
        const at = i % 4096;
        await producer.send({ value: pool.subarray(at, at + recordBytes) });
        if (rate > 0 && i % 100 === 0) {
          const waitMs = started + (i * 1000) / rate - performance.now();
          if (waitMs > 1) await Bun.sleep(waitMs);
        }
      }
      await producer.flush();
    } finally {
      stop();
    }
    printSummary(args, stats.summary());
    return 0;
  });
}

export async function benchConsume(args: CommandArgs): Promise<number> {
  const [topic] = args.expect(["TOPIC"]);
  const limit = args.int("--count", 0, 0);
  return withClient(args, async (client) => {
    const [info] = await describeTopics(client, [topic]);
    const starts = await listOffsets(client, info!.partitions, EARLIEST_TIMESTAMP);
    const ends = await listOffsets(client, info!.partitions, LATEST_TIMESTAMP);
    const consumer = new Consumer(client, info!.partitions, starts, limit > 0 ? null : ends);
    const stats = new BenchStats();
    const stop = startProgress(stats, "consumed");
    try {
      for await (const chunk of consumer.chunks()) {
        let bytes = 0;
        for (const r of chunk.records) bytes += (r.key?.length ?? 0) + (r.value?.length ?? 0);
        stats.record(chunk.records.length, bytes, chunk.fetchMs);
        if (limit > 0 && stats.records >= limit) break;
      }
    } finally {
      stop();
    }
    printSummary(args, stats.summary());
    return 0;
  });
}
