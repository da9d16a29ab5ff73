/**
 * Share groups in a three-broker cluster, durable across failover (docs/share-groups.md,
 * "Durability"): three Kafka 4.4 KafkaShareConsumers (explicit acknowledgement) read one
 * partition while the test produces; mid-way the partition's leader is killed with SIGKILL
 * (its share state must come back from the share coordinator, in __share_group_state), and
 * later, with that broker back, the share group's coordinator is killed (the members rejoin
 * the next coordinator). Across the run no offset is skipped, none is delivered again once
 * its ACCEPT was confirmed, none is confirmed twice, and at the end the share partition's
 * start offset on the last leader is past every record.
 *
 * And AlterShareGroupOffsets sent to the group's coordinator, which does not lead the
 * partition: the share coordinator initializes the state under a new state epoch, every broker
 * describes the new start, a leader still holding the old state is fenced on its next write
 * (the acknowledgement fails), and the next member's fetch starts at the new offset.
 * DeleteShareGroupOffsets there likewise: the leader's late write is fenced instead of bringing
 * the deleted state back; DeleteGroups of the share group there too (NON_EMPTY_GROUP while it
 * has a member), and a new member of the id starts afresh. And with
 * share.auto.offset.reset=latest the group coordinator starts the share partition at the log end
 * when it assigns it, so records produced between the assignment and the member's first fetch
 * are delivered, and a partition added to a consumed topic starts at its log start; a heartbeat
 * does not wait for that longer than its bound when the share coordinator is frozen (SIGSTOP).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { coordinatorKey } from "../../src/coordinator/share-state-log.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import type { ChildBroker } from "../support/child-broker.ts";
import { ensureJava4Built, Java4Process } from "../support/java4-client.ts";
import {
  acquiredRecords,
  KafkaClient,
  requestOnce,
  shareFetchPartition0,
} from "../support/kafka-client.ts";
import { waitUntil } from "../support/wait-until.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import {
  type Cluster,
  consistentMetadata,
  createTopicWithAssignment,
  metadata,
  preferredLeaders,
  produceWithKafkajs,
  runningBootstrap,
  SESSION_TIMEOUT_MS,
  startCluster,
} from "./cluster-harness.ts";

const TOPIC = "share-failover";
const MEMBERS = 3;
const PHASE_RECORDS = 400;

let zkServer: ZooKeeperServer;
let cluster: Cluster;

beforeAll(async () => {
  ensureJava4Built("ShareFailover");
  zkServer = await startZooKeeper();
  cluster = await startCluster(`${zkServer.connectString}/share-failover`, {
    "group.share.heartbeat.interval.ms": "500",
    "share.coordinator.state.topic.num.partitions": "3",
  });
  await consistentMetadata(cluster, 3);
}, 300_000);

afterAll(async () => {
  await cluster?.close();
  await zkServer?.stop();
}, 30_000);

async function leaderOf(topic: string): Promise<number> {
  const m = await metadata([...cluster.brokers.values()].find((b) => b.running)!);
  return m.topics.find((t) => t.name === topic)!.partitions[0]!.leaderId;
}

async function groupCoordinatorOf(group: string): Promise<number> {
  const broker = [...cluster.brokers.values()].find((b) => b.running)!;
  const res = await requestOnce(broker.port, ApiKey.FindCoordinator, 3, { key: group, keyType: 0 });
  expect(res.errorCode).toBe(ErrorCode.NONE);
  return res.nodeId;
}

/** A group id that `nodeId` coordinates. */
async function groupOn(nodeId: number, prefix = "share"): Promise<string> {
  for (let i = 0; i < 100; i++) {
    if ((await groupCoordinatorOf(`${prefix}-${i}`)) === nodeId) return `${prefix}-${i}`;
  }
  throw new Error(`no group on broker ${nodeId}`);
}

/**
 * The share partition's start offset as `broker` describes it (null: no state): asked for every
 * stated partition, or for the topic's partition 0 by name (`named`).
 */
