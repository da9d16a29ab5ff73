// The compaction workload (`bun scripts/bench-vs-kafka.ts --compaction [--compaction-mb N]`):
// the same dirty log (N MB, default 1000, of ~1 KB values over 100,000 keys, 10% of the records
// tombstones, 64 MiB segments or an eighth of a smaller log) is produced into each broker with
// its cleaner held back (min.compaction.lag.ms at its maximum), then released (AlterConfigs sets
// it to 0) and timed to the broker's "cleaned" log line. Meanwhile a probe sends one 1 KiB
// record every 10 ms to another topic (kafkajs, acks=1, one at a time) and records each send's
// latency, then fetches that record back (a raw Fetch v12, maxWaitMs 0, on a connection of its
// own) and records the fetch's latency; the same probe runs for 10 s before the release,
// without cleaning. Reports cleaner MB/s (dirty bytes over the wall time from release to the log
// line), the partition's size before and after, and the probe's produce and fetch p50/p99
// without and during cleaning. Not a test.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { fetchPartition0, KafkaClient } from "../../test/support/kafka-client.ts";
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
  readonly fetchWithout: Percentiles;
  readonly fetchDuring: Percentiles;
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
    const port = Number(bootstrap.split(":").at(-1));
    const without = await probe(kafka, port, () => false, BASELINE_MS);
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
    const during = await probe(kafka, port, () => cleanedMs > 0, CLEAN_TIMEOUT_MS);
    await finished;
    const cleanSeconds = (cleanedMs - releasedMs) / 1000;
    return {
      broker,
      dirtyBytes,
      cleanedBytes: logBytes(partitionDir),
      cleanSeconds,
      cleanerMegabytesPerSecond: dirtyBytes / 1e6 / cleanSeconds,
      probeWithout: without.produce,
      probeDuring: during.produce,
      fetchWithout: without.fetch,
      fetchDuring: during.fetch,
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

/**
 * Sends one 1 KiB record every 10 ms until `done()` or `limitMs`, and fetches each back: the
 * percentiles of the sends' and of the fetches' latencies.
 */
async function probe(
  kafka: Kafka,
  port: number,
  done: () => boolean,
  limitMs: number,
): Promise<{ produce: Percentiles; fetch: Percentiles }> {
  const producer = kafka.producer();
  await producer.connect();
  const fetcher = await KafkaClient.connect(port);
  const sends: number[] = [];
  const fetches: number[] = [];
  const value = Buffer.alloc(1024, "p");
  const started = performance.now();
  const untilMs = started + (done() ? 0 : limitMs);
  let i = 0;
  try {
    while (!done() && performance.now() < untilMs) {
      const sentAt = performance.now();
      const [sent] = await producer.send({
        topic: PROBE_TOPIC,
        acks: 1,
        messages: [{ key: `p${i++}`, value }],
      });
      const fetchAt = performance.now();
      sends.push(fetchAt - sentAt);
      await fetchOne(fetcher, BigInt(sent!.baseOffset!));
      fetches.push(performance.now() - fetchAt);
      const wait = started + i * PROBE_INTERVAL_MS - performance.now();
      if (wait > 0) await Bun.sleep(wait);
    }
  } finally {
    fetcher.close();
    await producer.disconnect();
  }
  return { produce: percentiles(sends), fetch: percentiles(fetches) };
}

/** Fetches the probe partition at `offset` (no wait); throws unless a record came back. */
async function fetchOne(client: KafkaClient, offset: bigint): Promise<void> {
  const fetched = await fetchPartition0(client, PROBE_TOPIC, offset);
  const records = fetched.records;
  if (fetched.errorCode !== 0 || !(records instanceof Uint8Array) || records.length === 0) {
    throw new Error(`probe fetch at ${offset}: error ${fetched.errorCode}, no records`);
  }
}

function percentiles(latencies: number[]): Percentiles {
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
  const pair = (p: Percentiles) => `${p.p50Ms} / ${p.p99Ms}`;
  const rows = results.map(
    (r) =>
      `| ${r.broker} | ${mb(r.dirtyBytes)} | ${mb(r.cleanedBytes)} | ` +
      `${r.cleanSeconds.toFixed(1)} | ${r.cleanerMegabytesPerSecond.toFixed(0)} | ` +
      `${pair(r.probeWithout)} | ${pair(r.probeDuring)} (${r.probeDuring.count} sends) | ` +
      `${pair(r.fetchWithout)} | ${pair(r.fetchDuring)} | ${r.loadAverage} |`,
  );
  return [
    "| broker | dirty MB | after MB | clean s | cleaner MB/s | produce p50/p99 ms without " +
      "cleaning | produce p50/p99 ms during cleaning | fetch p50/p99 ms without | " +
      "fetch p50/p99 ms during | load average |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ...rows,
  ].join("\n");
}
