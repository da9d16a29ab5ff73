/**
 * Three brokers while their only ZooKeeper restarts. ZooKeeper restores sessions from its
 * snapshot and restarts their clocks, so sessions survive even an outage longer than their
 * timeout: the brokers stay registered, the controller stays, and a leader killed afterwards
 * (its session now truly ending) is still replaced.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import {
  type Cluster,
  consistentMetadata,
  createTopic,
  produceWithKafkajs,
  SESSION_TIMEOUT_MS,
  startCluster,
} from "./cluster-harness.ts";

let zkServer: ZooKeeperServer;
let cluster: Cluster;
const connect = () => `${zkServer.connectString}/restart`;

beforeAll(async () => {
  zkServer = await startZooKeeper();
  cluster = await startCluster(connect());
  await consistentMetadata(cluster, 3);
}, 60_000);

afterAll(async () => {
  await cluster?.close();
  await zkServer?.stop();
}, 30_000);

async function controllerEpoch(): Promise<number> {
  return Number(new TextDecoder().decode((await cluster.zk.getData("/controller_epoch")).data));
}

test("a ZooKeeper restart within the session timeout keeps the controller", async () => {
  await createTopic(cluster.brokers.get(1)!, "kept", 3);
  const before = await consistentMetadata(cluster, 3);
  const epoch = await controllerEpoch();
  await zkServer.kill();
  await zkServer.restart();
  const after = await consistentMetadata(cluster, 3, 20_000);
  expect(after.controllerId).toBe(before.controllerId);
  expect(await controllerEpoch()).toBe(epoch);
  await produceWithKafkajs(cluster, "kept", ["after a short outage"]);
}, 60_000);

test("an outage past the session timeout keeps sessions; a leader killed after is replaced", async () => {
  const before = await consistentMetadata(cluster, 3);
  const epoch = await controllerEpoch();
  await zkServer.kill();
  await Bun.sleep(SESSION_TIMEOUT_MS * 2);
  await zkServer.restart();
  const after = await consistentMetadata(cluster, 3, 30_000);
  expect(after.controllerId).toBe(before.controllerId);
  expect(await controllerEpoch()).toBe(epoch);
  const leader = after.topics.find((t) => t.name === "kept")!.partitions[0]!.leaderId;
  await cluster.brokers.get(leader)!.kill9();
  const moved = await consistentMetadata(cluster, 2, SESSION_TIMEOUT_MS + 15_000);
  expect(moved.topics.find((t) => t.name === "kept")!.partitions[0]!.leaderId).not.toBe(leader);
  await produceWithKafkajs(cluster, "kept", ["after the leader died"]);
}, 90_000);