async function startOffsetOn(broker: ChildBroker, group: string, named = false) {
  const topics = named ? [{ topicName: TOPIC, partitions: [0] }] : null;
  const res = await requestOnce(broker.port, ApiKey.DescribeShareGroupOffsets, 1, {
    groups: [{ groupId: group, topics }],
  });
  const p = res.groups[0]?.topics.find((t) => t.topicName === TOPIC)?.partitions[0];
  return p === undefined || p.errorCode !== ErrorCode.NONE ? null : p.startOffset;
}

async function acceptedAtLeast(java: Java4Process, n: number): Promise<void> {
  const count = () =>
    Math.max(0, ...java.lines.filter((l) => l.startsWith("accepted ")).map((l) => +l.slice(9)));
  await waitUntil(() => count() >= n, 60_000, `${n} records accepted`);
}

test("share-partition state survives the leader's and the coordinator's kill -9", async () => {
  const b1 = cluster.brokers.get(1)!;
  await createTopicWithAssignment(b1, TOPIC, [[1, 2, 3]]);
  await consistentMetadata(cluster, 3);
  const group = await groupOn(3);
  const java = new Java4Process("ShareConsumers", [
    "failover",
    b1.bootstrap,
    TOPIC,
    group,
    String(MEMBERS),
  ]);
  try {
    await java.line("READY", 90_000);
    // Records come only once the leader has the group's state (started at the log end, 0).
    await waitUntil(async () => (await startOffsetOn(b1, group)) === 0n, 30_000, "share state");
    const values = (phase: number) =>
      Array.from({ length: PHASE_RECORDS }, (_, i) => `${phase}-${i}`);
    await produceWithKafkajs(cluster, TOPIC, values(1));
    await acceptedAtLeast(java, PHASE_RECORDS / 2);

    // The partition leader dies with records in flight.
    await b1.kill9();
    await produceWithKafkajs(cluster, TOPIC, values(2));
    await acceptedAtLeast(java, PHASE_RECORDS + PHASE_RECORDS / 2);
    cluster.brokers.set(1, await b1.restart());
    await consistentMetadata(cluster, 3, SESSION_TIMEOUT_MS * 2 + 15_000);

    // The group's coordinator dies (not the partition's new leader: its own failover above).
    const coordinatorId = await groupCoordinatorOf(group);
    const leaderId = await leaderOf(TOPIC);
    expect(leaderId).not.toBe(1);
    const coordinator = cluster.brokers.get(coordinatorId)!;
    if (coordinatorId !== leaderId) await coordinator.kill9();
    console.log(`killed broker 1 (leader), then ${coordinatorId} (group coordinator)`);
    await produceWithKafkajs(cluster, TOPIC, values(3));

    const end = 3 * PHASE_RECORDS;
    java.send(`expect ${end}`);
    expect(await java.exited).toBe(0);
    const report = java.lines.slice(java.lines.findIndex((l) => l.startsWith("skipped")));
    console.log(report.join("\n"));
    expect(report).toContain("skipped 0");
    expect(report).toContain("delivered-after-accept 0");
    expect(report).toContain("accepted-twice 0");
    // In flight at the first kill: redelivered by the next leader.
    const redelivered = /^redelivered (\d+) count-kept (\d+)$/.exec(report[4]!)!;
    expect(Number(redelivered[1])).toBeGreaterThan(0);
    // Their acquisitions were stored: they come back with a higher delivery count.
    expect(Number(redelivered[2])).toBeGreaterThan(0);
    // Every record done: the share partition starts past all of them on the last leader.
    const last = cluster.brokers.get(await leaderOf(TOPIC))!;
    expect(await startOffsetOn(last, group)).toBe(BigInt(end));
    // Every broker answers alike: the start offset is the share coordinator's
    // (ReadShareGroupStateSummary), not the leader's memory.
    for (const other of cluster.brokers.values()) {
      if (other.running) expect(await startOffsetOn(other, group, true)).toBe(BigInt(end));
    }
    if (!coordinator.running) cluster.brokers.set(coordinatorId, await coordinator.restart());
  } finally {
    java.kill();
  }
}, 300_000);

const RESET_TOPIC = "share-reset";
const ACCEPT = 1;

