/**
 * The controller's requests to a broker (UpdateMetadata, LeaderAndIsr, StopReplica), sent raw
 * at their lowest and highest versions to one broker: what they change in its Metadata
 * answers, their response shapes, and the refusal of a stale controller's requests.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey, type MetadataResponse } from "../../src/protocol/generated/index.ts";
import { requestOnce, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

let b: TestBroker;
let topicId: Uint8Array;

beforeAll(async () => {
  b = await startTestBroker({ "broker.id": "1" });
  const created = await requestOnce(b.port, ApiKey.CreateTopics, 7, {
    topics: [{ name: "t", numPartitions: 2, replicationFactor: 1, assignments: [], configs: [] }],
    timeoutMs: 5_000,
    validateOnly: false,
  });
  topicId = created.topics[0]!.topicId;
}, 60_000);

afterAll(async () => {
  await b.stop();
});

function metadata(): Promise<MetadataResponse> {
  return requestOnce(b.port, ApiKey.Metadata, 12, { topics: null, allowAutoTopicCreation: false });
}

const partition0 = (m: MetadataResponse) => m.topics.find((t) => t.name === "t")!.partitions[0]!;

function updateMetadataV8(controllerEpoch: number, leaderEpoch: number) {
  return requestOnce(b.port, ApiKey.UpdateMetadata, 8, {
    controllerId: 9,
    controllerEpoch,
    brokerEpoch: -1n,
    topicStates: [
      {
        topicName: "t",
        topicId,
        partitionStates: [
          {
            partitionIndex: 0,
            controllerEpoch,
            leader: 5,
            leaderEpoch,
            isr: [5, 1],
            zkVersion: 4,
            replicas: [1, 5],
            offlineReplicas: [],
          },
        ],
      },
    ],
    liveBrokers: [
      {
        id: 1,
        endpoints: [{ host: "127.0.0.1", port: b.port, listener: "PLAINTEXT" }],
        rack: null,
      },
      { id: 5, endpoints: [{ host: "10.0.0.5", port: 9092, listener: "PLAINTEXT" }], rack: "r5" },
    ],
  });
}

test("UpdateMetadata v8: live brokers, controller and partition states reach Metadata", async () => {
  expect((await updateMetadataV8(3, 7)).errorCode).toBe(ErrorCode.NONE);
  const m = await metadata();
  expect(m.controllerId).toBe(9);
  expect(m.brokers.map((x) => [x.nodeId, x.host, x.rack])).toEqual([
    [1, "127.0.0.1", null],
    [5, "10.0.0.5", "r5"],
  ]);
  expect(partition0(m)).toMatchObject({
    leaderId: 5,
    leaderEpoch: 7,
    isrNodes: [5, 1],
    replicaNodes: [1, 5],
  });
  // Partition 1 was not mentioned: still as its assignment says.
  expect(m.topics.find((t) => t.name === "t")!.partitions[1]!.leaderId).toBe(1);
});

test("a request from an older controller epoch is STALE_CONTROLLER_EPOCH and changes nothing", async () => {
  expect((await updateMetadataV8(2, 99)).errorCode).toBe(ErrorCode.STALE_CONTROLLER_EPOCH);
  expect(partition0(await metadata()).leaderEpoch).toBe(7);
  const stale = await requestOnce(b.port, ApiKey.LeaderAndIsr, 7, {
    controllerId: 9,
    controllerEpoch: 2,
    topicStates: [],
    liveLeaders: [],
  });
  expect(stale.errorCode).toBe(ErrorCode.STALE_CONTROLLER_EPOCH);
});

test("UpdateMetadata v0: one host and port per broker, ungrouped states", async () => {
  const res = await requestOnce(b.port, ApiKey.UpdateMetadata, 0, {
    controllerId: 9,
    controllerEpoch: 3,
    ungroupedPartitionStates: [
      {
        topicName: "t",
        partitionIndex: 0,
        controllerEpoch: 3,
        leader: 1,
        leaderEpoch: 8,
        isr: [1],
        zkVersion: 5,
        replicas: [1, 5],
      },
    ],
    liveBrokers: [{ id: 1, v0Host: "127.0.0.1", v0Port: b.port }],
  });
  expect(res.errorCode).toBe(ErrorCode.NONE);
  const m = await metadata();
  expect(m.brokers.map((x) => x.nodeId)).toEqual([1]);
  expect(partition0(m)).toMatchObject({ leaderId: 1, leaderEpoch: 8, isrNodes: [1] });
});

test("LeaderAndIsr v7 answers by topic id; an older leader epoch than the cache's is ignored", async () => {
  const send = (leaderEpoch: number) =>
    requestOnce(b.port, ApiKey.LeaderAndIsr, 7, {
      controllerId: 9,
      controllerEpoch: 3,
      brokerEpoch: -1n,
      type: 0,
      topicStates: [
        {
          topicName: "t",
          topicId,
          partitionStates: [
            {
              partitionIndex: 0,
              controllerEpoch: 3,
              leader: 1,
              leaderEpoch,
              isr: [1],
              partitionEpoch: 6,
              replicas: [1],
              addingReplicas: [],
              removingReplicas: [],
              isNew: false,
            },
          ],
        },
      ],
      liveLeaders: [{ brokerId: 1, hostName: "127.0.0.1", port: b.port }],
    });
  const res = await send(10);
  expect(res.errorCode).toBe(ErrorCode.NONE);
  expect(res.topics).toHaveLength(1);
  expect(Buffer.from(res.topics[0]!.topicId).equals(Buffer.from(topicId))).toBe(true);
  expect(res.topics[0]!.partitionErrors.map((p) => p.partitionIndex)).toEqual([0]);
  expect(partition0(await metadata()).leaderEpoch).toBe(10);
  await send(9);
  expect(partition0(await metadata()).leaderEpoch).toBe(10);
});

test("LeaderAndIsr v0 names topics in ungrouped states and in its answer", async () => {
  const res = await requestOnce(b.port, ApiKey.LeaderAndIsr, 0, {
    controllerId: 9,
    controllerEpoch: 3,
    ungroupedPartitionStates: [
      {
        topicName: "t",
        partitionIndex: 1,
        controllerEpoch: 3,
        leader: 1,
        leaderEpoch: 2,
        isr: [1],
        partitionEpoch: 1,
        replicas: [1],
      },
    ],
    liveLeaders: [],
  });
  expect(res.errorCode).toBe(ErrorCode.NONE);
  expect(res.partitionErrors).toEqual([{ topicName: "t", partitionIndex: 1, errorCode: 0 }]);
  expect((await metadata()).topics.find((t) => t.name === "t")!.partitions[1]!.leaderEpoch).toBe(2);
});

test("StopReplica v4 with deletion and v0 without: every partition answered", async () => {
  const v4 = await requestOnce(b.port, ApiKey.StopReplica, 4, {
    controllerId: 9,
    controllerEpoch: 3,
    brokerEpoch: -1n,
    topicStates: [
      {
        topicName: "gone",
        partitionStates: [{ partitionIndex: 0, leaderEpoch: -2, deletePartition: true }],
      },
    ],
  });
  expect(v4.errorCode).toBe(ErrorCode.NONE);
  expect(v4.partitionErrors).toEqual([{ topicName: "gone", partitionIndex: 0, errorCode: 0 }]);
  const stale = await requestOnce(b.port, ApiKey.StopReplica, 0, {
    controllerId: 9,
    controllerEpoch: 1,
    deletePartitions: false,
    ungroupedPartitions: [{ topicName: "t", partitionIndex: 0 }],
  });
  expect(stale.errorCode).toBe(ErrorCode.STALE_CONTROLLER_EPOCH);
});

test("ControlledShutdown and AlterPartition: NOT_CONTROLLER on a broker without a controller", async () => {
  const shutdown = await requestOnce(b.port, ApiKey.ControlledShutdown, 3, { brokerId: 1 });
  expect(shutdown).toMatchObject({ errorCode: ErrorCode.NOT_CONTROLLER, remainingPartitions: [] });
  const v0 = await requestOnce(b.port, ApiKey.ControlledShutdown, 0, { brokerId: 1 });
  expect(v0.errorCode).toBe(ErrorCode.NOT_CONTROLLER);
  const alter = await requestOnce(b.port, ApiKey.AlterPartition, 0, {
    brokerId: 1,
    brokerEpoch: -1n,
    topics: [
      {
        topicName: "t",
        partitions: [{ partitionIndex: 0, leaderEpoch: 10, newIsr: [1], partitionEpoch: 6 }],
      },
    ],
  });
  expect(alter).toMatchObject({ errorCode: ErrorCode.NOT_CONTROLLER, topics: [] });
});

test("a leader that is not a live broker: LEADER_NOT_AVAILABLE, leader -1, offline replicas", async () => {
  const res = await requestOnce(b.port, ApiKey.UpdateMetadata, 8, {
    controllerId: 9,
    controllerEpoch: 4,
    brokerEpoch: -1n,
    topicStates: [
      {
        topicName: "t",
        topicId,
        partitionStates: [
          {
            partitionIndex: 1,
            controllerEpoch: 4,
            leader: 7,
            leaderEpoch: 20,
            isr: [7],
            zkVersion: 9,
            replicas: [1, 7],
            offlineReplicas: [7],
          },
        ],
      },
    ],
    liveBrokers: [
      {
        id: 1,
        endpoints: [{ host: "127.0.0.1", port: b.port, listener: "PLAINTEXT" }],
        rack: null,
      },
    ],
  });
  expect(res.errorCode).toBe(ErrorCode.NONE);
  const p1 = (await metadata()).topics.find((t) => t.name === "t")!.partitions[1]!;
  expect(p1).toMatchObject({
    errorCode: ErrorCode.LEADER_NOT_AVAILABLE,
    leaderId: -1,
    leaderEpoch: 20,
    isrNodes: [7],
    offlineReplicas: [7],
  });
  const v4 = await requestOnce(b.port, ApiKey.Metadata, 4, { topics: [{ name: "t" }] });
  expect(v4.topics[0]!.partitions[1]).toMatchObject({
    errorCode: ErrorCode.LEADER_NOT_AVAILABLE,
    leaderId: -1,
  });
});

test("embedded: a StopReplica may not delete a partition of an existing topic (there is no controller)", async () => {
  const stop = await requestOnce(b.port, ApiKey.StopReplica, 3, {
    controllerId: 9,
    controllerEpoch: 1_000_000,
    brokerEpoch: -1n,
    topicStates: [
      {
        topicName: "t",
        partitionStates: [{ partitionIndex: 1, leaderEpoch: -2, deletePartition: true }],
      },
    ],
  });
  expect(stop.partitionErrors).toEqual([
    { topicName: "t", partitionIndex: 1, errorCode: ErrorCode.STALE_CONTROLLER_EPOCH },
  ]);
  expect((await metadata()).topics.find((t) => t.name === "t")?.partitions.length).toBe(2);
});
