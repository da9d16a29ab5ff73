/**
 * Forged inter-broker requests against a ZooKeeper-mode broker without an authorizer (issue 16,
 * beyond Kafka): controller requests are believed only with the controller and epoch that
 * ZooKeeper names, a StopReplica may not delete a partition ZooKeeper still assigns here, and a
 * replica fetch must come from another live broker. Each forged request is sent raw by an
 * anonymous client, as an attacker on the network would; the records must survive and the real
 * controller must still be obeyed afterwards.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { encodeTopicAssignment, topicPath } from "../../src/metadata/kafka-znodes.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import {
  type InProcessBroker,
  removeDir,
  startInProcessBroker,
} from "../support/broker-harness.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { waitUntil } from "../support/wait-until.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";

let zooKeeper: ZooKeeperServer;
let broker: InProcessBroker;
let kafka: Kafka;
/** The controller epoch ZooKeeper holds: a fresh cluster's first controller has 1. */
const EPOCH = 1;

beforeAll(async () => {
  zooKeeper = await startZooKeeper();
  broker = await startInProcessBroker({
    settings: {
      "zookeeper.connect": `${zooKeeper.connectString}/forged`,
      "zookeeper.session.timeout.ms": "6000",
      "broker.id": "0",
      // The check consumers are alone in their groups.
      "group.initial.rebalance.delay.ms": "0",
    },
  });
  kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: "kept", numPartitions: 1 }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic: "kept", messages: [{ value: "one" }, { value: "two" }] });
  await producer.disconnect();
}, 90_000);

afterAll(async () => {
  await broker?.stop();
  if (broker) removeDir(broker.dataDir);
  await zooKeeper?.stop();
});

const port = () => broker.broker.listeners[0]!.port;

function stopReplica(controllerId: number, controllerEpoch: number) {
  return requestOnce(port(), ApiKey.StopReplica, 3, {
    controllerId,
    controllerEpoch,
    brokerEpoch: -1n,
    topicStates: [
      {
        topicName: "kept",
        partitionStates: [{ partitionIndex: 0, leaderEpoch: -2, deletePartition: true }],
      },
    ],
  });
}

function updateMetadata(controllerId: number, controllerEpoch: number) {
  return requestOnce(port(), ApiKey.UpdateMetadata, 8, {
    controllerId,
    controllerEpoch,
    brokerEpoch: -1n,
    topicStates: [],
    liveBrokers: [],
  });
}

/** The topic's records, read by a consumer: the forged requests must have deleted nothing. */
async function records(topic: string, count: number): Promise<string[]> {
  const consumer = kafka.consumer({ groupId: `check-${topic}-${Date.now()}` });
  const seen: string[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      seen.push(String(message.value));
    },
  });
  await waitUntil(() => seen.length >= count, 30_000, `${count} records of ${topic}`, 50);
  await consumer.disconnect();
  return seen;
}

test("a controller epoch ZooKeeper has not got is refused, and the real controller is still obeyed", async () => {
  const forged = await stopReplica(0, 999_999);
  expect(forged.errorCode).toBe(ErrorCode.STALE_CONTROLLER_EPOCH);
  expect((await updateMetadata(0, 999_999)).errorCode).toBe(ErrorCode.STALE_CONTROLLER_EPOCH);
  const leaderAndIsr = await requestOnce(port(), ApiKey.LeaderAndIsr, 7, {
    controllerId: 0,
    controllerEpoch: 999_999,
    brokerEpoch: -1n,
    type: 0,
    topicStates: [],
    liveLeaders: [],
  });
  expect(leaderAndIsr.errorCode).toBe(ErrorCode.STALE_CONTROLLER_EPOCH);
  // Another broker's id with the current epoch is not the controller either; an older epoch
  // is a deposed controller's.
  expect((await updateMetadata(5, EPOCH)).errorCode).toBe(ErrorCode.STALE_CONTROLLER_EPOCH);
  expect((await updateMetadata(0, EPOCH - 1)).errorCode).toBe(ErrorCode.STALE_CONTROLLER_EPOCH);
  expect(await records("kept", 2)).toEqual(["one", "two"]);
  // The real controller (epoch 1) still leads: a new topic gets its leader through it.
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [{ topic: "after", numPartitions: 1 }],
    waitForLeaders: true,
  });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic: "after", messages: [{ value: "three" }] });
  await producer.disconnect();
  expect(await records("after", 1)).toEqual(["three"]);
}, 90_000);

test("a StopReplica deleting a partition ZooKeeper still assigns here is refused, even with the right epoch", async () => {
  const forged = await stopReplica(0, EPOCH);
  expect(forged.errorCode).toBe(ErrorCode.NONE);
  expect(forged.partitionErrors).toEqual([
    { topicName: "kept", partitionIndex: 0, errorCode: ErrorCode.STALE_CONTROLLER_EPOCH },
  ]);
  expect(await records("kept", 2)).toEqual(["one", "two"]);
  const logged = broker.logger.lines.join("\n");
  expect(logged).toContain("Refused StopReplica deleting partitions ZooKeeper still assigns");
}, 60_000);

/** A follower's fetch of `topic` partition 0 from offset `fetchOffset`, sent as `replicaId`. */
function replicaFetch(replicaId: number, topic: string, fetchOffset: bigint) {
  return requestOnce(port(), ApiKey.Fetch, 11, {
    replicaId,
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 1 << 20,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [
      {
        topic,
        partitions: [
          {
            partition: 0,
            currentLeaderEpoch: -1,
            fetchOffset,
            lastFetchedEpoch: -1,
            logStartOffset: -1n,
            partitionMaxBytes: 1 << 20,
          },
        ],
      },
    ],
    forgottenTopicsData: [],
    rackId: "",
  });
}

test("a replica fetch in the name of a dead replica, or of this broker, is refused; the ISR stays", async () => {
  // Assigned to this broker and to broker 3, which never registered: the ISR is [0].
  const zk = await ZooKeeperClient.connect(`${zooKeeper.connectString}/forged`, {
    sessionTimeoutMs: 6_000,
    connectTimeoutMs: 5_000,
  });
  try {
    const assignment = { assignment: [[0, 3]], topicIdBase64: null };
    await zk.create(topicPath("dead-replica"), encodeTopicAssignment(assignment));
  } finally {
    await zk.close();
  }
  const admin = kafka.admin();
  await admin.connect();
  // Unknown until the controller has seen the znode: kafkajs throws meanwhile.
  const isr = async () => {
    const described = await admin
      .fetchTopicMetadata({ topics: ["dead-replica"] })
      .catch(() => null);
    return described?.topics[0]?.partitions[0]?.isr ?? [];
  };
  await waitUntil(async () => (await isr()).includes(0), 30_000, "a leader for dead-replica", 100);
  for (const replicaId of [3, 0, 7]) {
    const fetched = await replicaFetch(replicaId, "dead-replica", 0n);
    const partition = fetched.responses[0]!.partitions[0]!;
    expect({ replicaId, error: partition.errorCode }).toEqual({
      replicaId,
      error: ErrorCode.NOT_LEADER_OR_FOLLOWER,
    });
  }
  expect(await isr()).toEqual([0]);
  await admin.disconnect();
}, 60_000);
