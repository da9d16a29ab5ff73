/**
 * Transactions v2 (KIP-890 part 2) over the network: in a three-broker cluster the
 * transactional id's coordinator, the leader of the partitions the Kafka 4.4 producer writes
 * (so the leader adds them to the transaction with AddPartitionsToTxn v5 to the coordinator)
 * and the coordinator of the group whose offsets go into the transaction (TxnOffsetCommit v5+,
 * which adds the offsets with AddOffsetsToTxn to the transaction coordinator) are three
 * different brokers. A committed and an aborted consume-transform-produce transaction are seen
 * right by a read_committed consumer; then the transaction coordinator is killed with kill -9
 * after a transaction's records are written and before its commit: whatever the commit's
 * outcome, the producer's next transaction commits, the read_committed consumer gets past it
 * (no transaction left hanging at the last stable offset), and no record of a transaction that
 * did not commit is visible.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import type { ChildBroker } from "../support/child-broker.ts";
import { ensureJava4Built, Java4Process } from "../support/java4-client.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { freePorts, startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import {
  type Cluster,
  consistentMetadata,
  createTopicWithAssignment,
  produceWithKafkajs,
  runningBootstrap,
  startCluster,
  until,
} from "./cluster-harness.ts";

const INPUTS = 20;

let zkServer: ZooKeeperServer;
let cluster: Cluster;
let adminPorts: number[];

beforeAll(async () => {
  ensureJava4Built("TransactionsV2Cluster");
  zkServer = await startZooKeeper();
  adminPorts = await freePorts(3);
  cluster = await startCluster(`${zkServer.connectString}/txn-v2`, (id) => ({
    "transaction.state.log.num.partitions": "3",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.initial.rebalance.delay.ms": "0",
    "admin.listeners": `127.0.0.1:${adminPorts[id - 1]}`,
  }));
  await consistentMetadata(cluster, 3);
}, 300_000);

afterAll(async () => {
  await cluster?.close();
  await zkServer?.stop();
}, 30_000);

/** The broker coordinating `key` (keyType 0: a group, 1: a transactional id). */
function coordinatorOf(broker: ChildBroker, key: string, keyType: 0 | 1): Promise<number> {
  return until(
    async () => {
      const res = await requestOnce(broker.port, ApiKey.FindCoordinator, 3, { key, keyType });
      return res.errorCode === ErrorCode.NONE ? res.nodeId : undefined;
    },
    30_000,
    `the coordinator of ${key}`,
  );
}

/** The versions of `api` broker `id` has served (quill_request_versions_total). */
async function versionsServed(id: number, api: string): Promise<number[]> {
  const text = await (await fetch(`http://127.0.0.1:${adminPorts[id - 1]}/metrics`)).text();
  const pattern = new RegExp(
    `^quill_request_versions_total\\{api="${api}",version="(\\d+)"\\} `,
    "gm",
  );
  return [...text.matchAll(pattern)].map((m) => Number(m[1])).sort();
}

/** The coordinator of `key` once every broker names the same one. */
function agreedCoordinator(key: string, keyType: 0 | 1): Promise<number> {
  return until(
    async () => {
      const brokers = [...cluster.brokers.values()];
      const ids = new Set(await Promise.all(brokers.map((b) => coordinatorOf(b, key, keyType))));
      return ids.size === 1 ? [...ids][0] : undefined;
    },
    30_000,
    `the brokers to agree on the coordinator of ${key}`,
  );
}

/** A key starting with `prefix` that broker `nodeId` coordinates. */
async function keyOn(broker: ChildBroker, nodeId: number, prefix: string, keyType: 0 | 1) {
  for (let i = 0; i < 100; i++) {
    if ((await coordinatorOf(broker, `${prefix}-${i}`, keyType)) === nodeId)
      return `${prefix}-${i}`;
  }
  throw new Error(`no ${prefix} key on broker ${nodeId}`);
}

test("coordinator, leader and group coordinator on three brokers; coordinator killed before a commit", async () => {
  const b1 = cluster.brokers.get(1)!;
  const txnId = "tv2c-0";
  // The first FindCoordinators create __transaction_state and __consumer_offsets; ask again
  // once their leaders are known.
  const firstAnswer = await coordinatorOf(b1, txnId, 1);
  await coordinatorOf(b1, "tv2c-group", 0);
  await consistentMetadata(cluster, 3);
  const txnBroker = await agreedCoordinator(txnId, 1);
  // While __transaction_state had no leader, the coordinator was once named as the asking
  // broker: COORDINATOR_NOT_AVAILABLE until a leader exists, then that leader.
  expect(firstAnswer).toBe(txnBroker);
  const [leader, groupBroker] = [1, 2, 3].filter((id) => id !== txnBroker) as [number, number];
  const group = await keyOn(b1, groupBroker, "tv2c-group", 0);
  expect(await agreedCoordinator(group, 0)).toBe(groupBroker);
  // The data's replicas leave the coordinator out, so its death moves no leader of theirs.
  await createTopicWithAssignment(b1, "tv2c-in", [[leader, groupBroker]]);
  await createTopicWithAssignment(b1, "tv2c-out", [[leader, groupBroker]]);
  await consistentMetadata(cluster, 3);
  const inputs = Array.from({ length: INPUTS }, (_, i) => `in-${i}`);
  await produceWithKafkajs(cluster, "tv2c-in", inputs);

  const args = [runningBootstrap(cluster), "tv2c-in", "tv2c-out", group, txnId];
  const java = new Java4Process("TransactionsV2Cluster", args);
  try {
    await java.line("SENT", 120_000);
    // The remote paths were taken: the leader added the partitions with AddPartitionsToTxn v5
    // and the group coordinator the offsets with AddOffsetsToTxn, each at the coordinator.
    expect(await versionsServed(txnBroker, "AddPartitionsToTxn")).toEqual([5]);
    expect(await versionsServed(txnBroker, "AddOffsetsToTxn")).toEqual([4]);
    expect(await versionsServed(txnBroker, "EndTxn")).toEqual([5]);
    expect(
      Math.min(...(await versionsServed(groupBroker, "TxnOffsetCommit"))),
    ).toBeGreaterThanOrEqual(5);
    expect(Math.max(...(await versionsServed(leader, "Produce")))).toBeGreaterThanOrEqual(12);
    expect(await versionsServed(leader, "AddPartitionsToTxn")).toEqual([]);
    await cluster.brokers.get(txnBroker)!.kill9();
    java.send("go");
    expect(await java.exited).toBe(0);
  } finally {
    java.kill();
  }
  const lines = java.lines;
  console.log(lines.filter((l) => !l.startsWith("read_committed")).join("\n"));
  expect(lines.at(-1)).toBe("OK");
  const field = (prefix: string) => lines.find((l) => l.startsWith(prefix))?.slice(prefix.length);
  const committed = field("committed ")!.split(",");
  const aborted = field("aborted ")!.split(",");
  expect(committed.length).toBeGreaterThanOrEqual(10);
  expect(aborted.length).toBeGreaterThanOrEqual(1);
  const crash = lines.find((l) => l.startsWith("crash "))!;
  const crashCommitted = crash === "crash committed";
  const crashRecords = [0, 1, 2, 3, 4].map((i) => `crash-${i}`);
  const after = [0, 1, 2, 3, 4].map((i) => `after-${i}`);
  expect(field("read_committed ")!.split(",")).toEqual([
    ...committed,
    ...(crashCommitted ? crashRecords : []),
    ...after,
  ]);
  // The group's offset is the committed transaction's, not the aborted one's.
  expect(field("group offset ")).toBe(field("committed offset "));
}, 300_000);
