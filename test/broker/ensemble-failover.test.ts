/**
 * Three brokers on a three-node ZooKeeper ensemble: losing a ZooKeeper node while producing
 * keeps the cluster working (sessions move to the other nodes, the controller stays), and a
 * leader killed afterwards is still replaced within the session timeout.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startZooKeeperEnsemble, type ZooKeeperEnsemble } from "../support/zookeeper-server.ts";
import {
  type Cluster,
  consistentMetadata,
  createTopic,
  produceWithKafkajs,
  SESSION_TIMEOUT_MS,
  startCluster,
} from "./cluster-harness.ts";

let ensemble: ZooKeeperEnsemble;
let cluster: Cluster;

beforeAll(async () => {
  ensemble = await startZooKeeperEnsemble(3);
  cluster = await startCluster(`${ensemble.connectString}/ensemble`);
}, 60_000);

afterAll(async () => {
  await cluster?.close();
  await ensemble?.stop();
}, 30_000);

test("a ZooKeeper node dies while producing; then a leader dies and is replaced", async () => {
  await consistentMetadata(cluster, 3);
  await createTopic(cluster.brokers.get(3)!, "ensemble", 3);
  const before = await consistentMetadata(cluster, 3);
  let produced = 0;
  let producing = true;
  const producer = (async () => {
    while (producing) {
      const sent = await produceWithKafkajs(cluster, "ensemble", [`r${produced}`]);
      expect(sent[0]!.errorCode).toBe(0);
      produced++;
    }
  })();
  await Bun.sleep(500);
  await ensemble.nodes[0]!.kill();
  await Bun.sleep(SESSION_TIMEOUT_MS + 1_000);
  // No broker lost its session: all three still registered, one controller, same answers.
  const during = await consistentMetadata(cluster, 3);
  expect(during.controllerId).toBe(before.controllerId);
  const leader = during.topics.find((t) => t.name === "ensemble")!.partitions[0]!.leaderId;
  await cluster.brokers.get(leader)!.kill9();
  const after = await consistentMetadata(cluster, 2, SESSION_TIMEOUT_MS + 10_000);
  const moved = after.topics.find((t) => t.name === "ensemble")!.partitions[0]!;
  expect(moved.leaderId).not.toBe(leader);
  expect(moved.leaderId).toBeGreaterThanOrEqual(0);
  producing = false;
  await producer;
  expect(produced).toBeGreaterThan(5);
}, 90_000);
