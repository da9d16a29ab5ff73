/**
 * Consumer groups across three broker processes: FindCoordinator gives the same coordinator
 * on every broker and spreads groups over the brokers; other brokers refuse the group with
 * NOT_COORDINATOR; when the coordinator is killed another takes the group over with its
 * committed offsets from ZooKeeper; a kafkajs group whose members bootstrap from different
 * brokers shares one coordinator; a restarted broker takes no group back (a group follows the
 * leader of its __consumer_offsets partition, as in Kafka). One id is one group: a share
 * group's id is refused by JoinGroup, ConsumerGroupHeartbeat and OffsetCommit, and a classic
 * group's by ShareGroupHeartbeat, also on a coordinator that has it only in the store.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import type { ChildBroker } from "../support/child-broker.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import {
  type Cluster,
  consistentMetadata,
  createTopic,
  produceWithKafkajs,
  SESSION_TIMEOUT_MS,
  startCluster,
  until,
} from "./cluster-harness.ts";

let zkServer: ZooKeeperServer;
let cluster: Cluster;

beforeAll(async () => {
  zkServer = await startZooKeeper();
  cluster = await startCluster(`${zkServer.connectString}/groups`);
  await consistentMetadata(cluster, 3);
}, 60_000);

afterAll(async () => {
  await cluster?.close();
  await zkServer?.stop();
}, 30_000);

const running = () => [...cluster.brokers.values()].filter((b) => b.running);

async function coordinatorOf(broker: ChildBroker, group: string): Promise<number> {
  const res = await requestOnce(broker.port, ApiKey.FindCoordinator, 3, { key: group, keyType: 0 });
  expect(res.errorCode).toBe(ErrorCode.NONE);
  return res.nodeId;
}

function commit(broker: ChildBroker, group: string, offset: bigint) {
  return requestOnce(broker.port, ApiKey.OffsetCommit, 8, {
    groupId: group,
    generationIdOrMemberEpoch: -1,
    memberId: "",
    groupInstanceId: null,
    topics: [
      {
        name: "offsets",
        partitions: [
          {
            partitionIndex: 0,
            committedOffset: offset,
            committedLeaderEpoch: -1,
            committedMetadata: "",
          },
        ],
      },
    ],
  });
}

async function fetchOffset(broker: ChildBroker, group: string) {
  const res = await requestOnce(broker.port, ApiKey.OffsetFetch, 7, {
    groupId: group,
    topics: [{ name: "offsets", partitionIndexes: [0] }],
    requireStable: false,
  });
  return { errorCode: res.errorCode, offset: res.topics[0]?.partitions[0]?.committedOffset };
}

test("every broker names the same coordinator for a group; groups spread over brokers", async () => {
  const groups = Array.from({ length: 30 }, (_, i) => `group-${i}`);
  const coordinators = new Set<number>();
  for (const group of groups) {
    const answers = await Promise.all(running().map((b) => coordinatorOf(b, group)));
    expect(new Set(answers).size).toBe(1);
    coordinators.add(answers[0]!);
  }
  expect([...coordinators].sort()).toEqual([1, 2, 3]);
});

test("a killed coordinator's group moves, and its committed offsets come from ZooKeeper", async () => {
  await createTopic(cluster.brokers.get(1)!, "offsets", 1);
  // OffsetCommit checks the topic in the coordinator's own metadata.
  await consistentMetadata(cluster, 3);
  const group = "moving-group";
  const first = await coordinatorOf(cluster.brokers.get(1)!, group);
  const coordinator = cluster.brokers.get(first)!;
  const other = running().find((b) => b !== coordinator)!;
  const refused = await commit(other, group, 7n);
  expect(refused.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NOT_COORDINATOR);
  expect((await fetchOffset(other, group)).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
  const committed = await commit(coordinator, group, 42n);
  expect(committed.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
  await coordinator.kill9();
  await consistentMetadata(cluster, 2, SESSION_TIMEOUT_MS + 10_000);
  const next = await coordinatorOf(other, group);
  expect(next).not.toBe(first);
  const taken = await until(
    async () => {
      const answer = await fetchOffset(cluster.brokers.get(next)!, group);
      return answer.errorCode === ErrorCode.NONE ? answer : undefined;
    },
    10_000,
    "the new coordinator to answer OffsetFetch",
  );
  expect(taken.offset).toBe(42n);
  // The group is only in the store on its new coordinator, and still holds its id: a share
  // group of that id is refused (Kafka's "is not a share group").
  const share = await requestOnce(cluster.brokers.get(next)!.port, ApiKey.ShareGroupHeartbeat, 1, {
    groupId: group,
    memberId: "share-member",
    memberEpoch: 0,
    subscribedTopicNames: ["offsets"],
  });
  expect([share.errorCode, share.errorMessage]).toEqual([
    ErrorCode.GROUP_ID_NOT_FOUND,
    `Group ${group} is not a share group.`,
  ]);
  cluster.brokers.set(first, await coordinator.restart());
  await consistentMetadata(cluster, 3, SESSION_TIMEOUT_MS * 2 + 10_000);
}, 90_000);

test("a share group's id is refused by JoinGroup, ConsumerGroupHeartbeat and OffsetCommit", async () => {
  const group = "share-held";
  const coordinator = cluster.brokers.get(await coordinatorOf(running()[0]!, group))!;
  const share = await requestOnce(coordinator.port, ApiKey.ShareGroupHeartbeat, 1, {
    groupId: group,
    memberId: "s1",
    memberEpoch: 0,
    subscribedTopicNames: ["offsets"],
  });
  expect(share.errorCode).toBe(ErrorCode.NONE);
  const joined = await requestOnce(coordinator.port, ApiKey.JoinGroup, 9, {
    groupId: group,
    sessionTimeoutMs: 10_000,
    rebalanceTimeoutMs: 5_000,
    memberId: "",
    protocolType: "consumer",
    protocols: [{ name: "range", metadata: new Uint8Array(0) }],
  });
  expect(joined.errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
  const beat = await requestOnce(coordinator.port, ApiKey.ConsumerGroupHeartbeat, 1, {
    groupId: group,
    memberId: "c1",
    memberEpoch: 0,
    rebalanceTimeoutMs: 30_000,
    subscribedTopicNames: ["offsets"],
  });
  expect(beat.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  const committed = await commit(coordinator, group, 5n);
  expect(committed.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
});

/** What ListGroups, DescribeGroups and OffsetFetch on `broker` show of `group`. */
async function groupView(broker: ChildBroker, group: string) {
  const listed = await requestOnce(broker.port, ApiKey.ListGroups, 5, {
    statesFilter: [],
    typesFilter: [],
  });
  const described = await requestOnce(broker.port, ApiKey.DescribeGroups, 5, {
    groups: [group],
    includeAuthorizedOperations: false,
  });
  const fetched = await requestOnce(broker.port, ApiKey.OffsetFetch, 7, {
    groupId: group,
    topics: null,
    requireStable: false,
  });
  return {
    listErrorCode: listed.errorCode,
    listed: listed.groups.filter((g) => g.groupId === group),
    described: described.groups,
    offsets: fetched.topics,
  };
}