/** Requests of one group: membership at its coordinator, share sessions on `leader`. */
function resetRequests(
  group: string,
  coordinator: ChildBroker,
  leader: KafkaClient,
  topicId: Uint8Array,
  topicName = RESET_TOPIC,
) {
  const heartbeat = (memberId: string, memberEpoch: number) =>
    requestOnce(coordinator.port, ApiKey.ShareGroupHeartbeat, 1, {
      groupId: group,
      memberId,
      memberEpoch,
      subscribedTopicNames: memberEpoch === 0 ? [topicName] : null,
    });
  const fetch = async (memberId: string, epoch: number) => {
    const maxWaitMs = epoch === 0 ? 0 : 2_000;
    const res = await shareFetchPartition0(leader, {
      groupId: group,
      memberId,
      topicId,
      epoch,
      maxWaitMs,
    });
    expect(res.errorCode).toBe(ErrorCode.NONE);
    return acquiredRecords(res);
  };
  const accept = async (memberId: string, epoch: number, first: bigint, last: bigint) => {
    const res = await leader.request(ApiKey.ShareAcknowledge, 1, {
      groupId: group,
      memberId,
      shareSessionEpoch: epoch,
      topics: [
        {
          topicId,
          partitions: [
            {
              partitionIndex: 0,
              acknowledgementBatches: [
                { firstOffset: first, lastOffset: last, acknowledgeTypes: [ACCEPT] },
              ],
            },
          ],
        },
      ],
    });
    return res.responses[0]!.partitions[0]!.errorCode;
  };
  const alter = (startOffset: bigint) =>
    requestOnce(coordinator.port, ApiKey.AlterShareGroupOffsets, 0, {
      groupId: group,
      topics: [{ topicName, partitions: [{ partitionIndex: 0, startOffset }] }],
    });
  const startEverywhere = async () => {
    const starts = [];
    for (const b of cluster.brokers.values()) {
      const res = await requestOnce(b.port, ApiKey.DescribeShareGroupOffsets, 1, {
        groups: [{ groupId: group, topics: [{ topicName, partitions: [0] }] }],
      });
      starts.push(res.groups[0]!.topics[0]!.partitions[0]!.startOffset);
    }
    return starts;
  };
  return { heartbeat, fetch, accept, alter, startEverywhere };
}

/**
 * A share group coordinated by a broker that does not lead `topic`'s one partition, and its
 * requests (resetRequests) with a connection to the leader, which the caller closes.
 */
async function groupApartFromLeader(topic: string, groupPrefix?: string) {
  const leaderId = await leaderOf(topic);
  const coordinatorId = leaderId === 1 ? 2 : 1;
  const group = await groupOn(coordinatorId, groupPrefix);
  const coordinator = cluster.brokers.get(coordinatorId)!;
  const leader = await KafkaClient.connect(cluster.brokers.get(leaderId)!.port);
  const topicId = (await metadata(coordinator)).topics.find((t) => t.name === topic)!.topicId;
  const requests = resetRequests(group, coordinator, leader, topicId, topic);
  return { group, coordinator, leader, ...requests };
}

