// The workloads, each run the same way against both brokers with the same client: librdkafka
// (scripts/bench-e2e/rdkafka-load.c and ./rdkafka-latency.c) and Kafka's own perf tools
// (org.apache.kafka.tools.ProducerPerformance, ConsumerPerformance, EndToEndLatency from the
// kafka-tools jar). Each returns one measurement: throughput, and latency where the client reports
// it. Record counts are the full-size ones; --quick divides them by ten. The `-tls` rows repeat the
// main produce and consume rows of each client over the SASL_SSL listener (sasl-ssl.ts).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCommand } from "../bench-common.ts";
import type { TopicSpec } from "./broker-probe.ts";
import {
  javaSaslSslProperties,
  rdkafkaSaslSslSettings,
  SASL_SSL_MECHANISM,
  type SaslSsl,
} from "./sasl-ssl.ts";

/** No single client run may take longer; the harness then fails instead of hanging. */
const RUN_TIMEOUT_MS = 300_000;
/** The Java tools' heap; the broker's own JVM is sized separately. */
const TOOL_JVM_OPTIONS = ["-Xmx512m"];
const LATENCY_RATE_PER_SECOND = 2_000;

export type WorkloadKind = "produce" | "consume" | "latency";
export type ClientName = "librdkafka" | "Kafka Java tools";
/** The broker listener a workload's clients connect to. */
export type Listener = "PLAINTEXT" | "SASL_SSL";

export interface Measurement {
  readonly records: number;
  readonly recordsPerSecond: number;
  readonly megabytesPerSecond: number;
  /** Produce (send to ack) or end-to-end latency, where the client reports it. */
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  readonly p999Ms: number | null;
}

export interface Tools {
  /** The librdkafka load and latency programs, or null when they could not be compiled. */
  readonly rdkafkaLoad: string | null;
  readonly rdkafkaLatency: string | null;
  /** Kafka's jars (`dir/*`), or null without Java or Maven. */
  readonly classpath: string | null;
  /** Where the Java tools' log4j.properties goes. */
  readonly runDir: string;
  /** Certificates and the user of the SASL_SSL rows, or null when openssl failed. */
  readonly saslSsl: SaslSsl | null;
}

export interface Workload {
  readonly id: string;
  readonly title: string;
  readonly kind: WorkloadKind;
  readonly client: ClientName;
  readonly listener: Listener;
  readonly topic: TopicSpec;
  readonly fullRecords: number;
  readonly recordBytes: number;
  run(tools: Tools, bootstrap: string, records: number): Promise<Measurement>;
}

interface RdkafkaResult {
  records: number;
  bytes: number;
  seconds: number;
  failed: number;
}

function rdkafkaProduce(
  id: string,
  title: string,
  partitions: number,
  fullRecords: number,
  recordBytes: number,
  acks: string,
  settings: readonly string[],
  listener: Listener = "PLAINTEXT",
): Workload {
  return {
    id,
    title: listenerTitle(title, listener),
    kind: "produce",
    client: "librdkafka",
    listener,
    topic: { name: id, partitions },
    fullRecords,
    recordBytes,
    async run(tools, bootstrap, records) {
      const argv = [
        need(tools.rdkafkaLoad),
        "produce",
        bootstrap,
        id,
        String(partitions),
        String(records),
        String(recordBytes),
        acks,
        ...settings,
        ...rdkafkaSecurity(tools, listener),
      ];
      return throughput(parseRdkafka(await runCommand(argv, RUN_TIMEOUT_MS), records), recordBytes);
    },
  };
}

/** Consumes `source`'s records from the beginning of every partition, group-less. */
function rdkafkaConsume(id: string, title: string, source: Workload): Workload {
  const { listener } = source;
  return {
    id,
    title: listenerTitle(title, listener),
    kind: "consume",
    client: "librdkafka",
    listener,
    topic: source.topic,
    fullRecords: source.fullRecords,
    recordBytes: source.recordBytes,
    async run(tools, bootstrap, records) {
      const argv = [
        need(tools.rdkafkaLoad),
        "consume",
        bootstrap,
        source.topic.name,
        String(source.topic.partitions),
        String(records),
        ...rdkafkaSecurity(tools, listener),
      ];
      const result = parseRdkafka(await runCommand(argv, RUN_TIMEOUT_MS), records);
      return throughput(result, source.recordBytes);
    },
  };
}

