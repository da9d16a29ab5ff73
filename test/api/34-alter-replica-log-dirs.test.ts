/**
 * AlterReplicaLogDirs (KIP-113) on a broker with three log dirs: a replica moves to another dir
 * while an idempotent kafkajs producer writes and a consumer reads (offsets, bytes, producer
 * state and epochs unchanged, files only in the new dir), DescribeLogDirs (and Kafka 3.9's
 * kafka-log-dirs.sh) lists the future replica with its size and lag, the throttle bounds the
 * copy, a second request replaces a move and the current dir cancels it, a clean restart
 * resumes a move, and the error codes of every version as Kafka answers them.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { readAll } from "../broker/acks-all-producer.ts";
import { LOG_DIRS, runKafkaTool } from "../broker/kafka-tool.ts";
import {
  type InProcessBroker,
  removeDir,
  startInProcessBroker,
  tempDir,
} from "../support/broker-harness.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { waitUntil } from "../support/wait-until.ts";

const BROKER_RESOURCE = 4;
const SET = 0;
const DELETE = 1;
const THROTTLE_KEY = "replica.alter.log.dirs.io.max.bytes.per.second";
/** Small slices, so the throttle's bound is tight (the rate is checked between slices). */
const SLICE_BYTES = 65536;

let broker: InProcessBroker;
let root: string;
let dirs: string[];

const settings = () => ({
  "log.dirs": dirs.join(","),
  "log.segment.bytes": String(256 * 1024),
  "replica.fetch.max.bytes": String(SLICE_BYTES),
});

beforeAll(async () => {
  root = tempDir("quill-alter-log-dirs-");
  dirs = ["a", "b", "c"].map((d) => join(root, d));
  broker = await startInProcessBroker({ dataDir: root, settings: settings() });
}, 60_000);

afterAll(async () => {
  await broker?.stop();
  removeDir(root);
});

const kafka = () =>
  new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING, clientId: "mover" });

async function createTopic(topic: string): Promise<void> {
  const admin = kafka().admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
  await admin.disconnect();
}

const alter = (dir: string, topic: string, version = 2, partitions = [0]) =>
  requestOnce(broker.port, ApiKey.AlterReplicaLogDirs, version, {
    dirs: [{ path: dir, topics: [{ name: topic, partitions }] }],
  });
const alterCode = async (dir: string, topic: string, version = 2) =>
  (await alter(dir, topic, version)).results[0]!.partitions[0]!.errorCode;

interface Replica {
  dir: string;
  size: bigint;
  lag: bigint;
  future: boolean;
}

/** Where DescribeLogDirs lists `topic`-0: its current replica and any future one. */
async function replicas(topic: string): Promise<Replica[]> {
  const res = await requestOnce(broker.port, ApiKey.DescribeLogDirs, 4, {
    topics: [{ topic, partitions: [0] }],
  });
  return res.results.flatMap((d) =>
    d.topics.flatMap((t) =>
      t.partitions.map((p) => ({
        dir: d.logDir,
        size: p.partitionSize,
        lag: p.offsetLag,
        future: p.isFutureKey,
      })),
    ),
  );
}

interface ToolPartition {
  partition: string;
  size: number;
  offsetLag: number;
  isFuture: boolean;
}

const currentDir = async (topic: string) => (await replicas(topic)).find((r) => !r.future)!.dir;

/** Waits until `topic`-0 lives in `dir` with no future replica left. */
async function movedTo(topic: string, dir: string, timeoutMs = 30_000): Promise<void> {
  await waitUntil(
    async () => {
      const r = await replicas(topic);
      return r.length === 1 && r[0]!.dir === dir && !r[0]!.future;
    },
    timeoutMs,
    `${topic}-0 moved to ${dir}`,
  );
}

const partitionDirs = (dir: string, topic: string) =>
  existsSync(dir) ? readdirSync(dir).filter((n) => n.startsWith(`${topic}-0`)) : [];

/** Every segment's `.log` bytes of `topic`-0 in `dir`, concatenated in offset order. */
function logBytes(dir: string, topic: string): Buffer {
  const partitionDir = join(dir, `${topic}-0`);
  const files = readdirSync(partitionDir)
    .filter((n) => n.endsWith(".log"))
    .sort();
  return Buffer.concat(files.map((f) => readFileSync(join(partitionDir, f))));
}

async function produceBytes(topic: string, records: number, valueBytes: number): Promise<void> {
  const producer = kafka().producer({ idempotent: true });
  await producer.connect();
  for (let sent = 0; sent < records; sent += 100) {
    const messages = Array.from({ length: 100 }, (_, i) => ({
      value: `${sent + i}:`.padEnd(valueBytes, "x"),
    }));
    await producer.send({ topic, acks: -1, messages });
  }
  await producer.disconnect();
}

