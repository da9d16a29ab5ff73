/**
 * Moving a replica between the two log dirs of a broker (KIP-113) with Kafka 3.9's
 * `kafka-reassign-partitions.sh` (ReassignPartitionsCommand, `log_dirs` in its JSON and
 * `--replica-alter-log-dirs-throttle`) against a ZooKeeper-mode broker while an idempotent
 * kafkajs producer (acks=all) writes and a consumer group reads; the broker is killed with
 * kill -9 in the middle of the copy, restarts, resumes the move from its future log, and
 * `--verify` reports it done and removes the throttle. Every acknowledged record is in the
 * log once, in order, at the offsets it had, and the partition's files are only in the new dir.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { removeDir, tempDir } from "../support/broker-harness.ts";
import { ChildBroker } from "../support/child-broker.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { waitUntil } from "../support/wait-until.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import { readAll } from "./acks-all-producer.ts";
import { kafkaClasspath, REASSIGN_PARTITIONS, runKafkaTool } from "./kafka-tool.ts";

const TOPIC = "jbod";
let zkServer: ZooKeeperServer;
let broker: ChildBroker;
let root: string;
let dirs: string[];

beforeAll(async () => {
  root = tempDir("quill-jbod-move-");
  dirs = [join(root, "a"), join(root, "b")];
  zkServer = await startZooKeeper();
  [broker] = await Promise.all([
    ChildBroker.start({
      dataDir: root,
      settings: {
        "zookeeper.connect": `${zkServer.connectString}/jbod`,
        "zookeeper.session.timeout.ms": "4000",
        "broker.id": "1",
        "log.dirs": dirs.join(","),
        "log.segment.bytes": String(512 * 1024),
        "replica.fetch.max.bytes": "65536",
        "offsets.topic.replication.factor": "1",
        "default.replication.factor": "1",
      },
    }),
    kafkaClasspath(),
  ]);
}, 120_000);

afterAll(async () => {
  await broker?.remove();
  await zkServer?.stop();
  removeDir(root);
}, 30_000);

const kafka = () =>
  new Kafka({
    brokers: [broker.bootstrap],
    logLevel: logLevel.NOTHING,
    retry: { retries: 20, initialRetryTime: 100, maxRetryTime: 1_000 },
  });

/** Where DescribeLogDirs lists the partition: [dir, isFuture, size]. */
async function replicas(): Promise<[string, boolean, bigint][]> {
  const res = await requestOnce(broker.port, ApiKey.DescribeLogDirs, 4, {
    topics: [{ topic: TOPIC, partitions: [0] }],
  });
  return res.results.flatMap((d) =>
    d.topics.flatMap((t) =>
      t.partitions.map((p): [string, boolean, bigint] => [
        d.logDir,
        p.isFutureKey,
        p.partitionSize,
      ]),
    ),
  );
}

const reassign = (...args: string[]) =>
  runKafkaTool(REASSIGN_PARTITIONS, ["--bootstrap-server", broker.bootstrap, ...args]);

/** An idempotent acks=all producer writing one record per send until stopped. */
function startProducing(acknowledged: string[]) {
  const producer = kafka().producer({ idempotent: true, maxInFlightRequests: 1 });
  let producing = true;
  let failures = 0;
  const loop = (async () => {
    await producer.connect();
    for (let i = 0; producing; i++) {
      const value = `live-${i}`;
      try {
        await producer.send({ topic: TOPIC, acks: -1, messages: [{ value }] });
        acknowledged.push(value);
      } catch {
        failures++;
        await Bun.sleep(100);
      }
    }
    await producer.disconnect();
  })();
  return {
    failures: () => failures,
    stop: async () => {
      producing = false;
      await loop;
    },
  };
}

