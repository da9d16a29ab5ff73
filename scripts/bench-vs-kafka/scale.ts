// The scale workloads of bench-vs-kafka.ts, each on a broker of its own started fresh:
//
// - partitions-1k / partitions-10k: 100 topics holding 1,000 or 10,000 partitions. Time to
//   create them (until every partition has a leader), RSS, Metadata latency for all topics,
//   produce throughput with one librdkafka producer writing to every partition, group consume
//   throughput with one librdkafka consumer and then with franz-go consumers (in passes, a new
//   group each) subscribed to all 100 topics, and start-up time with that many logs after a
//   clean stop and after kill -9 (to the first successful produce).
// - connections-5k: 5,000 open connections (each sent ApiVersions once and then idles) while
//   100 more clients produce as fast as they can, one request in flight each: RSS, the active
//   clients' records/s and their request latency p99.
// - long-run: the fixed-rate end-to-end latency program (rdkafka-latency.c) for minutes, with an
//   ApiVersions probe every 100 ms on a connection of its own: p99, p99.9 and max end-to-end, and
//   the probe's p99.9 and max (how long the broker could not answer at all: event-loop stalls
//   on Quill, safepoint pauses on Kafka).
import { readFileSync } from "node:fs";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { KafkaClient } from "../../test/support/kafka-client.ts";
import { runCommand } from "../bench-common.ts";
import { createTopicsAndWait, type TopicSpec } from "./broker-probe.ts";
import type { BrokerProcess } from "./brokers.ts";

const RUN_TIMEOUT_MS = 1_200_000;
const TOPICS = 100;
const RECORD_BYTES = 100;
const METADATA_SAMPLES = 7;
const PRODUCE = 0;
const METADATA = 3;
const API_VERSIONS = 18;
const PROBE_INTERVAL_MS = 100;
const LATENCY_RATE_PER_SECOND = 2_000;
/** From this many partitions on, librdkafka's group consume measures the client. */
const RDKAFKA_CONSUME_PARTITIONS_MAX = 10_000;
/** The franz-go group consume runs at least this many passes, so it has a spread. */
export const MIN_CONSUME_PASSES = 3;
const MAX_CONSUME_PASSES = 30;

export interface ScaleSizes {
  /** Records produced to, then consumed from, the partition workloads' topics. */
  readonly partitionRecords: number;
  /** franz-go group consumes repeat until they have run this long (and MIN_CONSUME_PASSES). */
  readonly consumeSeconds: number;
  readonly idleConnections: number;
  readonly activeClients: number;
  readonly activeSeconds: number;
  readonly longRunSeconds: number;
}

export const FULL_SIZES: ScaleSizes = {
  partitionRecords: 2_000_000,
  consumeSeconds: 10,
  idleConnections: 5_000,
  activeClients: 100,
  activeSeconds: 30,
  longRunSeconds: 600,
};
export const QUICK_SIZES: ScaleSizes = {
  partitionRecords: 500_000,
  consumeSeconds: 3,
  idleConnections: 5_000,
  activeClients: 100,
  activeSeconds: 10,
  longRunSeconds: 60,
};

/** Named figures of one scale workload on one broker; throughput figures end in PerSecond. */
export type ScaleFigures = Record<string, number>;

export interface ScaleTools {
  readonly rdkafkaScale: string;
  readonly rdkafkaLatency: string;
  /** franz-scale (franz-go), or null without Go (the harness then names it missing). */
  readonly franzScale: string | null;
}

/** Starts (or restarts, same data dir) the broker under test; returns it with its start-up. */
export type StartBroker = (fresh: boolean) => Promise<BrokerProcess>;

export interface ScaleWorkload {
  readonly id: string;
  readonly title: string;
  /** Figures whose Quill/Kafka ratio counts toward `scale=` (higher is better). */
  readonly throughputKeys: readonly string[];
  run(tools: ScaleTools, start: StartBroker, sizes: ScaleSizes): Promise<ScaleFigures>;
}

/**
 * What counts toward `scale=`: produce and franz-go's group consume, and librdkafka's group
 * consume at 1,000 partitions but not at 10,000, where its own start-up (O(partitions^2) client
 * CPU, seconds with either broker) decides its rate (docs/scaling.md): that ratio measures the
 * client, not the broker.
 */
export function partitionsThroughputKeys(partitions: number): readonly string[] {
  return partitions >= RDKAFKA_CONSUME_PARTITIONS_MAX
    ? ["producePerSecond", "franzConsumePerSecond"]
    : ["producePerSecond", "consumePerSecond", "franzConsumePerSecond"];
}

