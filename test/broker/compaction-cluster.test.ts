/**
 * Compaction on a three-broker cluster (child processes, real ZooKeeper): every replica's
 * LogCleaner cleans its own copy of a compacted partition, followers keep replicating across
 * their leader's and their own cleanings (the ISR stays whole, acks=all produces keep
 * succeeding), and after a clean stop each replica's log holds, at the offsets it kept, exactly
 * what was produced there, with every key's latest record.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { DEFAULT_LOG_CONFIG } from "../../src/storage/log-config.ts";
import { LogManager } from "../../src/storage/log-manager.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";
import type { StoredRecord } from "../storage/cleaner-support.ts";
import { readAllRecords } from "../storage/cleaner-support.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import {
  type Cluster,
  consistentMetadata,
  createTopic,
  metadata,
  startCluster,
  until,
} from "./cluster-harness.ts";

const TOPIC = "compacted-replicated";
const KEYS = 20;
let zkServer: ZooKeeperServer;
let cluster: Cluster;

beforeAll(async () => {
  zkServer = await startZooKeeper();
  cluster = await startCluster(`${zkServer.connectString}/compaction`, {
    "log.cleaner.backoff.ms": "100",
  });
  await consistentMetadata(cluster, 3);
  await createTopic(cluster.brokers.get(1)!, TOPIC, 1, [
    { name: "cleanup.policy", value: "compact" },
    { name: "segment.bytes", value: "2048" },
  ]);
  await consistentMetadata(cluster, 3);
}, 60_000);

afterAll(async () => {
  await cluster.close();
  await zkServer.stop();
});

async function produceRounds(from: number, rounds: number): Promise<void> {
  const kafka = new Kafka({
    clientId: "compaction-cluster",
    brokers: [...cluster.brokers.values()].map((b) => b.bootstrap),
    logLevel: logLevel.NOTHING,
    retry: { retries: 8, initialRetryTime: 200 },
  });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    for (let round = from; round < from + rounds; round++) {
      const messages = Array.from({ length: KEYS }, (_, k) => ({
        key: `key-${k}`,
        value: `value-${round}-${k}`.padEnd(40, "."),
      }));
      await producer.send({ topic: TOPIC, acks: -1, messages });
    }
  } finally {
    await producer.disconnect();
  }
}

const cleanedLines = (text: string): number =>
  text.split("\n").filter((l) => l.includes(`cleaned ${TOPIC}-0 `)).length;

/** The highest end offset of the dirty sections the broker logged as cleaned; -1 for none. */
const cleanedUpTo = (text: string): number => {
  const ends = [
    ...text.matchAll(new RegExp(`cleaned ${TOPIC}-0 \\(dirty section \\[\\d+, (\\d+)\\)`, "g")),
  ];
  return ends.reduce((max, m) => Math.max(max, Number(m[1])), -1);
};

test("every replica cleans its own log; followers keep replicating", async () => {
  await produceRounds(0, 15);
  const brokers = [...cluster.brokers.values()];
  await until(
    async () => brokers.every((b) => cleanedLines(b.stderrText) >= 1) || undefined,
    30_000,
    "a cleaning on every replica",
  );
  await produceRounds(15, 15);
  // A second cleaning may start while the rounds are still arriving; wait for one whose dirty
  // section reached round 25, so at most the last rounds and the active segment stay uncleaned.
  await until(
    async () => brokers.every((b) => cleanedUpTo(b.stderrText) >= 25 * KEYS) || undefined,
    30_000,
    "a cleaning on every replica that reached round 25",
  );
  const m = await metadata(brokers[0]!);
  const partition = m.topics.find((t) => t.name === TOPIC)!.partitions[0]!;
  expect(partition.isrNodes.length).toBe(3);
  for (const b of brokers) expect(await b.terminate()).toBe(0);
  const replicas = brokers.map((b) => recordsIn(b.dataDir));
  const latest = new Map(
    Array.from({ length: KEYS }, (_, k) => [`key-${k}`, `value-29-${k}`.padEnd(40, ".")]),
  );
  for (const records of replicas) {
    expect(new Map(records.map((r) => [r.key, r.value]))).toEqual(latest);
    expect(records.length).toBeLessThan((30 * KEYS) / 2);
  }
  // Whatever offsets two replicas both kept hold the same record.
  const first = new Map(replicas[0]!.map((r) => [r.offset, r.value]));
  for (const records of replicas.slice(1)) {
    for (const r of records) if (first.has(r.offset)) expect(first.get(r.offset)).toBe(r.value);
  }
}, 120_000);

function recordsIn(dataDir: string): StoredRecord[] {
  const manager = LogManager.open({
    logDirs: [dataDir],
    logger: SILENT_LOGGER,
    configForTopic: () => ({ ...DEFAULT_LOG_CONFIG, cleanupPolicy: "compact" }),
  });
  try {
    return readAllRecords(manager.getLog(TOPIC, 0)!);
  } finally {
    manager.close();
  }
}