/** 2,000 records of 1 KB, acknowledged (acks=all, idempotent); returns their values. */
async function fill(): Promise<string[]> {
  const acknowledged: string[] = [];
  const filler = kafka().producer({ idempotent: true });
  await filler.connect();
  for (let i = 0; i < 20; i++) {
    const messages = Array.from({ length: 100 }, (_, j) => ({
      value: `fill-${i * 100 + j}`.padEnd(1_000, "."),
    }));
    await filler.send({ topic: TOPIC, acks: -1, messages });
    acknowledged.push(...messages.map((m) => m.value));
  }
  await filler.disconnect();
  return acknowledged;
}

/** The tool's JSON: the partition stays on broker 1 and moves to `dir`. */
function planFile(dir: string): string {
  const plan = join(root, "plan.json");
  writeFileSync(
    plan,
    JSON.stringify({
      version: 1,
      partitions: [{ topic: TOPIC, partition: 0, replicas: [1], log_dirs: [dir] }],
    }),
  );
  return plan;
}

/** In the log once each, acknowledged ones in the order acknowledged, offsets from 0 on. */
async function expectOnceInOrder(acknowledged: readonly string[]): Promise<void> {
  const stored = [...(await readAll(broker, TOPIC))];
  expect(stored.map(([offset]) => offset)).toEqual(stored.map((_, i) => BigInt(i)));
  const values = stored.map(([, v]) => v);
  expect(new Set(values).size).toBe(values.length);
  const position = new Map(values.map((v, i) => [v, i]));
  const positions = acknowledged.map((v) => position.get(v) ?? -1);
  expect(positions.every((p, i) => p >= 0 && (i === 0 || p > positions[i - 1]!))).toBe(true);
}

test("reassign with log_dirs moves a replica across a kill -9 while clients run", async () => {
  const admin = kafka().admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 1 }], waitForLeaders: true });
  await admin.disconnect();
  // 2 MB first, so the throttled copy (1 MB/s) is still running when the broker is killed.
  const acknowledged = await fill();
  const consumer = kafka().consumer({ groupId: "jbod-readers", maxWaitTimeInMs: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
  const seen = new Set<string>();
  await consumer.run({ eachMessage: async ({ message }) => void seen.add(`${message.value}`) });
  const producing = startProducing(acknowledged);

  const from = (await replicas()).find(([, future]) => !future)![0];
  const to = dirs.find((d) => d !== from)!;
  const plan = planFile(to);
  const executed = await reassign(
    "--reassignment-json-file",
    plan,
    "--execute",
    "--replica-alter-log-dirs-throttle",
    "1000000",
  );
  expect(executed.code, executed.stdout + executed.stderr).toBe(0);
  await waitUntil(
    async () => (await replicas()).some(([dir, future, size]) => future && dir === to && size > 0n),
    30_000,
    "the copy under way",
  );
  await broker.kill9();
  const torn = readdirSync(to).filter((n) => n.startsWith(`${TOPIC}-0.`));
  expect(torn.some((n) => n.endsWith("-future"))).toBe(true);
  broker = await broker.restart();

  await waitUntil(
    async () => {
      const r = await replicas();
      return r.length === 1 && r[0]![0] === to && !r[0]![1];
    },
    60_000,
    "the move resumed and finished",
  );
  const verified = await reassign("--reassignment-json-file", plan, "--verify");
  expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  expect(verified.stdout).toContain(`Reassignment of replica ${TOPIC}-0-1 completed successfully.`);
  expect(verified.stdout).toContain("Clearing broker-level throttles on broker 1");

  const movedAt = acknowledged.length;
  await waitUntil(() => acknowledged.length > movedAt + 50, 30_000, "produce after the move");
  await producing.stop();
  await waitUntil(
    () => acknowledged.every((v) => seen.has(v)),
    60_000,
    "every acknowledged record consumed by the group",
  );
  await consumer.disconnect();

  await expectOnceInOrder(acknowledged);
  await waitUntil(
    () => readdirSync(from).every((n) => !n.startsWith(`${TOPIC}-0`)),
    30_000,
    "the old log deleted",
  );
  expect(readdirSync(to).filter((n) => n.startsWith(`${TOPIC}-0`))).toEqual([`${TOPIC}-0`]);
}, 180_000);
