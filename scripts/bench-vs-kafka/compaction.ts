// The compaction workload (`bun scripts/bench-vs-kafka.ts --compaction [--compaction-mb N]`):
// the same dirty log (N MB, default 1000, of ~1 KB values over 100,000 keys, 10% of the records
// tombstones, 64 MiB segments or an eighth of a smaller log) is produced into each broker with
// its cleaner held back (min.compaction.lag.ms at its maximum), then released (AlterConfigs sets
// it to 0) and timed to the broker's "cleaned" log line. Meanwhile a probe sends one 1 KiB
// record every 10 ms to another topic (kafkajs, acks=1, one at a time) and records each send's
// latency; the same probe runs for 10 s before the release, without cleaning. Reports cleaner
// MB/s (dirty bytes over the wall time from release to the log line), the partition's size
// before and after, and the probe's p50/p99 without and during cleaning. Not a test.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { loadAverage } from "../bench-common.ts";

export const COMPACTION_TOPIC = "compaction-dirty";
const PROBE_TOPIC = "compaction-probe";
const KEYS = 100_000;
const VALUE_BYTES = 1000;
/** 64 MiB segments, smaller for a small run so most of the log is sealed (cleanable). */
const MAX_SEGMENT_BYTES = 64 * 1024 * 1024;
const segmentBytesFor = (megabytes: number): number =>
  Math.min(MAX_SEGMENT_BYTES, Math.floor((megabytes * 1e6) / 8));
const BATCH_RECORDS = 500;
const IN_FLIGHT = 4;
const PROBE_INTERVAL_MS = 10;
const BASELINE_MS = 10_000;
const CLEAN_TIMEOUT_MS = 900_000;
const LONG_MAX = "9223372036854775807";

/** What each broker gets on top of the matched settings: a cleaner that checks often. */
export const COMPACTION_BROKER_SETTINGS: Readonly<Record<string, string>> = {
  "log.cleaner.backoff.ms": "200",
};

export interface CompactionResult {
  readonly broker: string;
  readonly dirtyBytes: number;
  readonly cleanedBytes: number;
  readonly cleanSeconds: number;
  readonly cleanerMegabytesPerSecond: number;
  readonly probeWithout: Percentiles;
  readonly probeDuring: Percentiles;
  readonly loadAverage: string;
}

interface Percentiles {
  readonly count: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** Where each broker says it finished cleaning the topic. */
export interface CleanerLog {
  readonly path: string;
  readonly line: RegExp;
}

export async function runCompaction(
  broker: string,
  bootstrap: string,
  dataDir: string,
  cleanerLog: CleanerLog,
  megabytes: number,
): Promise<CompactionResult> {
  const kafka = new Kafka({
    clientId: "bench-compaction",
    brokers: [bootstrap],
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  const segmentBytes = segmentBytesFor(megabytes);
  await admin.connect();
  try {
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        {
          topic: COMPACTION_TOPIC,
          numPartitions: 1,
          configEntries: topicConfigs(LONG_MAX, segmentBytes),
        },
        { topic: PROBE_TOPIC, numPartitions: 1 },
      ],
    });
    await produceDirtyLog(kafka, megabytes * 1e6);
    const partitionDir = join(dataDir, `${COMPACTION_TOPIC}-0`);
    await settle(partitionDir);
    const dirtyBytes = logBytes(partitionDir);
    const probeWithout = await probe(kafka, () => false, BASELINE_MS);
    const releasedMs = performance.now();
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: 2,
          name: COMPACTION_TOPIC,
          configEntries: topicConfigs("0", segmentBytes),
        },
      ],
    });
    let cleanedMs = 0;
    const finished = waitForLine(cleanerLog).then(() => {
      cleanedMs = performance.now();
    });
    const probeDuring = await probe(kafka, () => cleanedMs > 0, CLEAN_TIMEOUT_MS);
    await finished;
    const cleanSeconds = (cleanedMs - releasedMs) / 1000;
    return {
      broker,
      dirtyBytes,
      cleanedBytes: logBytes(partitionDir),
      cleanSeconds,
      cleanerMegabytesPerSecond: dirtyBytes / 1e6 / cleanSeconds,
      probeWithout,
      probeDuring,
      loadAverage: loadAverage(),
    };
  } finally {
    await admin.disconnect();
  }
}