function partitionsWorkload(partitions: number): ScaleWorkload {
  const id = `partitions-${partitions / 1000}k`;
  return {
    id,
    title: `${partitions.toLocaleString("en-US")} partitions in ${TOPICS} topics`,
    throughputKeys: partitionsThroughputKeys(partitions),
    async run(tools, start, sizes) {
      let broker = await start(true);
      const prefix = `${id}-t`;
      const topics: TopicSpec[] = Array.from({ length: TOPICS }, (_, i) => ({
        name: `${prefix}${i}`,
        partitions: partitions / TOPICS,
      }));
      const figures: ScaleFigures = {};
      try {
        const createStarted = performance.now();
        await createTopicsAndWait(broker.port, topics, performance.now() + 600_000);
        figures.createMs = performance.now() - createStarted;
        figures.metadataMs = await metadataLatencyMs(broker.port);
        Object.assign(figures, await produceAndConsume(tools, broker, prefix, partitions, sizes));
        figures.rssMb = rssBytes(broker.pid) / 1e6;
        const stopStarted = performance.now();
        await broker.stop();
        figures.cleanStopMs = performance.now() - stopStarted;
        broker = await start(false);
        figures.cleanStartMs = broker.startupMs;
        await broker.kill();
        broker = await start(false);
        figures.crashStartMs = broker.startupMs;
        figures.rssAfterCrashStartMb = rssBytes(broker.pid) / 1e6;
      } finally {
        await broker.stop();
      }
      return figures;
    },
  };
}

async function produceAndConsume(
  tools: ScaleTools,
  broker: BrokerProcess,
  prefix: string,
  partitions: number,
  sizes: ScaleSizes,
): Promise<ScaleFigures> {
  const records = sizes.partitionRecords;
  const produced = JSON.parse(
    await runCommand(
      [
        tools.rdkafkaScale,
        "produce",
        broker.bootstrap,
        prefix,
        String(TOPICS),
        String(partitions / TOPICS),
        String(records),
        String(RECORD_BYTES),
      ],
      RUN_TIMEOUT_MS,
    ),
  ) as { records: number; seconds: number };
  const consumed = JSON.parse(
    await runCommand(
      [tools.rdkafkaScale, "consume", broker.bootstrap, prefix, String(records), `g-${prefix}`],
      RUN_TIMEOUT_MS,
    ),
  ) as RdkafkaScaleConsumed;
  const franz =
    tools.franzScale === null
      ? {}
      : await franzConsumePasses(tools.franzScale, broker, prefix, sizes);
  return {
    producePerSecond: produced.records / produced.seconds,
    ...consumeFigures(consumed),
    ...franz,
  };
}

/**
 * franz-go group consumes of every record, each in a new group, until MIN_CONSUME_PASSES passes
 * and sizes.consumeSeconds have run: one pass of 500,000 records lasts about a second.
 */
async function franzConsumePasses(
  franzScale: string,
  broker: BrokerProcess,
  prefix: string,
  sizes: ScaleSizes,
): Promise<ScaleFigures> {
  const passes: RdkafkaScaleConsumed[] = [];
  const started = performance.now();
  while (
    passes.length < MAX_CONSUME_PASSES &&
    (passes.length < MIN_CONSUME_PASSES ||
      performance.now() - started < sizes.consumeSeconds * 1000)
  ) {
    const group = `franz-${prefix}-${passes.length}`;
    const argv = [franzScale, broker.bootstrap, prefix, String(sizes.partitionRecords), group];
    passes.push(JSON.parse(await runCommand(argv, RUN_TIMEOUT_MS)) as RdkafkaScaleConsumed);
  }
  return franzConsumeFigures(passes);
}

/**
 * The franz-go passes' figures: the median pass's records/s from the assignment to the last
 * record, the spread ((max - min) / median, in percent), and medians of the time from the
 * assignment to the first record and of the client's CPU seconds.
 */
export function franzConsumeFigures(passes: readonly RdkafkaScaleConsumed[]): ScaleFigures {
  if (passes.length === 0) throw new Error("franz-scale: no pass ran");
  const rates = passes.map((p) => p.records / p.seconds);
  const rate = median(rates);
  return {
    franzConsumePerSecond: rate,
    franzConsumeSpreadPercent: ((Math.max(...rates) - Math.min(...rates)) / rate) * 100,
    franzConsumePasses: passes.length,
    franzFirstRecordAfterAssignedMs: median(
      passes.map((p) => (p.first_record_seconds - p.assigned_seconds) * 1000),
    ),
    franzConsumeClientCpuS: median(passes.map((p) => p.client_cpu_seconds)),
  };
}