/** The row's title with the listener, when it is not PLAINTEXT. */
function listenerTitle(title: string, listener: Listener): string {
  return listener === "PLAINTEXT" ? title : `${title}, ${listener} (${SASL_SSL_MECHANISM})`;
}

function rdkafkaSecurity(tools: Tools, listener: Listener): string[] {
  return listener === "PLAINTEXT" ? [] : rdkafkaSaslSslSettings(need(tools.saslSsl));
}

/** Java client properties for `listener` (empty for PLAINTEXT). */
function javaSecurity(tools: Tools, listener: Listener): string {
  return listener === "PLAINTEXT" ? "" : javaSaslSslProperties(need(tools.saslSsl));
}

function parseRdkafka(stdout: string, expected: number): RdkafkaResult {
  const result = JSON.parse(stdout) as RdkafkaResult;
  if (result.failed !== 0 || result.records !== expected) {
    const got = `${result.records} of ${expected} records, ${result.failed} failed`;
    throw new Error(`librdkafka: ${got}`);
  }
  return result;
}

function throughput(result: RdkafkaResult, recordBytes: number): Measurement {
  const recordsPerSecond = result.records / result.seconds;
  return {
    records: result.records,
    recordsPerSecond,
    megabytesPerSecond: (recordsPerSecond * recordBytes) / 1e6,
    p50Ms: null,
    p99Ms: null,
    p999Ms: null,
  };
}

const rdkafkaLatency: Workload = {
  id: "latency-1k",
  title: `1 KiB at ${LATENCY_RATE_PER_SECOND}/s, end to end, acks=1`,
  kind: "latency",
  client: "librdkafka",
  listener: "PLAINTEXT",
  topic: { name: "latency-1k", partitions: 1 },
  fullRecords: 10_000,
  recordBytes: 1024,
  async run(tools, bootstrap, records) {
    const argv = [
      need(tools.rdkafkaLatency),
      bootstrap,
      "latency-1k",
      String(records),
      "1024",
      String(LATENCY_RATE_PER_SECOND),
    ];
    const r = JSON.parse(await runCommand(argv, RUN_TIMEOUT_MS)) as {
      samples: number;
      seconds: number;
      p50Ms: number;
      p99Ms: number;
      p999Ms: number;
      failed: number;
    };
    if (r.failed !== 0) throw new Error(`rdkafka-latency: ${r.failed} records lost`);
    return {
      records: r.samples,
      recordsPerSecond: LATENCY_RATE_PER_SECOND,
      megabytesPerSecond: (LATENCY_RATE_PER_SECOND * 1024) / 1e6,
      p50Ms: r.p50Ms,
      p99Ms: r.p99Ms,
      p999Ms: r.p999Ms,
    };
  },
};

/** Transactions of this many ms each (ProducerPerformance --transaction-duration-ms). */
const TRANSACTION_DURATION_MS = 100;

function javaProduce(
  id: string,
  title: string,
  partitions: number,
  fullRecords: number,
  recordBytes: number,
  acks: string,
  transactional = false,
  listener: Listener = "PLAINTEXT",
): Workload {
  return {
    id,
    title: listenerTitle(title, listener),
    kind: "produce",
    client: "Kafka Java tools",
    listener,
    topic: { name: id, partitions },
    fullRecords,
    recordBytes,
    async run(tools, bootstrap, records) {
      // Idempotence is off for plain produce (the 3.x client turns it on by default); the
      // transactional workload needs it on. Both brokers get the same client settings.
      const txn = transactional
        ? ["--transaction-duration-ms", String(TRANSACTION_DURATION_MS)]
        : [];
      // The JAAS value holds "=" and spaces, which --producer-props cannot carry: a file.
      const security =
        listener === "PLAINTEXT"
          ? []
          : ["--producer.config", javaConfigFile(tools, id, javaSecurity(tools, listener))];
      const out = await runJava(tools, "org.apache.kafka.tools.ProducerPerformance", [
        "--topic",
        id,
        "--num-records",
        String(records),
        "--record-size",
        String(recordBytes),
        "--throughput",
        "-1",
        ...txn,
        ...security,
        "--producer-props",
        `bootstrap.servers=${bootstrap}`,
        `acks=${acks}`,
        `enable.idempotence=${transactional}`,
        ...(transactional ? [`transactional.id=bench-${id}-${Date.now()}`] : []),
      ]);
      return parseProducerPerformance(out, records, recordBytes);
    },
  };
}