test("AlterShareGroupOffsets at a broker that does not lead the partition", async () => {
  const running = [...cluster.brokers.values()].filter((b) => b.running);
  expect(running.length).toBe(3);
  // A broker the test before restarted must be registered again before it gets a replica.
  await consistentMetadata(cluster, 3, SESSION_TIMEOUT_MS * 2 + 15_000);
  await createTopicWithAssignment(running[0]!, RESET_TOPIC, [[2, 3, 1]]);
  await consistentMetadata(cluster, 3);
  // The test before killed and restarted brokers: a broker that came back leads nothing (no
  // group's coordinator) until the preferred leaders are elected again.
  await preferredLeaders(cluster, running[0]!);
  const { leader, heartbeat, fetch, accept, alter, startEverywhere } =
    await groupApartFromLeader(RESET_TOPIC);
  try {
    // m1 takes 0-9 and accepts 0-3, then leaves the group; its session on the leader stays.
    expect((await heartbeat("m1", 0)).errorCode).toBe(ErrorCode.NONE);
    expect(await fetch("m1", 0)).toEqual([]);
    await produceWithKafkajs(cluster, RESET_TOPIC, [
      "0",
      "1",
      "2",
      "3",
      "4",
      "5",
      "6",
      "7",
      "8",
      "9",
    ]);
    expect(await fetch("m1", 1)).toEqual([{ firstOffset: 0n, lastOffset: 9n, deliveryCount: 1 }]);
    expect(await accept("m1", 2, 0n, 3n)).toBe(ErrorCode.NONE);
    expect((await alter(2n)).errorCode).toBe(ErrorCode.NON_EMPTY_GROUP);
    expect((await heartbeat("m1", -1)).errorCode).toBe(ErrorCode.NONE);
    expect(await startEverywhere()).toEqual([4n, 4n, 4n]);

    // Reset at the coordinator, which does not lead the partition.
    const altered = await alter(2n);
    expect(altered.errorCode).toBe(ErrorCode.NONE);
    expect(altered.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    expect(await startEverywhere()).toEqual([2n, 2n, 2n]);
    // The leader's cached state is older than the reset: its write is fenced, the ACCEPT fails.
    expect(await accept("m1", 3, 4n, 9n)).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    expect(await startEverywhere()).toEqual([2n, 2n, 2n]);

    // The next member starts at the new offset, each record on its first delivery again.
    expect((await heartbeat("m2", 0)).errorCode).toBe(ErrorCode.NONE);
    expect(await fetch("m2", 0)).toEqual([{ firstOffset: 2n, lastOffset: 9n, deliveryCount: 1 }]);

    // m2 leaves holding 2-9 (its session stays, its locks last); a reset to 6 is what the
    // next member's new session sees on the leader, which still caches m2's state.
    expect((await heartbeat("m2", -1)).errorCode).toBe(ErrorCode.NONE);
    expect((await alter(6n)).errorCode).toBe(ErrorCode.NONE);
    expect((await heartbeat("m3", 0)).errorCode).toBe(ErrorCode.NONE);
    expect(await fetch("m3", 0)).toEqual([{ firstOffset: 6n, lastOffset: 9n, deliveryCount: 1 }]);
  } finally {
    leader.close();
  }
}, 120_000);

const DELETE_TOPIC = "share-delete";

test("DeleteShareGroupOffsets at a broker that does not lead the partition fences the leader", async () => {
  const running = [...cluster.brokers.values()].filter((b) => b.running);
  expect(running.length).toBe(3);
  await createTopicWithAssignment(running[0]!, DELETE_TOPIC, [[3, 1, 2]]);
  await consistentMetadata(cluster, 3);
  const { group, coordinator, leader, heartbeat, fetch, accept, startEverywhere } =
    await groupApartFromLeader(DELETE_TOPIC, "share-delete");
  const deleteOffsets = () =>
    requestOnce(coordinator.port, ApiKey.DeleteShareGroupOffsets, 0, {
      groupId: group,
      topics: [{ topicName: DELETE_TOPIC }],
    });
  const ten = Array.from({ length: 10 }, (_, i) => String(i));
  try {
    // m1 takes 0-9 and accepts 0-3, then leaves the group; its session on the leader stays.
    expect((await heartbeat("m1", 0)).errorCode).toBe(ErrorCode.NONE);
    expect(await fetch("m1", 0)).toEqual([]);
    await produceWithKafkajs(cluster, DELETE_TOPIC, ten);
    expect(await fetch("m1", 1)).toEqual([{ firstOffset: 0n, lastOffset: 9n, deliveryCount: 1 }]);
    expect(await accept("m1", 2, 0n, 3n)).toBe(ErrorCode.NONE);
    expect((await deleteOffsets()).errorCode).toBe(ErrorCode.NON_EMPTY_GROUP);
    expect((await heartbeat("m1", -1)).errorCode).toBe(ErrorCode.NONE);
    expect(await startEverywhere()).toEqual([4n, 4n, 4n]);

    // Deleted at the coordinator, which does not lead the partition: no broker has state.
    const deleted = await deleteOffsets();
    expect(deleted.errorCode).toBe(ErrorCode.NONE);
    expect(deleted.responses[0]!.errorCode).toBe(ErrorCode.NONE);
    expect(await startEverywhere()).toEqual([-1n, -1n, -1n]);
    // The leader still holds the deleted state: its write (m1's late ACCEPT) is fenced and the
    // state stays deleted, where a tombstone let it write the old state back (start 10).
    expect(await accept("m1", 3, 4n, 9n)).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    expect(await startEverywhere()).toEqual([-1n, -1n, -1n]);

    // The leader dropped its copy: the next member starts afresh (latest: the log end).
    expect((await heartbeat("m2", 0)).errorCode).toBe(ErrorCode.NONE);
    expect(await fetch("m2", 0)).toEqual([]);
    await produceWithKafkajs(cluster, DELETE_TOPIC, ["10", "11"]);
    expect(await fetch("m2", 1)).toEqual([{ firstOffset: 10n, lastOffset: 11n, deliveryCount: 1 }]);
  } finally {
    leader.close();
  }
}, 120_000);

const DELETE_GROUP_TOPIC = "share-delete-group";

test("DeleteGroups of a share group at a broker that does not lead the partition", async () => {
  const running = [...cluster.brokers.values()].filter((b) => b.running);
  expect(running.length).toBe(3);
  await createTopicWithAssignment(running[0]!, DELETE_GROUP_TOPIC, [[2, 3, 1]]);
  await consistentMetadata(cluster, 3);
  const { group, coordinator, leader, heartbeat, fetch, accept, startEverywhere } =
    await groupApartFromLeader(DELETE_GROUP_TOPIC, "share-delete-group");
  const deleteGroup = async () => {
    const res = await requestOnce(coordinator.port, ApiKey.DeleteGroups, 2, {
      groupsNames: [group],
    });
    expect(res.results.length).toBe(1);
    return res.results[0]!.errorCode;
  };
  const listed = async () => {
    const res = await requestOnce(coordinator.port, ApiKey.ListGroups, 5, {
      statesFilter: [],
      typesFilter: ["share"],
    });
    return res.groups.some((g) => g.groupId === group);
  };
  const ten = Array.from({ length: 10 }, (_, i) => String(i));
  try {
    // m1 takes 0-9 and accepts 0-3; while it is a member the group is not deleted.
    expect((await heartbeat("m1", 0)).errorCode).toBe(ErrorCode.NONE);
    expect(await fetch("m1", 0)).toEqual([]);
    await produceWithKafkajs(cluster, DELETE_GROUP_TOPIC, ten);
    expect(await fetch("m1", 1)).toEqual([{ firstOffset: 0n, lastOffset: 9n, deliveryCount: 1 }]);
    expect(await accept("m1", 2, 0n, 3n)).toBe(ErrorCode.NONE);
    expect(await deleteGroup()).toBe(ErrorCode.NON_EMPTY_GROUP);
    expect(await startEverywhere()).toEqual([4n, 4n, 4n]);
    expect((await heartbeat("m1", -1)).errorCode).toBe(ErrorCode.NONE);
    expect(await listed()).toBe(true);

    // Deleted at the group coordinator: the group and its state at the share coordinator go.
    expect(await deleteGroup()).toBe(ErrorCode.NONE);
    expect(await listed()).toBe(false);
    expect(await startEverywhere()).toEqual([-1n, -1n, -1n]);
    // The leader's late write (m1's ACCEPT from its old state) is fenced, not stored.
    expect(await accept("m1", 3, 4n, 9n)).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    expect(await startEverywhere()).toEqual([-1n, -1n, -1n]);
    expect(await deleteGroup()).toBe(ErrorCode.GROUP_ID_NOT_FOUND);

    // A new member of the id starts afresh (latest: the log end), not at 4 with 4-9 redelivered.
    expect((await heartbeat("m2", 0)).errorCode).toBe(ErrorCode.NONE);
    expect(await startEverywhere()).toEqual([10n, 10n, 10n]);
    expect(await fetch("m2", 0)).toEqual([]);
    await produceWithKafkajs(cluster, DELETE_GROUP_TOPIC, ["10", "11"]);
    expect(await fetch("m2", 1)).toEqual([{ firstOffset: 10n, lastOffset: 11n, deliveryCount: 1 }]);
  } finally {
    leader.close();
  }
}, 120_000);

const LATEST_TOPIC = "share-latest";

test("share.auto.offset.reset=latest starts at the assignment, not at the first fetch", async () => {
  const running = [...cluster.brokers.values()].filter((b) => b.running);
  expect(running.length).toBe(3);
  await createTopicWithAssignment(running[0]!, LATEST_TOPIC, [[2, 3, 1]]);
  await consistentMetadata(cluster, 3);
  const { leader, heartbeat, fetch, startEverywhere } = await groupApartFromLeader(
    LATEST_TOPIC,
    "share-latest",
  );
  try {
    await produceWithKafkajs(cluster, LATEST_TOPIC, ["before-0", "before-1", "before-2"]);
    // The group coordinator, which does not lead the partition, assigns it: the group's state
    // starts at the log end of that moment, stored before the member hears of the assignment.
    expect((await heartbeat("m1", 0)).errorCode).toBe(ErrorCode.NONE);
    expect(await startEverywhere()).toEqual([3n, 3n, 3n]);
    // Records produced after the assignment, before the member's first fetch, are delivered.
    await produceWithKafkajs(cluster, LATEST_TOPIC, ["3", "4", "5", "6", "7"]);
    expect(await fetch("m1", 0)).toEqual([{ firstOffset: 3n, lastOffset: 7n, deliveryCount: 1 }]);
  } finally {
    leader.close();
  }
}, 120_000);

const GROW_TOPIC = "share-grow";

/** Records to one partition (the harness's producer spreads them). */
async function produceTo(topic: string, partition: number, values: string[]) {
  const kafka = new Kafka({
    clientId: "share-grow",
    brokers: runningBootstrap(cluster).split(","),
    logLevel: logLevel.NOTHING,
  });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    await producer.send({
      topic,
      acks: -1,
      messages: values.map((value) => ({ value, partition })),
    });
  } finally {
    await producer.disconnect();
  }
}

