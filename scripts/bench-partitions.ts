// `bun scripts/bench-partitions.ts [--partitions 1000,10000] [--quill-binary PATH]
//                                  [--produce-records N] [--pipelined-requests N]`
//
// Quill alone, one broker per partition count, on a fresh data dir: how long creating 100 topics
// holding that many partitions takes (until Metadata shows every leader), a first produce to
// every partition (one batch each, so every log has data to flush), how long a clean stop
// (SIGTERM to exit: every log flushed, checkpoints, the clean-shutdown marker) takes, start-up
// after it, and start-up after kill -9 (both to the first successful produce). Without
// --quill-binary the broker runs from source (`bun src/main.ts`). Prints one JSON line per
// partition count with the load average. With --produce-records, after the first produce one
// librdkafka producer (bench-vs-kafka's rdkafka-scale.c) writes N records of 100 B round robin
// to every partition, as the scale workload does: its records/s, the broker's and the client's
// CPU seconds and the broker's requests. The same figures, beside Kafka's, come from
// bench-vs-kafka.ts's scale workloads; this is the quick before/after loop for them. With
// --pipelined-requests N, a Bun driver then sends N Produce requests of one partition each (20
// records of 100 B, acks=1, round robin over every partition, 500 in flight on one connection):
// the broker's CPU per request with the request shape fixed, which librdkafka's batching is not.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildRecordBatch } from "../src/protocol/record-batch.ts";
import { KafkaClient } from "../test/support/kafka-client.ts";
import {
  compileRdkafkaProgram,
  cpuSeconds,
  loadAverage,
  sourceLauncher,
  stringOption,
} from "./bench-common.ts";
import { createTopicsAndWait, type TopicSpec } from "./bench-vs-kafka/broker-probe.ts";
import { type BrokerProcess, startQuill } from "./bench-vs-kafka/brokers.ts";
import { freePort, quillRequestCounter } from "./bench-vs-kafka/request-counter.ts";

const TOPICS = 100;
const CREATE_TIMEOUT_MS = 900_000;
const PRODUCE = 0;

/** One batch of 10 records of 100 B to every partition, a Produce request (acks=1) per topic. */
async function produceToEvery(port: number, topics: readonly TopicSpec[]): Promise<void> {
  const value = new Uint8Array(100).fill(97);
  const records = buildRecordBatch(Array.from({ length: 10 }, () => ({ value })));
  const client = await KafkaClient.connect(port);
  try {
    for (const topic of topics) {
      const partitionData = Array.from({ length: topic.partitions }, (_, index) => ({
        index,
        records,
      }));
      const response = await client.request(PRODUCE, 7, {
        transactionalId: null,
        acks: 1,
        timeoutMs: 30_000,
        topicData: [{ name: topic.name, partitionData }],
      });
      for (const p of response.responses[0]?.partitionResponses ?? []) {
        if (p.errorCode !== 0) throw new Error(`produce to ${topic.name}: error ${p.errorCode}`);
      }
    }
  } finally {
    client.close();
  }
}

/** rdkafka-scale.c's producer writing `records` to every partition: rate and CPU on each side. */
async function librdkafkaProduce(broker: BrokerProcess, partitions: number, records: number) {
  const program = compileRdkafkaProgram(join(import.meta.dir, "bench-vs-kafka", "rdkafka-scale.c"));
  if ("error" in program) throw new Error(program.error);
  const requests = quillRequestCounter(broker.adminPort!);
  const requestsBefore = await requests.total();
  const brokerCpuBefore = cpuSeconds(broker.pid);
  const argv = [program.path, "produce", broker.bootstrap, "p-t", String(TOPICS)];
  argv.push(String(partitions / TOPICS), String(records), "100");
  const proc = Bun.spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: "inherit" });
  const stdout = await new Response(proc.stdout).text();
  if ((await proc.exited) !== 0) throw new Error(`rdkafka-scale produce failed: ${stdout}`);
  const result = JSON.parse(stdout) as { records: number; seconds: number };
  const usage = proc.resourceUsage();
  const brokerCpuS = cpuSeconds(broker.pid) - brokerCpuBefore;
  const brokerRequests = (await requests.total()) - requestsBefore;
  return {
    producePerSecond: Math.round(result.records / result.seconds),
    produceSeconds: Number(result.seconds.toFixed(2)),
    brokerCpuS: Number(brokerCpuS.toFixed(2)),
    clientCpuS: Number((Number(usage!.cpuTime.total) / 1e6).toFixed(2)),
    brokerRequests,
    brokerCpuUsPerRequest: Math.round((brokerCpuS * 1e6) / Math.max(1, brokerRequests)),
  };
}