const PRODUCER_SUMMARY = new RegExp(
  "(\\d+) records sent, ([\\d.]+) records/sec .*? " +
    "(\\d+) ms 50th, (\\d+) ms 95th, (\\d+) ms 99th, (\\d+) ms 99\\.9th",
);

function parseProducerPerformance(out: string, records: number, recordBytes: number): Measurement {
  const match = out.match(PRODUCER_SUMMARY);
  if (match === null) {
    throw new Error(`ProducerPerformance printed no summary:\n${out.slice(-2000)}`);
  }
  const sent = Number(match[1]);
  if (sent !== records) throw new Error(`ProducerPerformance sent ${sent} of ${records}`);
  const recordsPerSecond = Number(match[2]);
  return {
    records: sent,
    recordsPerSecond,
    megabytesPerSecond: (recordsPerSecond * recordBytes) / 1e6,
    p50Ms: Number(match[3]),
    p99Ms: Number(match[5]),
    p999Ms: Number(match[6]),
  };
}

/**
 * Kafka's consumer perf tool in a fresh group from the earliest offset; fetch time only. With an
 * isolation level, the consumer is configured with it (a --consumer.config file).
 */
function javaConsume(
  id: string,
  title: string,
  source: Workload,
  isolation: "read_committed" | "read_uncommitted" | null = null,
): Workload {
  const { listener } = source;
  return {
    id,
    title: listenerTitle(title, listener),
    kind: "consume",
    client: "Kafka Java tools",
    listener,
    topic: source.topic,
    fullRecords: source.fullRecords,
    recordBytes: source.recordBytes,
    async run(tools, bootstrap, records) {
      const isolationLine = isolation === null ? "" : `isolation.level=${isolation}\n`;
      const config = javaConfigFile(tools, id, isolationLine + javaSecurity(tools, listener));
      const out = await runJava(tools, "org.apache.kafka.tools.ConsumerPerformance", [
        "--consumer.config",
        config,
        "--bootstrap-server",
        bootstrap,
        "--topic",
        source.topic.name,
        "--messages",
        String(records),
        "--timeout",
        "30000",
        "--group",
        `bench-${Date.now()}`,
      ]);
      return parseConsumerPerformance(out, records, source.recordBytes);
    },
  };
}

/** A client properties file in the run dir; returns its path. */
function javaConfigFile(tools: Tools, id: string, text: string): string {
  const path = join(tools.runDir, `${id}.properties`);
  writeFileSync(path, text);
  return path;
}

function parseConsumerPerformance(out: string, records: number, recordBytes: number): Measurement {
  // Header: start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
  // rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
  const line = out.trim().split("\n").at(-1) ?? "";
  const fields = line.split(",").map((f) => f.trim());
  const consumed = Number(fields[4]);
  const fetchSeconds = Number(fields[7]) / 1000;
  // It stops at the end of the poll that reached `records`, so it may count a few hundred more.
  if (fields.length < 10 || consumed < records || !(fetchSeconds > 0)) {
    throw new Error(`ConsumerPerformance: expected ${records} records, got:\n${out.slice(-2000)}`);
  }
  const recordsPerSecond = consumed / fetchSeconds;
  return {
    records: consumed,
    recordsPerSecond,
    megabytesPerSecond: (recordsPerSecond * recordBytes) / 1e6,
    p50Ms: null,
    p99Ms: null,
    p999Ms: null,
  };
}