test("a partition added to a consumed topic starts at its log start, not at latest", async () => {
  const running = [...cluster.brokers.values()].filter((b) => b.running);
  expect(running.length).toBe(3);
  await createTopicWithAssignment(running[0]!, GROW_TOPIC, [[2, 3, 1]]);
  await consistentMetadata(cluster, 3);
  const leaderId = await leaderOf(GROW_TOPIC);
  const coordinatorId = leaderId === 1 ? 2 : 1;
  const group = await groupOn(coordinatorId, "share-grow");
  const coordinator = cluster.brokers.get(coordinatorId)!;
  const heartbeat = (memberEpoch: number) =>
    requestOnce(coordinator.port, ApiKey.ShareGroupHeartbeat, 1, {
      groupId: group,
      memberId: "m1",
      memberEpoch,
      subscribedTopicNames: memberEpoch === 0 ? [GROW_TOPIC] : null,
    });
  const joined = await heartbeat(0);
  expect(joined.errorCode).toBe(ErrorCode.NONE);

  // The topic grows; records reach the new partition before the group is assigned it.
  const grown = await requestOnce(coordinator.port, ApiKey.CreatePartitions, 3, {
    topics: [{ name: GROW_TOPIC, count: 2, assignments: null }],
    timeoutMs: 10_000,
    validateOnly: false,
  });
  expect(grown.results[0]!.errorCode).toBe(ErrorCode.NONE);
  await consistentMetadata(cluster, 3);
  await produceTo(GROW_TOPIC, 1, ["0", "1", "2"]);

  const res = await heartbeat(joined.memberEpoch);
  expect(res.errorCode).toBe(ErrorCode.NONE);
  expect(res.assignment?.topicPartitions[0]?.partitions.sort()).toEqual([0, 1]);
  // Initialized at the log start (a topic the group consumes), where latest would be 3.
  const described = await requestOnce(coordinator.port, ApiKey.DescribeShareGroupOffsets, 1, {
    groups: [{ groupId: group, topics: [{ topicName: GROW_TOPIC, partitions: [1] }] }],
  });
  expect(described.groups[0]!.topics[0]!.partitions[0]!.startOffset).toBe(0n);
  const meta = await metadata(coordinator);
  const topic = meta.topics.find((t) => t.name === GROW_TOPIC)!;
  const newLeader = cluster.brokers.get(
    topic.partitions.find((p) => p.partitionIndex === 1)!.leaderId,
  )!;
  const fetched = await requestOnce(newLeader.port, ApiKey.ShareFetch, 1, {
    groupId: group,
    memberId: "m1",
    shareSessionEpoch: 0,
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: 1 << 20,
    maxRecords: 100,
    batchSize: 100,
    topics: [
      { topicId: topic.topicId, partitions: [{ partitionIndex: 1, acknowledgementBatches: [] }] },
    ],
  });
  expect(acquiredRecords(fetched)).toEqual([{ firstOffset: 0n, lastOffset: 2n, deliveryCount: 1 }]);
}, 120_000);

