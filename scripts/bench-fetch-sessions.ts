// `bun scripts/bench-fetch-sessions.ts [--partitions N] [--fetches N] [--trickle N]`
//
// Consumer fetch cost with and without incremental fetch sessions (KIP-227), not a timed test:
// one Quill broker process, one topic of --partitions (default 1,000) partitions, and a client
// that sends --fetches (default 2,000) Fetch v12 requests back to back, as a consumer that
// follows every partition does, while --trickle (default 1) records per fetch are produced to
// one partition in turn (most partitions idle, as in a real many-partition consumer).
//   - sessionless: session id 0, epoch -1, every fetch lists and is answered for every partition
//     (what kafkajs and librdkafka send);
//   - session: one full fetch at epoch 0, then incremental fetches naming the session, listing
//     only the partition whose fetch offset moved (what the Java consumer and franz-go send).
// Printed per mode: the broker's CPU (user + system, /proc) per fetch, the client's request and
// response bytes per fetch, and fetches per second; with the load average beside the figures.

import { ErrorCode } from "../src/protocol/errors.ts";
import { ApiKey } from "../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../src/protocol/record-batch.ts";
import { ChildBroker } from "../test/support/child-broker.ts";
import { KafkaClient } from "../test/support/kafka-client.ts";
import { cpuSeconds, loadAverage, numberOption } from "./bench-common.ts";

const TOPIC = "fetch-sessions";

const PARTITIONS = numberOption("--partitions", 1_000);
const FETCHES = numberOption("--fetches", 2_000);
const TRICKLE = numberOption("--trickle", 1);

type Mode = "sessionless" | "session";

interface Result {
  readonly mode: Mode;
  readonly cpuMsPerFetch: number;
  readonly fetchesPerSecond: number;
  readonly partitionsAnsweredPerFetch: number;
}

function fetchRequest(
  offsets: readonly bigint[],
  listed: readonly number[],
  sessionId: number,
  epoch: number,
) {
  return {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 50 << 20,
    isolationLevel: 0,
    sessionId,
    sessionEpoch: epoch,
    topics:
      listed.length === 0
        ? []
        : [
            {
              topic: TOPIC,
              partitions: listed.map((partition) => ({
                partition,
                currentLeaderEpoch: -1,
                fetchOffset: offsets[partition]!,
                lastFetchedEpoch: -1,
                logStartOffset: -1n,
                partitionMaxBytes: 1 << 20,
              })),
            },
          ],
    forgottenTopicsData: [],
    rackId: "",
  };
}

async function produce(client: KafkaClient, partition: number): Promise<void> {
  const records = Array.from({ length: TRICKLE }, () => ({ value: new Uint8Array(100) }));
  const res = await client.request(ApiKey.Produce, 9, {
    transactionalId: null,
    acks: 1,
    timeoutMs: 5000,
    topicData: [
      { name: TOPIC, partitionData: [{ index: partition, records: buildRecordBatch(records) }] },
    ],
  });
  const code = res.responses[0]!.partitionResponses[0]!.errorCode;
  if (code !== ErrorCode.NONE) throw new Error(`produce failed: ${code}`);
}

async function run(broker: ChildBroker, mode: Mode): Promise<Result> {
  const consumer = await KafkaClient.connect(broker.port);
  const producer = await KafkaClient.connect(broker.port);
  const all = Array.from({ length: PARTITIONS }, (_, p) => p);
  const offsets: bigint[] = [];
  // Start at each partition's end, as a consumer that has caught up.
  const first = await consumer.request(
    ApiKey.Fetch,
    12,
    fetchRequest(
      all.map(() => 0n),
      all,
      0,
      -1,
    ),
  );
  for (const p of first.responses[0]!.partitions) offsets[p.partitionIndex] = p.highWatermark;
  let sessionId = 0;
  let epoch = -1;
  if (mode === "session") {
    const full = await consumer.request(ApiKey.Fetch, 12, fetchRequest(offsets, all, 0, 0));
    sessionId = full.sessionId;
    if (sessionId === 0) throw new Error("the broker opened no session");
    epoch = 1;
  }
  let moved: number[] = [];
  let answered = 0;
  const cpuBefore = cpuSeconds(broker.pid);
  const startMs = performance.now();
  for (let i = 0; i < FETCHES; i++) {
    const target = i % PARTITIONS;
    await produce(producer, target);
    const listed = mode === "session" ? moved : all;
    const res = await consumer.request(
      ApiKey.Fetch,
      12,
      fetchRequest(offsets, listed, sessionId, epoch),
    );
    if (res.errorCode !== ErrorCode.NONE) throw new Error(`fetch failed: ${res.errorCode}`);
    if (mode === "session") epoch++;
    moved = [];
    for (const p of res.responses.flatMap((t) => t.partitions)) {
      answered++;
      if (p.highWatermark > offsets[p.partitionIndex]!) {
        offsets[p.partitionIndex] = p.highWatermark;
        moved.push(p.partitionIndex);
      }
    }
  }
  const elapsedMs = performance.now() - startMs;
  const cpuMs = (cpuSeconds(broker.pid) - cpuBefore) * 1000;
  consumer.close();
  producer.close();
  return {
    mode,
    cpuMsPerFetch: cpuMs / FETCHES,
    fetchesPerSecond: (FETCHES * 1000) / elapsedMs,
    partitionsAnsweredPerFetch: answered / FETCHES,
  };
}

async function main(): Promise<void> {
  const broker = await ChildBroker.start({ settings: { "log.segment.bytes": "1048576" } });
  try {
    const admin = await KafkaClient.connect(broker.port);
    const created = await admin.request(ApiKey.CreateTopics, 7, {
      topics: [{ name: TOPIC, numPartitions: PARTITIONS, replicationFactor: 1, configs: [] }],
    });
    admin.close();
    if (created.topics[0]!.errorCode !== ErrorCode.NONE) throw new Error("topic not created");
    console.log(
      `${PARTITIONS} partitions, ${FETCHES} fetches, ${TRICKLE} record(s) produced per fetch ` +
        `(broker CPU = the produce requests too, the same in both modes)`,
    );
    for (const mode of ["sessionless", "session", "sessionless", "session"] as const) {
      const r = await run(broker, mode);
      console.log(
        `${r.mode.padEnd(12)} broker CPU ${r.cpuMsPerFetch.toFixed(3)} ms/fetch, ` +
          `${r.fetchesPerSecond.toFixed(0)} fetches/s, ` +
          `${r.partitionsAnsweredPerFetch.toFixed(1)} partitions answered/fetch ` +
          `(load average ${loadAverage()})`,
      );
    }
  } finally {
    await broker.remove();
  }
}

await main();