/** Kafka's EndToEndLatency: one record at a time, produce then poll it back; whole ms. */
const javaLatency: Workload = {
  id: "e2e-java",
  title: "1 KiB one at a time (EndToEndLatency), acks=1",
  kind: "latency",
  client: "Kafka Java tools",
  listener: "PLAINTEXT",
  topic: { name: "e2e-java", partitions: 1 },
  fullRecords: 2_000,
  recordBytes: 1024,
  async run(tools, bootstrap, records) {
    const started = performance.now();
    const out = await runJava(tools, "org.apache.kafka.tools.EndToEndLatency", [
      bootstrap,
      "e2e-java",
      String(records),
      "1",
      "1024",
    ]);
    const seconds = (performance.now() - started) / 1000;
    const match = out.match(/Percentiles: 50th = (\d+), 99th = (\d+), 99\.9th = (\d+)/);
    if (match === null) throw new Error(`EndToEndLatency printed no percentiles:\n${out}`);
    return {
      records,
      recordsPerSecond: records / seconds,
      megabytesPerSecond: (records * 1024) / seconds / 1e6,
      p50Ms: Number(match[1]),
      p99Ms: Number(match[2]),
      p999Ms: Number(match[3]),
    };
  },
};

async function runJava(tools: Tools, mainClass: string, args: string[]): Promise<string> {
  const log4j = join(tools.runDir, "tools-log4j.properties");
  writeFileSync(
    log4j,
    "log4j.rootLogger=WARN, stderr\n" +
      "log4j.appender.stderr=org.apache.log4j.ConsoleAppender\n" +
      "log4j.appender.stderr.Target=System.err\n" +
      "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n" +
      "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\n",
  );
  return runCommand(
    [
      "java",
      ...TOOL_JVM_OPTIONS,
      `-Dlog4j.configuration=file:${log4j}`,
      "-cp",
      need(tools.classpath),
      mainClass,
      ...args,
    ],
    RUN_TIMEOUT_MS,
  );
}

function need<T>(value: T | null): T {
  if (value === null) throw new Error("the client for this workload is not available");
  return value;
}

const paperBatch1 = rdkafkaProduce(
  "paper-b1",
  "200 B, batch 1, 1 partition, acks=1",
  1,
  200_000,
  200,
  "1",
  ["batch.num.messages=1", "linger.ms=0"],
);
const paperBatch50 = rdkafkaProduce(
  "paper-b50",
  "200 B, batch 50, 1 partition, acks=1",
  1,
  2_000_000,
  200,
  "1",
  ["batch.num.messages=50"],
);
const linkedInRdkafka1 = rdkafkaProduce(
  "li-rd-acks1",
  "100 B, 6 partitions, acks=1",
  6,
  2_000_000,
  100,
  "1",
  [],
);
const linkedInRdkafkaAll = rdkafkaProduce(
  "li-rd-acksall",
  "100 B, 6 partitions, acks=all",
  6,
  2_000_000,
  100,
  "all",
  [],
);
const linkedInJava1 = javaProduce(
  "li-java-acks1",
  "100 B, 6 partitions, acks=1",
  6,
  1_000_000,
  100,
  "1",
);
const linkedInJavaAll = javaProduce(
  "li-java-acksall",
  "100 B, 6 partitions, acks=all",
  6,
  1_000_000,
  100,
  "all",
);

const linkedInJavaTxn = javaProduce(
  "li-java-txn",
  `100 B, 6 partitions, idempotent, ${TRANSACTION_DURATION_MS} ms transactions`,
  6,
  1_000_000,
  100,
  "all",
  true,
);

/** The main produce row of each client again, over the SASL_SSL listener. */
const linkedInRdkafka1Tls = rdkafkaProduce(
  "li-rd-acks1-tls",
  "100 B, 6 partitions, acks=1",
  6,
  2_000_000,
  100,
  "1",
  [],
  "SASL_SSL",
);
const linkedInJava1Tls = javaProduce(
  "li-java-acks1-tls",
  "100 B, 6 partitions, acks=1",
  6,
  1_000_000,
  100,
  "1",
  false,
  "SASL_SSL",
);