async function setThrottle(bytesPerSecond: number | null): Promise<void> {
  const res = await requestOnce(broker.port, ApiKey.IncrementalAlterConfigs, 1, {
    resources: [
      {
        resourceType: BROKER_RESOURCE,
        resourceName: "",
        configs: [
          bytesPerSecond === null
            ? { name: THROTTLE_KEY, configOperation: DELETE, value: null }
            : { name: THROTTLE_KEY, configOperation: SET, value: String(bytesPerSecond) },
        ],
      },
    ],
    validateOnly: false,
  });
  expect(res.responses[0]!.errorCode).toBe(ErrorCode.NONE);
}

test("the throttle bounds the copy, kafka-log-dirs.sh shows it; a second request replaces the move, the current dir cancels it", async () => {
  const topic = "slow";
  await createTopic(topic);
  await produceBytes(topic, 2_000, 1_000);
  // The first move of this broker: the quota's window (11 s) holds nothing else, so the bytes
  // copied from the first slice on stay within the rate over the time since.
  const rate = 128 * 1024;
  await setThrottle(rate);
  const from = await currentDir(topic);
  const [first, second] = dirs.filter((d) => d !== from);
  expect(await alterCode(first!, topic)).toBe(ErrorCode.NONE);
  await waitUntil(
    async () => (await replicas(topic)).some((r) => r.future && r.size > 0n),
    20_000,
    "the copy started",
  );
  const t0 = Date.now();
  const size0 = (await replicas(topic)).find((r) => r.future)!.size;
  await Bun.sleep(2_000);
  const future = (await replicas(topic)).find((r) => r.future)!;
  const seconds = (Date.now() - t0) / 1000;
  // The window allows the rate over the time elapsed, plus the slice that crossed it.
  expect(Number(future.size - size0)).toBeLessThanOrEqual(rate * (seconds + 1) + SLICE_BYTES);
  expect(future.dir).toBe(first!);
  expect(future.lag).toBeGreaterThan(0n);
  // kafka-log-dirs.sh shows the move in progress: the future replica with its size and lag.
  // The copy is held (1 byte/s) while the JVM starts, which took over 20 s at load 36.
  await setThrottle(1);
  const tool = await runKafkaTool(LOG_DIRS, ["--bootstrap-server", broker.bootstrap, "--describe"]);
  expect(tool.code, tool.stderr).toBe(0);
  const described = JSON.parse(tool.stdout.split("\n").find((l) => l.startsWith("{"))!) as {
    brokers: { logDirs: { logDir: string; partitions: ToolPartition[] }[] }[];
  };
  const listed = described.brokers[0]!.logDirs.flatMap((d) =>
    d.partitions.filter((p) => p.partition === `${topic}-0`).map((p) => ({ ...p, dir: d.logDir })),
  );
  expect(listed.find((p) => p.isFuture)).toMatchObject({ dir: first! });
  expect(listed.find((p) => p.isFuture)!.offsetLag).toBeGreaterThan(0);
  expect(listed.find((p) => !p.isFuture)).toMatchObject({ dir: from, offsetLag: 0 });

  // Another dir: the copy in the first is dropped and starts over in the second.
  expect(await alterCode(second!, topic)).toBe(ErrorCode.NONE);
  const now = await replicas(topic);
  expect(now.filter((r) => r.future).map((r) => r.dir)).toEqual([second!]);
  await waitUntil(() => partitionDirs(first!, topic).length === 0, 20_000, "first future gone");
  // The current dir: no move any more.
  expect(await alterCode(from, topic)).toBe(ErrorCode.NONE);
  expect((await replicas(topic)).filter((r) => r.future)).toEqual([]);
  await waitUntil(() => partitionDirs(second!, topic).length === 0, 20_000, "second future gone");
  await setThrottle(null);
  expect(await alterCode(second!, topic)).toBe(ErrorCode.NONE);
  await movedTo(topic, second!);
}, 60_000);

test("a replica moves while an idempotent producer writes: offsets, bytes, epochs kept", async () => {
  await setThrottle(null);
  const topic = "live";
  await createTopic(topic);
  const producer = kafka().producer({ idempotent: true });
  await producer.connect();
  const acknowledged: string[] = [];
  let producing = true;
  const loop = (async () => {
    for (let i = 0; producing; i++) {
      const messages = Array.from({ length: 50 }, (_, j) => ({ value: `${i}-${j}`.padEnd(200) }));
      await producer.send({ topic, acks: -1, messages });
      acknowledged.push(...messages.map((m) => m.value));
    }
  })();
  await waitUntil(() => acknowledged.length >= 5_000, 30_000, "1 MB in");
  const from = await currentDir(topic);
  const to = dirs.find((d) => d !== from)!;
  const before = logBytes(from, topic);
  expect(await alterCode(to, topic)).toBe(ErrorCode.NONE);
  await movedTo(topic, to);
  const movedAt = acknowledged.length;
  await waitUntil(() => acknowledged.length >= movedAt + 1_000, 20_000, "produce after the swap");
  producing = false;
  await loop;
  await producer.disconnect();

  // Every acknowledged record once, in order, at the offset it was given.
  const consumer = kafka().consumer({ groupId: "live-reader" });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen: { offset: string; value: string }[] = [];
  await consumer.run({
    eachMessage: async ({ message }) => {
      seen.push({ offset: message.offset, value: message.value!.toString() });
    },
  });
  await waitUntil(() => seen.length >= acknowledged.length, 20_000, "every record consumed");
  await consumer.disconnect();
  expect(seen.map((s) => s.value)).toEqual(acknowledged);
  expect(seen.map((s) => Number(s.offset))).toEqual(acknowledged.map((_, i) => i));

  // The same bytes, and only in the new dir once the old log is deleted.
  expect(logBytes(to, topic).subarray(0, before.length).equals(before)).toBe(true);
  await waitUntil(() => partitionDirs(from, topic).length === 0, 20_000, "old log deleted");
  expect(partitionDirs(to, topic)).toEqual([`${topic}-0`]);
  const log = broker.broker.services.replicaManager.partitionState(topic, 0)!.log;
  expect(log.dir).toBe(join(to, `${topic}-0`));
  expect(log.leaderEpochCache.all()).toEqual([{ epoch: 0, startOffset: 0n }]);
  // The idempotent producer's state came along: its sequence went on across the swap.
  expect(log.producerState.producerCount).toBe(1);
}, 120_000);