const FROZEN_TOPIC = "share-frozen";

/**
 * The broker FindCoordinator names for a share-partition key (key type 2), once there is one
 * (the first request creates __share_group_state).
 */
async function shareCoordinatorOf(group: string, topicId: Uint8Array): Promise<number> {
  const broker = [...cluster.brokers.values()].find((b) => b.running)!;
  let nodeId = -1;
  await waitUntil(
    async () => {
      const res = await requestOnce(broker.port, ApiKey.FindCoordinator, 6, {
        keyType: 2,
        coordinatorKeys: [coordinatorKey({ groupId: group, topicId, partition: 0 })],
      });
      nodeId = res.coordinators[0]!.errorCode === ErrorCode.NONE ? res.coordinators[0]!.nodeId : -1;
      return nodeId >= 0;
    },
    30_000,
    "a share coordinator",
  );
  return nodeId;
}

test("a heartbeat with an assignment is answered while the share coordinator is frozen", async () => {
  const running = [...cluster.brokers.values()].filter((b) => b.running);
  expect(running.length).toBe(3);
  await createTopicWithAssignment(running[0]!, FROZEN_TOPIC, [[1, 2, 3]]);
  await consistentMetadata(cluster, 3);
  const meta = await metadata(running[0]!);
  const topicId = meta.topics.find((t) => t.name === FROZEN_TOPIC)!.topicId;
  let group = "";
  let frozenId = -1;
  for (let i = 0; i < 100 && frozenId < 0; i++) {
    const candidate = `share-frozen-${i}`;
    const shareCoordinator = await shareCoordinatorOf(candidate, topicId);
    if (shareCoordinator !== (await groupCoordinatorOf(candidate))) {
      group = candidate;
      frozenId = shareCoordinator;
    }
  }
  expect(frozenId).toBeGreaterThan(0);
  const coordinator = cluster.brokers.get(await groupCoordinatorOf(group))!;
  const frozen = cluster.brokers.get(frozenId)!;
  process.kill(frozen.pid, "SIGSTOP");
  try {
    const startedMs = performance.now();
    const res = await requestOnce(coordinator.port, ApiKey.ShareGroupHeartbeat, 1, {
      groupId: group,
      memberId: "m1",
      memberEpoch: 0,
      subscribedTopicNames: [FROZEN_TOPIC],
    });
    const elapsedMs = performance.now() - startedMs;
    console.log(`heartbeat answered after ${Math.round(elapsedMs)} ms`);
    expect(res.errorCode).toBe(ErrorCode.NONE);
    expect(res.assignment?.topicPartitions).toEqual([{ topicId, partitions: [0] }]);
    // The initialization waits are bounded (5 s); unbounded, the persister's first request to
    // the frozen coordinator alone takes its 10 s timeout, and retries follow.
    expect(elapsedMs).toBeLessThan(9_000);
  } finally {
    process.kill(frozen.pid, "SIGCONT");
  }
}, 120_000);
