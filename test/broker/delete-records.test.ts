/**
 * DeleteRecords on a three-broker cluster (child processes, real ZooKeeper): kafkajs' admin
 * deleteTopicRecords completes only once every replica has the new log start offset, so each
 * broker's copy has dropped its segments below it; a follower that cannot fetch (SIGSTOP)
 * makes the request time out (REQUEST_TIMED_OUT), and once it runs again the same request
 * completes.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import {
  type Cluster,
  consistentMetadata,
  createTopic,
  produceWithKafkajs,
  startCluster,
  until,
} from "./cluster-harness.ts";

const TOPIC = "trim-replicated";
let zkServer: ZooKeeperServer;
let cluster: Cluster;

beforeAll(async () => {
  zkServer = await startZooKeeper();
  cluster = await startCluster(`${zkServer.connectString}/delete-records`);
  await consistentMetadata(cluster, 3);
  await createTopic(cluster.brokers.get(1)!, TOPIC, 1, [{ name: "segment.bytes", value: "2048" }]);
  await consistentMetadata(cluster, 3);
}, 60_000);

afterAll(async () => {
  await cluster.close();
  await zkServer.stop();
});

/** The base offsets of the segments each broker holds for partition 0. */
function segmentBases(): bigint[][] {
  return [...cluster.brokers.values()].map((b) =>
    readdirSync(join(b.dataDir, `${TOPIC}-0`))
      .filter((f) => f.endsWith(".log"))
      .map((f) => BigInt(f.replace(".log", "")))
      .sort((x, y) => (x < y ? -1 : 1)),
  );
}

async function deleteRaw(port: number, offset: bigint, timeoutMs: number) {
  const res = await requestOnce(port, ApiKey.DeleteRecords, 2, {
    timeoutMs,
    topics: [{ name: TOPIC, partitions: [{ partitionIndex: 0, offset }] }],
  });
  return res.topics[0]!.partitions[0]!;
}

test("kafkajs deleteTopicRecords completes once every replica dropped the records", async () => {
  const values = Array.from({ length: 300 }, (_, i) => `value-${i}-${"x".repeat(60)}`);
  for (let i = 0; i < values.length; i += 10) {
    await produceWithKafkajs(cluster, TOPIC, values.slice(i, i + 10));
  }
  // Every replica has every segment before the deletion.
  await until(
    async () => segmentBases().every((b) => b.length > 5 && b[0] === 0n) || undefined,
    20_000,
    "replicas to hold the segments",
  );
  const bootstrap = [...cluster.brokers.values()].map((b) => b.bootstrap);
  const kafka = new Kafka({
    clientId: "delete-records",
    brokers: bootstrap,
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  try {
    // kafkajs' deleteTopicRecords needs the topic's metadata loaded; this loads it.
    expect((await admin.fetchTopicOffsets(TOPIC))[0]).toMatchObject({ low: "0", high: "300" });
    await admin.deleteTopicRecords({ topic: TOPIC, partitions: [{ partition: 0, offset: "200" }] });
    // Done means done on every replica: no wait is needed before looking at the disks.
    for (const bases of segmentBases()) {
      expect(bases[0]).toBeGreaterThan(100n);
      expect(bases[0]).toBeLessThanOrEqual(200n);
    }
    const [low] = await admin.fetchTopicOffsets(TOPIC);
    expect(low).toMatchObject({ partition: 0, low: "200", high: "300" });
  } finally {
    await admin.disconnect();
  }
}, 60_000);

test("a stopped follower makes it REQUEST_TIMED_OUT; running again, it completes", async () => {
  const m = await consistentMetadata(cluster, 3);
  const leaderId = m.topics.find((t) => t.name === TOPIC)!.partitions[0]!.leaderId;
  const leader = cluster.brokers.get(leaderId)!;
  const [followerId] = [...cluster.brokers.keys()].filter((id) => id !== leaderId);
  const follower = cluster.brokers.get(followerId!)!;
  process.kill(follower.pid, "SIGSTOP");
  try {
    const timedOut = await deleteRaw(leader.port, 250n, 1_500);
    expect(timedOut.errorCode).toBe(ErrorCode.REQUEST_TIMED_OUT);
  } finally {
    process.kill(follower.pid, "SIGCONT");
  }
  // The leader moved already; the follower learns it from its next fetch.
  const done = await deleteRaw(leader.port, 250n, 15_000);
  expect(done).toMatchObject({ errorCode: ErrorCode.NONE, lowWatermark: 250n });
  const notLeader = await deleteRaw(follower.port, 260n, 1_000);
  expect(notLeader.errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
}, 60_000);