function median(values: readonly number[]): number {
  return percentile(values, 0.5);
}
/**
 * What `rdkafka-scale consume` and `franz-scale` print (seconds are wall time, the last its own
 * CPU); both exit 1 unless they read every record.
 */
export interface RdkafkaScaleConsumed {
  readonly records: number;
  /** From the group's assignment to the last record. */
  readonly seconds: number;
  readonly assigned_seconds: number;
  readonly first_record_seconds: number;
  readonly after_first_seconds: number;
  readonly client_cpu_seconds: number;
}

/**
 * The group consume's figures. Throughput counts from the assignment, not from the first record:
 * librdkafka's start-up on 10,000 assigned partitions (a ListOffsets request per partition, each
 * answer a walk of the broker thread over every partition) costs the client seconds of CPU with
 * either broker, and timed from the first record it fell inside the measured time or outside it
 * depending on how early the broker answered the first Fetch (docs/scaling.md).
 */
export function consumeFigures(consumed: RdkafkaScaleConsumed): ScaleFigures {
  return {
    consumePerSecond: consumed.records / consumed.seconds,
    groupAssignedMs: consumed.assigned_seconds * 1000,
    groupFirstRecordMs: consumed.first_record_seconds * 1000,
    consumeAfterFirstRecordPerSecond: consumed.records / consumed.after_first_seconds,
    consumeClientCpuS: consumed.client_cpu_seconds,
  };
}

/** Median time of a Metadata request for every topic (topics: null). */
async function metadataLatencyMs(port: number): Promise<number> {
  const client = await KafkaClient.connect(port);
  try {
    const samples: number[] = [];
    for (let i = 0; i < METADATA_SAMPLES; i++) {
      const started = performance.now();
      await client.request(METADATA, 8, {
        topics: null,
        allowAutoTopicCreation: false,
        includeClusterAuthorizedOperations: false,
        includeTopicAuthorizedOperations: false,
      });
      samples.push(performance.now() - started);
    }
    return percentile(samples, 0.5);
  } finally {
    client.close();
  }
}

const connectionsWorkload: ScaleWorkload = {
  id: "connections-5k",
  title: "5,000 idle connections, 100 clients producing",
  throughputKeys: ["activePerSecond"],
  async run(_tools, start, sizes) {
    const broker = await start(true);
    const idle: KafkaClient[] = [];
    try {
      const topic = { name: "connections", partitions: 10 };
      await createTopicsAndWait(broker.port, [topic], performance.now() + 60_000);
      for (let i = 0; i < sizes.idleConnections; i++) {
        const client = await KafkaClient.connect(broker.port);
        idle.push(client);
        await client.request(API_VERSIONS, 3, {
          clientSoftwareName: "bench-idle",
          clientSoftwareVersion: "1",
        });
      }
      const rssIdleMb = rssBytes(broker.pid) / 1e6;
      const active = await runActiveClients(broker.port, topic, sizes);
      return { ...active, rssIdleMb, rssMb: rssBytes(broker.pid) / 1e6 };
    } finally {
      for (const client of idle) client.close();
      await broker.stop();
    }
  },
};

const ACTIVE_BATCH_RECORDS = 10;