/** In run order: consumers read what the producers before them wrote. */
export const WORKLOADS: readonly Workload[] = [
  paperBatch1,
  paperBatch50,
  linkedInRdkafka1,
  linkedInRdkafkaAll,
  linkedInJava1,
  linkedInJavaAll,
  rdkafkaConsume("consume-rd-1p", "200 B from the beginning, 1 partition", paperBatch50),
  rdkafkaConsume("consume-rd-6p", "100 B from the beginning, 6 partitions", linkedInRdkafka1),
  javaConsume("consume-java-6p", "100 B from the beginning, 6 partitions", linkedInJava1),
  linkedInJavaTxn,
  javaConsume(
    "consume-java-txn-rc",
    "li-java-txn's topic, read_committed",
    linkedInJavaTxn,
    "read_committed",
  ),
  javaConsume(
    "consume-java-txn-ru",
    "li-java-txn's topic, read_uncommitted",
    linkedInJavaTxn,
    "read_uncommitted",
  ),
  rdkafkaLatency,
  javaLatency,
  // Last, so the plaintext rows run as before; each consumer reads its producer's topic.
  linkedInRdkafka1Tls,
  linkedInJava1Tls,
  rdkafkaConsume(
    "consume-rd-6p-tls",
    "100 B from the beginning, 6 partitions",
    linkedInRdkafka1Tls,
  ),
  javaConsume("consume-java-6p-tls", "100 B from the beginning, 6 partitions", linkedInJava1Tls),
];

/** The topic `warmUp` writes to and reads from; the harness creates it with the others. */
export const WARM_UP_TOPIC: TopicSpec = { name: "warm-up", partitions: 6 };
const WARM_UP_RECORDS = 300_000;
const WARM_UP_LATENCY_RECORDS = 2_000;

/**
 * Runs produce, consume and fixed-rate traffic through the broker before anything is measured, so
 * the JVM's JIT (and JavaScriptCore's) has compiled the hot paths: a cold Kafka answers the first
 * seconds of a run tens of times slower. Start-up is measured before this, cold.
 */
export async function warmUp(tools: Tools, bootstrap: string): Promise<void> {
  if (tools.rdkafkaLoad === null || tools.rdkafkaLatency === null) return;
  const { name, partitions } = WARM_UP_TOPIC;
  await runCommand(
    [
      tools.rdkafkaLoad,
      "produce",
      bootstrap,
      name,
      String(partitions),
      String(WARM_UP_RECORDS),
      "100",
      "1",
    ],
    RUN_TIMEOUT_MS,
  );
  await runCommand(
    [tools.rdkafkaLoad, "consume", bootstrap, name, String(partitions), String(WARM_UP_RECORDS)],
    RUN_TIMEOUT_MS,
  );
  await runCommand(
    [
      tools.rdkafkaLatency,
      bootstrap,
      `${name}-latency`,
      String(WARM_UP_LATENCY_RECORDS),
      "1024",
      String(LATENCY_RATE_PER_SECOND),
    ],
    RUN_TIMEOUT_MS,
  );
}

const WARM_UP_SASL_SSL_RECORDS = 100_000;

/**
 * Produce and consume over the SASL_SSL listener before its rows, as warmUp does for the
 * plaintext ones: Kafka's SSLEngine and SCRAM paths are compiled before anything is measured.
 */
export async function warmUpSaslSsl(tools: Tools, bootstrap: string): Promise<void> {
  if (tools.rdkafkaLoad === null) return;
  const security = rdkafkaSecurity(tools, "SASL_SSL");
  const { name, partitions } = WARM_UP_TOPIC;
  const records = String(WARM_UP_SASL_SSL_RECORDS);
  const topic = [bootstrap, name, String(partitions), records];
  await runCommand(
    [tools.rdkafkaLoad, "produce", ...topic, "100", "1", ...security],
    RUN_TIMEOUT_MS,
  );
  await runCommand([tools.rdkafkaLoad, "consume", ...topic, ...security], RUN_TIMEOUT_MS);
}

/**
 * The workloads `tools` can run: librdkafka ones need the C programs, Java ones Kafka's jars,
 * SASL_SSL ones the certificates.
 */
export function runnable(tools: Tools): Workload[] {
  return WORKLOADS.filter(
    (w) =>
      (w.listener === "PLAINTEXT" || tools.saslSsl !== null) &&
      (w.client === "librdkafka"
        ? tools.rdkafkaLoad !== null && tools.rdkafkaLatency !== null
        : tools.classpath !== null),
  );
}
