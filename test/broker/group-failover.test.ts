/**
 * Group membership survives the coordinator: two groups coordinated by one broker of a
 * three-broker cluster (Java 4.4 consumers with group.protocol=consumer, and with classic) are
 * polling and committing when that broker is killed with SIGKILL (it leads no partition). The
 * broker taking the groups over reads their membership from ZooKeeper, so every member keeps
 * its id, epoch or generation and partitions: nothing is revoked or lost, and the records
 * produced after the kill are read and committed under the old epochs and generations.
 *
 * Then a group being upgraded (a classic member, and a KIP-848 member that has just joined
 * and is being reconciled) loses its coordinator the same way: the next coordinator carries
 * on with both members as they were, and no record is lost or read twice.
 *
 * kafkajs is not in it: its consumer retries a dead coordinator's address rather than asking
 * FindCoordinator again, then restarts itself as a new member, whatever the broker keeps.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import type { ChildBroker } from "../support/child-broker.ts";
import { ensureJava4Built, Java4Process } from "../support/java4-client.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import {
  type Cluster,
  consistentMetadata,
  createTopicWithAssignment,
  produceWithKafkajs,
  runningBootstrap,
  SESSION_TIMEOUT_MS,
  startCluster,
} from "./cluster-harness.ts";

const TOPIC = "failover";
const RECORDS = 40;

let zkServer: ZooKeeperServer;
let cluster: Cluster;

beforeAll(async () => {
  ensureJava4Built("FailoverConsumer");
  zkServer = await startZooKeeper();
  cluster = await startCluster(`${zkServer.connectString}/failover`, {
    "group.consumer.heartbeat.interval.ms": "500",
    "group.initial.rebalance.delay.ms": "0",
  });
  await consistentMetadata(cluster, 3);
}, 300_000);

afterAll(async () => {
  await cluster?.close();
  await zkServer?.stop();
}, 30_000);

async function coordinatorOf(broker: ChildBroker, group: string): Promise<number> {
  const res = await requestOnce(broker.port, ApiKey.FindCoordinator, 3, { key: group, keyType: 0 });
  expect(res.errorCode).toBe(ErrorCode.NONE);
  return res.nodeId;
}

/** A group id starting with `prefix` that `nodeId` coordinates. */
async function groupOn(broker: ChildBroker, nodeId: number, prefix: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    if ((await coordinatorOf(broker, `${prefix}-${i}`)) === nodeId) return `${prefix}-${i}`;
  }
  throw new Error(`no ${prefix} group on broker ${nodeId}`);
}

/** Member ids and epochs of a KIP-848 group, as its coordinator describes them. */
async function epochs(broker: ChildBroker, group: string): Promise<string[]> {
  const res = await requestOnce(broker.port, ApiKey.ConsumerGroupDescribe, 0, {
    groupIds: [group],
    includeAuthorizedOperations: false,
  });
  const described = res.groups[0]!;
  expect(described.errorCode).toBe(ErrorCode.NONE);
  return described.members.map((m) => `${m.memberId}:${m.memberEpoch}`).sort();
}

/** Lines between READY and DONE that took partitions away from a member (closing revokes). */
function disruptions(lines: readonly string[]): string[] {
  const from = lines.findIndex((l) => l.startsWith("READY"));
  const to = lines.findIndex((l) => l.startsWith("DONE"));
  return lines.slice(from, to).filter((l) => / (revoked|lost) \[.+\]/.test(l));
}