/** Each client sends Produce (acks=1, 10 records of 100 B) in a loop, one at a time. */
async function runActiveClients(
  port: number,
  topic: TopicSpec,
  sizes: ScaleSizes,
): Promise<ScaleFigures> {
  const value = new Uint8Array(RECORD_BYTES).fill(97);
  const records = buildRecordBatch(Array.from({ length: ACTIVE_BATCH_RECORDS }, () => ({ value })));
  const clients = await Promise.all(
    Array.from({ length: sizes.activeClients }, () => KafkaClient.connect(port)),
  );
  const latencies: number[] = [];
  const deadline = performance.now() + sizes.activeSeconds * 1000;
  const started = performance.now();
  await Promise.all(
    clients.map(async (client, i) => {
      const body = {
        transactionalId: null,
        acks: 1,
        timeoutMs: 30_000,
        topicData: [
          { name: topic.name, partitionData: [{ index: i % topic.partitions, records }] },
        ],
      };
      while (performance.now() < deadline) {
        const sent = performance.now();
        const response = await client.request(PRODUCE, 7, body);
        if (response.responses[0]?.partitionResponses[0]?.errorCode !== 0) {
          throw new Error(`produce failed: ${JSON.stringify(response.responses[0])}`);
        }
        latencies.push(performance.now() - sent);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  for (const client of clients) client.close();
  return {
    activePerSecond: (latencies.length * ACTIVE_BATCH_RECORDS) / seconds,
    activeP50Ms: percentile(latencies, 0.5),
    activeP99Ms: percentile(latencies, 0.99),
  };
}

const longRunWorkload: ScaleWorkload = {
  id: "long-run",
  title: `1 KiB at ${LATENCY_RATE_PER_SECOND}/s end to end, with a 100 ms ApiVersions probe`,
  throughputKeys: [],
  async run(tools, start, sizes) {
    const broker = await start(true);
    try {
      const topic = { name: "long-run", partitions: 1 };
      await createTopicsAndWait(broker.port, [topic], performance.now() + 60_000);
      const probe = await startProbe(broker.port);
      const records = LATENCY_RATE_PER_SECOND * sizes.longRunSeconds;
      const argv = [
        tools.rdkafkaLatency,
        broker.bootstrap,
        topic.name,
        String(records),
        "1024",
        String(LATENCY_RATE_PER_SECOND),
      ];
      const r = JSON.parse(await runCommand(argv, RUN_TIMEOUT_MS)) as Record<string, number>;
      const probed = await probe.stop();
      if (r.failed !== 0) throw new Error(`long run: ${r.failed} records lost`);
      return {
        p50Ms: r.p50Ms!,
        p99Ms: r.p99Ms!,
        p999Ms: r.p999Ms!,
        maxMs: r.maxMs!,
        ...probed,
        ...(broker.adminPort === null ? {} : await eventLoopDelays(broker.adminPort)),
        rssMb: rssBytes(broker.pid) / 1e6,
      };
    } finally {
      await broker.stop();
    }
  },
};

/** ApiVersions every PROBE_INTERVAL_MS, one at a time; stop() gives the round trips' tail. */
async function startProbe(port: number): Promise<{ stop(): Promise<ScaleFigures> }> {
  const client = await KafkaClient.connect(port);
  const samples: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const sent = performance.now();
      await client.request(API_VERSIONS, 3, {
        clientSoftwareName: "bench-probe",
        clientSoftwareVersion: "1",
      });
      samples.push(performance.now() - sent);
      await Bun.sleep(PROBE_INTERVAL_MS);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      client.close();
      return {
        probeP99Ms: percentile(samples, 0.99),
        probeP999Ms: percentile(samples, 0.999),
        probeMaxMs: Math.max(...samples),
      };
    },
  };
}

/**
 * Quill's own event-loop delay histogram (quill_event_loop_delay_seconds, a 100 ms timer's
 * lateness, cumulative Prometheus buckets): probes later than 50 and 100 ms, and the smallest
 * bucket bound holding every probe, an upper bound on the longest stall.
 */
async function eventLoopDelays(adminPort: number): Promise<ScaleFigures> {
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  const buckets = [
    ...text.matchAll(/^quill_event_loop_delay_seconds_bucket\{le="([^"]+)"\} (\S+)$/gm),
  ]
    .map((m) => ({ le: m[1] === "+Inf" ? Infinity : Number(m[1]), count: Number(m[2]) }))
    .sort((a, b) => a.le - b.le);
  const total = buckets.at(-1)?.count ?? 0;
  const atMost = (seconds: number) => buckets.find((b) => b.le === seconds)?.count ?? total;
  const maxBound = buckets.find((b) => b.count === total)?.le ?? Infinity;
  return {
    loopProbes: total,
    loopDelaysOver50Ms: total - atMost(0.05),
    loopDelaysOver100Ms: total - atMost(0.1),
    loopDelayMaxBoundMs: maxBound * 1000,
  };
}

function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** Resident set now (VmRSS). */
function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = status.match(/^VmRSS:\s+(\d+) kB$/m);
  return match === null ? 0 : Number(match[1]) * 1024;
}

/** Quick mode runs the same workloads, with less data and a shorter long run. */
export const SCALE_WORKLOADS: readonly ScaleWorkload[] = [
  partitionsWorkload(1_000),
  partitionsWorkload(10_000),
  connectionsWorkload,
  longRunWorkload,
];