function topicConfigs(
  minCompactionLagMs: string,
  segmentBytes: number,
): { name: string; value: string }[] {
  return [
    { name: "cleanup.policy", value: "compact" },
    { name: "segment.bytes", value: String(segmentBytes) },
    { name: "min.compaction.lag.ms", value: minCompactionLagMs },
  ];
}

/** Deterministic records: key i of 100,000 from a xorshift sequence, every tenth a tombstone. */
async function produceDirtyLog(kafka: Kafka, totalBytes: number): Promise<void> {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  let state = 0x2545f491;
  const next = (): number => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return state >>> 0;
  };
  const value = Buffer.alloc(VALUE_BYTES, "v");
  let produced = 0;
  const batch = () =>
    Array.from({ length: BATCH_RECORDS }, () => {
      const r = next();
      const tombstone = r % 10 === 0;
      produced += tombstone ? 20 : VALUE_BYTES + 20;
      return { key: `key-${(r >>> 4) % KEYS}`, value: tombstone ? null : value };
    });
  const inFlight = new Set<Promise<unknown>>();
  while (produced < totalBytes) {
    const send = producer.send({ topic: COMPACTION_TOPIC, acks: 1, messages: batch() });
    inFlight.add(send);
    void send.finally(() => inFlight.delete(send));
    if (inFlight.size >= IN_FLIGHT) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  await producer.disconnect();
}

/** Sends one 1 KiB record every 10 ms until `done()` or `limitMs`; send latencies' percentiles. */
async function probe(kafka: Kafka, done: () => boolean, limitMs: number): Promise<Percentiles> {
  const producer = kafka.producer();
  await producer.connect();
  const latencies: number[] = [];
  const value = Buffer.alloc(1024, "p");
  const started = performance.now();
  const untilMs = started + (done() ? 0 : limitMs);
  let i = 0;
  while (!done() && performance.now() < untilMs) {
    const sentAt = performance.now();
    await producer.send({ topic: PROBE_TOPIC, acks: 1, messages: [{ key: `p${i++}`, value }] });
    latencies.push(performance.now() - sentAt);
    const wait = started + i * PROBE_INTERVAL_MS - performance.now();
    if (wait > 0) await Bun.sleep(wait);
  }
  await producer.disconnect();
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { count: latencies.length, p50Ms: round(at(0.5)), p99Ms: round(at(0.99)) };
}

const round = (ms: number): number => Math.round(ms * 10) / 10;

/** Waits until the segment files stop growing (the broker's buffers reached the files). */
async function settle(dir: string): Promise<void> {
  let last = -1;
  for (;;) {
    const now = logBytes(dir);
    if (now === last) return;
    last = now;
    await Bun.sleep(500);
  }
}

function logBytes(dir: string): number {
  return readdirSync(dir)
    .filter((n) => n.endsWith(".log"))
    .reduce((sum, n) => sum + statSync(join(dir, n)).size, 0);
}

async function waitForLine(log: CleanerLog): Promise<void> {
  const deadline = performance.now() + CLEAN_TIMEOUT_MS;
  while (performance.now() < deadline) {
    let text = "";
    try {
      text = readFileSync(log.path, "utf8");
    } catch {
      // Not written yet.
    }
    if (log.line.test(text)) return;
    await Bun.sleep(100);
  }
  throw new Error(`no ${log.line} in ${log.path} within ${CLEAN_TIMEOUT_MS} ms`);
}

export function compactionTable(results: readonly CompactionResult[]): string {
  const mb = (n: number) => (n / 1e6).toFixed(0);
  const rows = results.map(
    (r) =>
      `| ${r.broker} | ${mb(r.dirtyBytes)} | ${mb(r.cleanedBytes)} | ` +
      `${r.cleanSeconds.toFixed(1)} | ${r.cleanerMegabytesPerSecond.toFixed(0)} | ` +
      `${r.probeWithout.p50Ms} / ${r.probeWithout.p99Ms} | ${r.probeDuring.p50Ms} / ` +
      `${r.probeDuring.p99Ms} (${r.probeDuring.count} sends) | ${r.loadAverage} |`,
  );
  return [
    "| broker | dirty MB | after MB | clean s | cleaner MB/s | probe p50/p99 ms without " +
      "cleaning | probe p50/p99 ms during cleaning | load average |",
    "|---|---:|---:|---:|---:|---:|---:|---|",
    ...rows,
  ].join("\n");
}
