/**
 * Moving a replica between two log dirs of one broker (AlterReplicaLogDirs, KIP-113): the time a
 * move of a partition of N MB takes, the copy rate against the throttle, and how late the
 * broker's event loop ran meanwhile (a 10 ms timer in the broker's process: the copy must not
 * stall requests).
 *
 *   bun scripts/bench-alter-log-dirs.ts [sizeMB=512] [throttleMBps=0 (none)]
 *
 * The broker runs in this process (two dirs on the same disk, so the figure is the copy's, not
 * two disks'); 1 MB = 1e6 bytes.
 */
import { join } from "node:path";
import { ErrorCode } from "../src/protocol/errors.ts";
import { ApiKey } from "../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../src/protocol/record-batch.ts";
import { removeDir, startInProcessBroker, tempDir } from "../test/support/broker-harness.ts";
import { KafkaClient } from "../test/support/kafka-client.ts";
import { loadAverage } from "./bench-common.ts";

const sizeBytes = Number(process.argv[2] ?? 512) * 1e6;
const throttleBytesPerSec = Number(process.argv[3] ?? 0) * 1e6;
const TOPIC = "moving";
const root = tempDir("quill-bench-alter-");
const dirs = [join(root, "a"), join(root, "b")];
const broker = await startInProcessBroker({
  dataDir: root,
  settings: {
    "log.dirs": dirs.join(","),
    ...(throttleBytesPerSec > 0
      ? { "replica.alter.log.dirs.io.max.bytes.per.second": String(throttleBytesPerSec) }
      : {}),
  },
});
const client = await KafkaClient.connect(broker.port);

async function fill(): Promise<void> {
  const created = await client.request(ApiKey.CreateTopics, 4, {
    topics: [{ name: TOPIC, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
    timeoutMs: 10_000,
    validateOnly: false,
  });
  if (created.topics[0]!.errorCode !== ErrorCode.NONE) throw new Error("CreateTopics failed");
  const value = new Uint8Array(1_000).fill(120);
  const records = Array.from({ length: 1_000 }, () => ({ key: null, value }));
  for (let written = 0; written < sizeBytes; written += 1e6) {
    const res = await client.request(ApiKey.Produce, 9, {
      acks: 1,
      timeoutMs: 10_000,
      topicData: [
        { name: TOPIC, partitionData: [{ index: 0, records: buildRecordBatch(records) }] },
      ],
    });
    const code = res.responses[0]!.partitionResponses[0]!.errorCode;
    if (code !== ErrorCode.NONE) throw new Error(`produce failed: ${code}`);
  }
}

/** The partition's replicas: dir, whether future, size. */
async function replicas() {
  const res = await client.request(ApiKey.DescribeLogDirs, 4, {
    topics: [{ topic: TOPIC, partitions: [0] }],
  });
  return res.results.flatMap((d) =>
    d.topics.flatMap((t) =>
      t.partitions.map((p) => ({ dir: d.logDir, future: p.isFutureKey, size: p.partitionSize })),
    ),
  );
}

/** The event loop's lateness: a 10 ms timer's worst delay while `during` runs. */
async function worstLoopDelayMs<T>(during: () => Promise<T>): Promise<[T, number]> {
  let worst = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last - 10);
    last = now;
  }, 10);
  try {
    return [await during(), worst];
  } finally {
    clearInterval(timer);
  }
}

await fill();
// The same timer with nothing to do: what the machine's load alone costs.
const [, idleDelayMs] = await worstLoopDelayMs(() => Bun.sleep(2_000));
const before = await replicas();
const from = before[0]!.dir;
const to = dirs.find((d) => d !== from)!;
const partitionBytes = Number(before[0]!.size);
const startMs = performance.now();
const [, worstDelayMs] = await worstLoopDelayMs(async () => {
  const res = await client.request(ApiKey.AlterReplicaLogDirs, 2, {
    dirs: [{ path: to, topics: [{ name: TOPIC, partitions: [0] }] }],
  });
  if (res.results[0]!.partitions[0]!.errorCode !== ErrorCode.NONE) throw new Error("refused");
  for (;;) {
    const now = await replicas();
    if (now.length === 1 && now[0]!.dir === to) return;
    await Bun.sleep(50);
  }
});
const seconds = (performance.now() - startMs) / 1000;
const throttle = throttleBytesPerSec > 0 ? `${throttleBytesPerSec / 1e6} MB/s` : "none";
console.log(
  `moved ${(partitionBytes / 1e6).toFixed(0)} MB in ${seconds.toFixed(2)} s: ` +
    `${(partitionBytes / 1e6 / seconds).toFixed(0)} MB/s (throttle ${throttle}); ` +
    `worst event-loop delay ${worstDelayMs.toFixed(1)} ms (idle: ${idleDelayMs.toFixed(1)} ms); ` +
    `load ${loadAverage()}`,
);
client.close();
await broker.stop();
removeDir(root);