/** The group's view on whichever broker coordinates it, once that broker answers for it. */
async function viewOnCoordinator(group: string) {
  return await until(
    async () => {
      const node = await coordinatorOf(running()[0]!, group);
      const view = await groupView(cluster.brokers.get(node)!, group);
      return view.listErrorCode === ErrorCode.NONE && view.described[0]!.errorCode === 0
        ? { node, view }
        : undefined;
    },
    SESSION_TIMEOUT_MS + 20_000,
    `the coordinator of ${group} to answer for it`,
  );
}

test("a group is listed and described as before after its coordinator dies or stops", async () => {
  await createTopic(cluster.brokers.get(1)!, "kept", 2);
  await consistentMetadata(cluster, 3);
  await produceWithKafkajs(cluster, "kept", ["a", "b", "c", "d"]);
  const group = "kept-group";
  const kafka = new Kafka({
    clientId: "kept",
    brokers: running().map((b) => b.bootstrap),
    logLevel: logLevel.NOTHING,
  });
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10_000, maxWaitTimeInMs: 100 });
  let seen = 0;
  await consumer.connect();
  await consumer.subscribe({ topic: "kept", fromBeginning: true });
  await consumer.run({ eachMessage: async () => void seen++ });
  await until(async () => (seen === 4 ? true : undefined), 30_000, "the records consumed");
  await consumer.disconnect();
  const { view: before } = await viewOnCoordinator(group);
  expect(before.listed).toEqual([
    { groupId: group, protocolType: "consumer", groupState: "Empty", groupType: "classic" },
  ]);
  expect(before.described[0]).toMatchObject({ groupState: "Empty", protocolType: "consumer" });
  const committed = before.offsets.flatMap((t) => t.partitions.map((p) => p.committedOffset));
  expect(committed.reduce((a, b) => a + b, 0n)).toBe(4n);

  for (const stop of ["kill -9", "SIGTERM"] as const) {
    const { node } = await viewOnCoordinator(group);
    const coordinator = cluster.brokers.get(node)!;
    if (stop === "kill -9") await coordinator.kill9();
    else expect(await coordinator.terminate()).toBe(0);
    await consistentMetadata(cluster, 2, SESSION_TIMEOUT_MS + 10_000);
    const after = await viewOnCoordinator(group);
    expect(after.node, stop).not.toBe(node);
    expect(after.view, stop).toEqual(before);
    // When the broker comes back the group may move back to it: it must look the same there.
    cluster.brokers.set(node, await coordinator.restart());
    await consistentMetadata(cluster, 3, SESSION_TIMEOUT_MS * 2 + 10_000);
    expect((await viewOnCoordinator(group)).view, `${stop}, restarted`).toEqual(before);
  }
}, 180_000);