test("members keep their epochs, generations and partitions when the coordinator is killed", async () => {
  const b1 = cluster.brokers.get(1)!;
  // Partition leaders stay up: kafkajs restarts a consumer (a new member) that cannot reach
  // a partition's leader, which is not what this test is about.
  await createTopicWithAssignment(b1, TOPIC, [
    [1, 3],
    [3, 1],
    [1, 3],
    [3, 1],
  ]);
  await consistentMetadata(cluster, 3);
  const groups = {
    consumer: await groupOn(b1, 2, "kip848"),
    classic: await groupOn(b1, 2, "classic"),
  };
  const coordinator = cluster.brokers.get(2)!;
  const bootstrap = runningBootstrap(cluster);
  const javaArgs = (group: string, protocol: string) => [
    bootstrap,
    TOPIC,
    group,
    protocol,
    String(RECORDS),
  ];
  const java848 = new Java4Process("FailoverConsumer", javaArgs(groups.consumer, "consumer"));
  const javaClassic = new Java4Process("FailoverConsumer", javaArgs(groups.classic, "classic"));
  try {
    const ready848 = (await java848.line("READY", 90_000)).slice("READY ".length);
    const readyClassic = (await javaClassic.line("READY", 90_000)).slice("READY ".length);
    const epochsBefore = await epochs(coordinator, groups.consumer);
    expect(epochsBefore).toHaveLength(2);

    await coordinator.kill9();
    await consistentMetadata(cluster, 2, SESSION_TIMEOUT_MS + 15_000);
    await produceWithKafkajs(
      cluster,
      TOPIC,
      Array.from({ length: RECORDS }, (_, i) => `v${i}`),
    );

    const done848 = await java848.line("DONE", 60_000);
    const doneClassic = await javaClassic.line("DONE", 60_000);
    expect(done848).toBe(`DONE ${ready848}`);
    expect(doneClassic).toBe(`DONE ${readyClassic}`);
    expect(disruptions(java848.lines)).toEqual([]);
    expect(disruptions(javaClassic.lines)).toEqual([]);
    const next = cluster.brokers.get(await coordinatorOf(b1, groups.consumer))!;
    expect(next).not.toBe(coordinator);
    expect(await epochs(next, groups.consumer)).toEqual(epochsBefore);
    for (const java of [java848, javaClassic]) {
      java.send("leave");
      expect(await java.exited).toBe(0);
    }
  } finally {
    java848.kill();
    javaClassic.kill();
  }
  cluster.brokers.set(2, await coordinator.restart());
  await consistentMetadata(cluster, 3, SESSION_TIMEOUT_MS * 2 + 10_000);
}, 240_000);

/** The coordinator's view of a KIP-848 group: state, and each member's id and type. */
async function describeMembers(broker: ChildBroker, group: string) {
  const res = await requestOnce(broker.port, ApiKey.ConsumerGroupDescribe, 1, {
    groupIds: [group],
    includeAuthorizedOperations: false,
  });
  const g = res.groups[0]!;
  const members = g.members.map((m) => `${m.memberId}:${m.memberType}`).sort();
  return { errorCode: g.errorCode, state: g.groupState, members };
}

test("a group being upgraded carries on when its coordinator is killed mid-migration", async () => {
  const b1 = cluster.brokers.get(1)!;
  const topic = "migration";
  // Broker 3 coordinates and leads no partition of the topic, as above.
  await createTopicWithAssignment(b1, topic, [
    [1, 2],
    [2, 1],
    [1, 2],
    [2, 1],
  ]);
  await consistentMetadata(cluster, 3);
  const group = await groupOn(b1, 3, "mixed");
  const coordinator = cluster.brokers.get(3)!;
  const values = (tag: string) => Array.from({ length: RECORDS }, (_, i) => `${tag}${i}`);
  await produceWithKafkajs(cluster, topic, values("before-"));
  const args = [runningBootstrap(cluster), topic, group, "mixed", String(2 * RECORDS)];
  const java = new Java4Process("FailoverConsumer", [...args, String(RECORDS)]);
  try {
    // The classic member read and committed the first records; the KIP-848 member joins,
    // upgrading the group, and the coordinator dies as soon as it shows both members.
    await java.line("JOINING", 90_000);
    let before = await describeMembers(coordinator, group);
    for (let i = 0; i < 400 && before.members.length < 2; i++) {
      await Bun.sleep(25);
      before = await describeMembers(coordinator, group);
    }
    expect(before.members.map((m) => m.split(":")[1]).sort()).toEqual(["0", "1"]);
    await coordinator.kill9();
    await consistentMetadata(cluster, 2, SESSION_TIMEOUT_MS + 15_000);
    await produceWithKafkajs(cluster, topic, values("after-"));

    await java.line("READY", 60_000);
    await java.line("DONE", 60_000);
    expect(java.lines.filter((l) => l.startsWith("DUPLICATE "))).toEqual([]);
    const next = cluster.brokers.get(await coordinatorOf(b1, group))!;
    expect(next).not.toBe(coordinator);
    // The same two members, one of each protocol: nobody rejoined as a new member.
    const after = await describeMembers(next, group);
    expect([after.errorCode, after.members]).toEqual([ErrorCode.NONE, before.members]);
    // Everything was read and committed: the committed offsets sum to the records produced.
    const fetched = await requestOnce(next.port, ApiKey.OffsetFetch, 8, {
      groups: [{ groupId: group, topics: [{ name: topic, partitionIndexes: [0, 1, 2, 3] }] }],
      requireStable: false,
    });
    const offsets = fetched.groups[0]!.topics[0]!.partitions.map((p) => p.committedOffset);
    expect(offsets.reduce((a, b) => a + b, 0n)).toBe(BigInt(2 * RECORDS));
    java.send("leave");
    expect(await java.exited).toBe(0);
  } finally {
    java.kill();
  }
  cluster.brokers.set(3, await coordinator.restart());
  await consistentMetadata(cluster, 3, SESSION_TIMEOUT_MS * 2 + 10_000);
}, 240_000);