test("a clean restart in the middle of a move resumes it from the future log", async () => {
  const topic = "resumed";
  await createTopic(topic);
  await produceBytes(topic, 2_000, 1_000);
  // A fresh broker: the quota's window (11 s) holds none of the moves before, so 512 KiB/s
  // keeps this 2 MB copy running for seconds.
  await broker.stop();
  broker = await startInProcessBroker({ dataDir: root, settings: settings() });
  await setThrottle(512 * 1024);
  const from = await currentDir(topic);
  const to = dirs.find((d) => d !== from)!;
  expect(await alterCode(to, topic)).toBe(ErrorCode.NONE);
  await waitUntil(
    async () => (await replicas(topic)).some((r) => r.future && r.size > 0n),
    20_000,
    "the copy started",
  );
  await broker.stop();
  expect(partitionDirs(to, topic).some((n) => n.endsWith("-future"))).toBe(true);
  broker = await startInProcessBroker({ dataDir: root, settings: settings() });
  expect((await replicas(topic)).some((r) => r.future && r.dir === to)).toBe(true);
  await setThrottle(null);
  await movedTo(topic, to);
  const values = [...(await readAll(broker, topic))];
  expect(values.map(([offset, v]) => [offset, Number(v.split(":")[0])])).toEqual(
    values.map((_, i) => [BigInt(i), i]),
  );
  expect(values.length).toBe(2_000);
}, 60_000);

test("errors, v0 to v2: unknown dir, unknown partition, long name, offline dir", async () => {
  await createTopic("errors");
  for (const version of [0, 1, 2]) {
    expect(await alterCode(join(root, "nowhere"), "errors", version)).toBe(
      ErrorCode.LOG_DIR_NOT_FOUND,
    );
    expect(await alterCode(dirs[0]!, "no-such-topic", version)).toBe(
      ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    );
    expect(await alterCode(dirs[0]!, "t".repeat(249), version)).toBe(
      ErrorCode.INVALID_TOPIC_EXCEPTION,
    );
  }
  const current = await currentDir("errors");
  expect(await alterCode(current, "errors", 0)).toBe(ErrorCode.NONE);
  expect((await replicas("errors")).length).toBe(1);

  // A broker whose second dir fails (a file in its place when a log is made there): moving
  // there, or anywhere while it is offline, is KAFKA_STORAGE_ERROR.
  const otherRoot = tempDir("quill-alter-offline-");
  const [good, bad, spare] = ["a", "b", "c"].map((d) => join(otherRoot, d));
  const other = await startInProcessBroker({
    dataDir: otherRoot,
    settings: { "log.dirs": [good, bad, spare].join(",") },
  });
  try {
    rmSync(bad!, { recursive: true });
    writeFileSync(bad!, "not a directory");
    await requestOnce(other.port, ApiKey.CreateTopics, 4, {
      topics: [
        { name: "stuck", numPartitions: 3, replicationFactor: 1, assignments: [], configs: [] },
      ],
      timeoutMs: 10_000,
      validateOnly: false,
    });
    const code = async (dir: string, partition: number) =>
      (
        await requestOnce(other.port, ApiKey.AlterReplicaLogDirs, 1, {
          dirs: [{ path: dir, topics: [{ name: "stuck", partitions: [partition] }] }],
        })
      ).results[0]!.partitions[0]!.errorCode;
    const res = await requestOnce(other.port, ApiKey.DescribeLogDirs, 4, { topics: null });
    expect(res.results.find((d) => d.logDir === bad)!.errorCode).toBe(
      ErrorCode.KAFKA_STORAGE_ERROR,
    );
    const inGood = res.results
      .find((d) => d.logDir === good)!
      .topics.flatMap((t) => t.partitions.map((p) => p.partitionIndex));
    expect(inGood.length).toBeGreaterThan(0);
    expect(await code(bad!, inGood[0]!)).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
    expect(await code(spare!, inGood[0]!)).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
  } finally {
    await other.stop();
    removeDir(otherRoot);
  }
}, 60_000);