test("a kafkajs group whose members bootstrap from different brokers shares the work", async () => {
  await createTopic(cluster.brokers.get(2)!, "shared", 4);
  await consistentMetadata(cluster, 3);
  const values = Array.from({ length: 40 }, (_, i) => `v${i}`);
  await produceWithKafkajs(cluster, "shared", values);
  const seen = new Map<string, number>();
  const consumers = await Promise.all(
    [1, 2].map(async (i) => {
      const kafka = new Kafka({
        clientId: `member-${i}`,
        brokers: [cluster.brokers.get(i)!.bootstrap],
        logLevel: logLevel.NOTHING,
      });
      const consumer = kafka.consumer({ groupId: "spread-group", sessionTimeout: 10_000 });
      await consumer.connect();
      await consumer.subscribe({ topic: "shared", fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          const value = message.value!.toString();
          seen.set(value, (seen.get(value) ?? 0) + 1);
        },
      });
      return consumer;
    }),
  );
  try {
    await until(
      async () => (seen.size === values.length ? true : undefined),
      30_000,
      "every record consumed by the group",
    );
    expect([...seen.values()].every((n) => n >= 1)).toBe(true);
  } finally {
    await Promise.all(consumers.map((c) => c.disconnect()));
  }
}, 60_000);

/** Each group's coordinator as every running broker names it (they must agree). */
async function coordinatorsOf(groups: readonly string[]): Promise<Map<string, number>> {
  const named = new Map<string, number>();
  for (const group of groups) {
    const answers = await Promise.all(running().map((b) => coordinatorOf(b, group)));
    expect(new Set(answers).size).toBe(1);
    named.set(group, answers[0]!);
  }
  return named;
}

test("a restarted broker takes no group back; a consuming kafkajs group sees no error", async () => {
  await createTopic(cluster.brokers.get(1)!, "steady", 3);
  await consistentMetadata(cluster, 3);
  const group = "steady-group";
  const groups = [group, ...Array.from({ length: 30 }, (_, i) => `steady-${i}`)];
  const restarted = (await coordinatorsOf([group])).get(group)!;
  const kafka = new Kafka({
    clientId: "steady",
    brokers: running().map((b) => b.bootstrap),
    logLevel: logLevel.NOTHING,
  });
  // kafkajs's default retries (5): a coordinator its Metadata does not list yet crashed it.
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10_000, maxWaitTimeInMs: 100 });
  const crashes: unknown[] = [];
  consumer.on(consumer.events.CRASH, (event) => void crashes.push(event.payload.error));
  const seen = new Set<string>();
  await consumer.connect();
  await consumer.subscribe({ topic: "steady", fromBeginning: true });
  await consumer.run({ eachMessage: async ({ message }) => void seen.add(String(message.value)) });
  const values = (round: string) => Array.from({ length: 10 }, (_, i) => `${round}-${i}`);
  const consumedAll = (round: string) =>
    until(
      async () => (values(round).every((v) => seen.has(v)) ? true : undefined),
      30_000,
      `the ${round} records consumed`,
    );
  try {
    await produceWithKafkajs(cluster, "steady", values("before"));
    await consumedAll("before");
    // The group's coordinator stops: its groups move to the brokers leading their partitions.
    const stopping = cluster.brokers.get(restarted)!;
    expect(await stopping.terminate()).toBe(0);
    await consistentMetadata(cluster, 2, SESSION_TIMEOUT_MS + 10_000);
    const moved = await coordinatorsOf(groups);
    expect([...moved.values()]).not.toContain(restarted);
    await produceWithKafkajs(cluster, "steady", values("stopped"));
    await consumedAll("stopped");
    // Back again, and listed by every broker: no group moves back to it by itself.
    cluster.brokers.set(restarted, await stopping.restart());
    await consistentMetadata(cluster, 3, SESSION_TIMEOUT_MS * 2 + 10_000);
    expect(await coordinatorsOf(groups)).toEqual(moved);
    await produceWithKafkajs(cluster, "steady", values("restarted"));
    await consumedAll("restarted");
    expect(crashes).toEqual([]);
  } finally {
    await consumer.disconnect();
  }
}, 120_000);
