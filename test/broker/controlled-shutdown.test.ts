/**
 * Controlled shutdown with clients running: a kafkajs producer (acks=all) and a two-member
 * consumer group keep working while SIGTERM stops a broker that leads partitions; no send
 * fails, and every acknowledged record reaches the group. Broker epochs (KIP-380): a broker
 * restarted refuses controller requests meant for its earlier registration, and the
 * controller refuses that registration's ControlledShutdown.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Consumer, Kafka, logLevel, type Producer } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import {
  type Cluster,
  consistentMetadata,
  createTopic,
  metadata,
  startCluster,
  until,
} from "./cluster-harness.ts";

let zkServer: ZooKeeperServer;
let cluster: Cluster;

beforeAll(async () => {
  zkServer = await startZooKeeper();
  cluster = await startCluster(`${zkServer.connectString}/controlled`);
  await consistentMetadata(cluster, 3);
}, 60_000);

afterAll(async () => {
  await cluster?.close();
  await zkServer?.stop();
}, 30_000);

function client(id: string): Kafka {
  return new Kafka({
    clientId: id,
    brokers: [...cluster.brokers.values()].map((b) => b.bootstrap),
    logLevel: logLevel.NOTHING,
    retry: { retries: 10, initialRetryTime: 100 },
  });
}

test("SIGTERM of a leader while a producer and a consumer group run: no failed send, nothing lost", async () => {
  await createTopic(cluster.brokers.get(1)!, "steady", 3, [
    { name: "min.insync.replicas", value: "2" },
  ]);
  const m = await consistentMetadata(cluster, 3);
  const leaving = m.topics.find((t) => t.name === "steady")!.partitions[0]!.leaderId;
  const seen = new Set<string>();
  const consumers: Consumer[] = [];
  for (const i of [1, 2]) {
    const consumer = client(`member-${i}`).consumer({
      groupId: "steady-group",
      sessionTimeout: 10_000,
    });
    await consumer.connect();
    await consumer.subscribe({ topic: "steady", fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        seen.add(message.value!.toString());
      },
    });
    consumers.push(consumer);
  }
  const producer: Producer = client("steady-producer").producer();
  await producer.connect();
  const acknowledged: string[] = [];
  let failures = 0;
  let producing = true;
  const loop = (async () => {
    for (let i = 0; producing; i++) {
      const value = `v${i}`;
      try {
        await producer.send({ topic: "steady", acks: -1, messages: [{ key: value, value }] });
        acknowledged.push(value);
      } catch {
        failures++;
      }
    }
  })();
  try {
    // acks=all one record at a time waits for followers' fetches: a few per second under load.
    await until(async () => (acknowledged.length > 5 ? true : undefined), 45_000, "records before");
    expect(await cluster.brokers.get(leaving)!.terminate()).toBe(0);
    const count = acknowledged.length;
    await until(
      async () => (acknowledged.length > count + 5 ? true : undefined),
      45_000,
      "records after the shutdown",
    );
    producing = false;
    await loop;
    expect(failures).toBe(0);
    await until(
      async () => (acknowledged.every((v) => seen.has(v)) ? true : undefined),
      30_000,
      "every acknowledged record consumed by the group",
    );
  } finally {
    producing = false;
    await loop;
    await producer.disconnect();
    await Promise.all(consumers.map((c) => c.disconnect()));
  }
}, 150_000);

/** The broker epoch (KIP-380): the czxid of the broker's registration znode. */
async function brokerEpoch(id: number): Promise<bigint> {
  return (await cluster.zk.getData(`/brokers/ids/${id}`)).stat.czxid;
}

test("a restarted broker refuses controller requests for its earlier epoch, the controller its shutdown", async () => {
  const running = [...cluster.brokers].filter(([, b]) => b.running);
  const controllerId = (await metadata(running[0]![1])).controllerId;
  const [id, broker] = running.find(([i]) => i !== controllerId)!;
  const before = await brokerEpoch(id);
  expect(await broker.terminate()).toBe(0);
  const restarted = await broker.restart();
  cluster.brokers.set(id, restarted);
  await until(
    async () => ((await brokerEpoch(id).catch(() => before)) > before ? true : undefined),
    30_000,
    `broker ${id} registered again`,
  );
  const after = await brokerEpoch(id);
  const epochText = (await cluster.zk.getData("/controller_epoch")).data;
  const controllerEpoch = Number(new TextDecoder().decode(epochText));
  const control = { controllerId, controllerEpoch, brokerEpoch: before };
  const stop = { ...control, deletePartitions: false, topicStates: [] };
  const port = restarted.port;
  const stale = ErrorCode.STALE_BROKER_EPOCH;
  expect((await requestOnce(port, ApiKey.StopReplica, 3, stop)).errorCode).toBe(stale);
  const leaderAndIsr = { ...control, topicStates: [], liveLeaders: [] };
  expect((await requestOnce(port, ApiKey.LeaderAndIsr, 7, leaderAndIsr)).errorCode).toBe(stale);
  const update = { ...control, topicStates: [], liveBrokers: [] };
  expect((await requestOnce(port, ApiKey.UpdateMetadata, 7, update)).errorCode).toBe(stale);
  // The current epoch is heard (a StopReplica of nothing changes nothing).
  const current = { ...stop, brokerEpoch: after };
  expect((await requestOnce(port, ApiKey.StopReplica, 3, current)).errorCode).toBe(ErrorCode.NONE);
  const shutdown = { brokerId: id, brokerEpoch: before };
  const controllerPort = cluster.brokers.get(controllerId)!.port;
  const refused = await requestOnce(controllerPort, ApiKey.ControlledShutdown, 3, shutdown);
  expect(refused.errorCode).toBe(stale);
  // An ISR change from the earlier registration is refused whole, as Kafka's controller does.
  const alter = { brokerId: id, brokerEpoch: before, topics: [] };
  const alterRefused = await requestOnce(controllerPort, ApiKey.AlterPartition, 2, alter);
  expect(alterRefused.errorCode).toBe(stale);
  await consistentMetadata(cluster, running.length, 30_000);
}, 90_000);
