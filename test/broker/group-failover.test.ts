/**
 * Group membership survives the coordinator: two groups coordinated by one broker of a
 * three-broker cluster (Java 4.4 consumers with group.protocol=consumer, and with classic) are
 * polling and committing when that broker is killed with SIGKILL (it leads no partition). The
 * broker taking the groups over reads their membership from ZooKeeper, so every member keeps
 * its id, epoch or generation and partitions: nothing is revoked or lost, and the records
 * produced after the kill are read and committed under the old epochs and generations.
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