const PIPELINE_DEPTH = 500;

/** N one-partition Produce requests, round robin, PIPELINE_DEPTH in flight: broker CPU each. */
async function pipelinedProduce(broker: BrokerProcess, topics: readonly TopicSpec[], n: number) {
  const value = new Uint8Array(100).fill(98);
  const records = buildRecordBatch(Array.from({ length: 20 }, () => ({ value })));
  const client = await KafkaClient.connect(broker.port);
  const perTopic = topics[0]!.partitions;
  const requests = quillRequestCounter(broker.adminPort!);
  const requestsBefore = await requests.total();
  const brokerCpuBefore = cpuSeconds(broker.pid);
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const topic = topics[i % topics.length]!.name;
      const index = Math.floor(i / topics.length) % perTopic;
      const response = await client.request(PRODUCE, 7, {
        transactionalId: null,
        acks: 1,
        timeoutMs: 30_000,
        topicData: [{ name: topic, partitionData: [{ index, records }] }],
      });
      const code = response.responses[0]?.partitionResponses[0]?.errorCode;
      if (code !== 0) throw new Error(`produce to ${topic}-${index}: error ${code}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: PIPELINE_DEPTH }, worker));
  } finally {
    client.close();
  }
  const brokerCpuS = cpuSeconds(broker.pid) - brokerCpuBefore;
  const brokerRequests = (await requests.total()) - requestsBefore;
  return {
    pipelinedRequestsPerSecond: Math.round(n / ((performance.now() - started) / 1000)),
    pipelinedBrokerCpuS: Number(brokerCpuS.toFixed(2)),
    pipelinedBrokerRequests: brokerRequests,
    pipelinedBrokerCpuUsPerRequest: Number(((brokerCpuS * 1e6) / brokerRequests).toFixed(1)),
  };
}

async function measure(binary: string, dir: string, partitions: number) {
  const figures: Record<string, number | string> = { partitions, loadBefore: loadAverage() };
  const produceRecords = Number(stringOption("--produce-records") ?? 0);
  let broker = await startQuill(binary, dir, {}, await freePort());
  try {
    const topics = Array.from({ length: TOPICS }, (_, i) => ({
      name: `p-t${i}`,
      partitions: partitions / TOPICS,
    }));
    let started = performance.now();
    await createTopicsAndWait(broker.port, topics, performance.now() + CREATE_TIMEOUT_MS);
    figures.createMs = Math.round(performance.now() - started);
    started = performance.now();
    await produceToEvery(broker.port, topics);
    figures.firstProduceMs = Math.round(performance.now() - started);
    if (produceRecords > 0) {
      Object.assign(figures, await librdkafkaProduce(broker, partitions, produceRecords));
      figures.loadAfterProduce = loadAverage();
    }
    const pipelined = Number(stringOption("--pipelined-requests") ?? 0);
    if (pipelined > 0) {
      Object.assign(figures, await pipelinedProduce(broker, topics, pipelined));
      figures.loadAfterPipelined = loadAverage();
    }
    started = performance.now();
    await broker.stop();
    figures.cleanStopMs = Math.round(performance.now() - started);
    broker = await startQuill(binary, dir);
    figures.cleanStartMs = Math.round(broker.startupMs);
    await broker.kill();
    broker = await startQuill(binary, dir);
    figures.crashStartMs = Math.round(broker.startupMs);
  } finally {
    await broker.stop();
  }
  const out = readFileSync(join(dir, "quill.out"), "utf8");
  figures.recoveryLines = (out.match(/recover/gi) ?? []).length;
  // quill serve's stop bound fired (the stop ended without the clean-shutdown marker).
  figures.unfinishedStops = (out.match(/stop did not finish/g) ?? []).length;
  figures.loadAfter = loadAverage();
  return figures;
}

const counts = (stringOption("--partitions") ?? "1000,10000").split(",").map(Number);
for (const partitions of counts) {
  if (!Number.isInteger(partitions / TOPICS) || partitions <= 0) {
    throw new Error(`--partitions: ${partitions} is not a positive multiple of ${TOPICS}`);
  }
  const dir = mkdtempSync(join(tmpdir(), "bench-partitions-"));
  try {
    const binary = stringOption("--quill-binary") ?? sourceLauncher(dir);
    console.log(JSON.stringify(await measure(binary, dir, partitions)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
