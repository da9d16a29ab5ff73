/**
 * Transactions in cluster mode (three broker processes, a real ZooKeeper, replication factor
 * 3): the coordinator of a transactional id is the leader of its __transaction_state
 * partition, markers reach partitions led by other brokers (WriteTxnMarkers). The Java client's
 * consume-transform-produce loop runs while its transaction coordinator's broker is killed with
 * kill -9: the new leader reloads the id's state from the replicated log (the same producer id,
 * a later epoch) and a read_committed reader downstream sees every input exactly once. Then a
 * kill -9 of the coordinator between a commit's prepare and its markers (held by a test hook):
 * the next coordinator finds PrepareCommit and commits; the same after the markers and before
 * the completion (held by another hook): it completes. And a kill -9 of the group coordinator
 * that holds a transaction's pending offsets while the transaction is open: the group's next
 * coordinator answers UNSTABLE_OFFSET_COMMIT for them until the commit, then commits them.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import {
  buildExactlyOnce,
  runPipelineWithFault,
  verifyExactlyOnce,
} from "../support/exactly-once-java.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import {
  type Cluster,
  consistentMetadata,
  createTopic,
  metadata,
  preferredLeaders,
  produceWithKafkajs,
  runningBootstrap,
  startCluster,
  until,
} from "./cluster-harness.ts";

const TOPIC = "txn-cluster";
const TXN_ID = "cluster-tx";
/** The Java pipeline's transactional id (quill.compat.ExactlyOnce). */
const PIPELINE_TXN_ID = "eos-pipeline";
/** While this file exists no broker writes markers (TEST_QUILL_HOLD_TXN_MARKERS). */
const HOLD = path.join(os.tmpdir(), `quill-hold-markers-${process.pid}-${Date.now()}`);
/** While this file exists no transaction completes after its markers. */
const HOLD_COMPLETION = `${HOLD}-completion`;
let zooKeeper: ZooKeeperServer;
let cluster: Cluster;

beforeAll(async () => {
  buildExactlyOnce();
  zooKeeper = await startZooKeeper();
  cluster = await startCluster(
    zooKeeper.connectString,
    { "transaction.state.log.num.partitions": "3" },
    { TEST_QUILL_HOLD_TXN_MARKERS: HOLD, TEST_QUILL_HOLD_TXN_COMPLETION: HOLD_COMPLETION },
  );
  await consistentMetadata(cluster, 3);
  await createTopic(cluster.brokers.get(1)!, TOPIC, 3);
  await consistentMetadata(cluster, 3);
}, 120_000);

afterAll(async () => {
  fs.rmSync(HOLD, { force: true });
  fs.rmSync(HOLD_COMPLETION, { force: true });
  await cluster?.close();
  await zooKeeper?.stop();
});

function kafka(): Kafka {
  const brokers = [...cluster.brokers.values()].filter((b) => b.running).map((b) => b.bootstrap);
  return new Kafka({
    brokers,
    logLevel: logLevel.NOTHING,
    retry: { retries: 10, initialRetryTime: 300 },
  });
}

async function coordinatorId(txnId = TXN_ID): Promise<number> {
  const running = [...cluster.brokers.values()].filter((b) => b.running);
  return await until(
    async () => {
      const res = await requestOnce(running[0]!.port, ApiKey.FindCoordinator, 3, {
        key: txnId,
        keyType: 1,
      });
      return res.errorCode === ErrorCode.NONE ? res.nodeId : undefined;
    },
    30_000,
    "a transaction coordinator",
  );
}

async function transact(values: string[], commit: boolean) {
  const producer = kafka().producer({ transactionalId: TXN_ID, maxInFlightRequests: 1 });
  await producer.connect();
  const txn = await producer.transaction();
  await txn.send({
    topic: TOPIC,
    messages: values.map((value, i) => ({ value, partition: i % 3 })),
  });
  if (commit) await txn.commit();
  else await txn.abort();
  await producer.disconnect();
}

async function describedTxn(txnId = TXN_ID) {
  const id = await coordinatorId(txnId);
  const res = await requestOnce(cluster.brokers.get(id)!.port, ApiKey.DescribeTransactions, 0, {
    transactionalIds: [txnId],
  });
  const state = res.transactionStates[0]!;
  expect(state.errorCode).toBe(ErrorCode.NONE);
  return state;
}

async function readCommitted(expected: number): Promise<string[]> {
  const consumer = kafka().consumer({ groupId: `reader-${crypto.randomUUID()}` });
  await consumer.connect();
  await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
  const seen: string[] = [];
  await consumer.run({
    eachMessage: async ({ message }) => {
      seen.push(message.value!.toString());
    },
  });
  const deadline = Date.now() + 30_000;
  while (seen.length < expected && Date.now() < deadline) await Bun.sleep(200);
  await Bun.sleep(1_000);
  await consumer.disconnect();
  return seen.sort();
}

test("Java 3.9 consume-transform-produce: exactly once across kill -9 of the coordinator", async () => {
  const inputs = 1000;
  const topics = { bootstrap: runningBootstrap(cluster), inTopic: "eos-in", outTopic: "eos-out" };
  await createTopic(cluster.brokers.get(1)!, topics.inTopic, 3);
  await createTopic(cluster.brokers.get(1)!, topics.outTopic, 3);
  await consistentMetadata(cluster, 3);
  const values = Array.from({ length: inputs }, (_, i) => String(i));
  await produceWithKafkajs(cluster, topics.inTopic, values);
  let killed = -1;
  let before = { producerId: -1n, producerEpoch: -1 };
  await runPipelineWithFault(topics, async () => {
    before = await describedTxn(PIPELINE_TXN_ID);
    killed = await coordinatorId(PIPELINE_TXN_ID);
    await cluster.brokers.get(killed)!.kill9();
  });
  await verifyExactlyOnce({ ...topics, bootstrap: runningBootstrap(cluster) }, inputs);
  // The new coordinator read the id's state from the replicated __transaction_state.
  expect(await coordinatorId(PIPELINE_TXN_ID)).not.toBe(killed);
  const after = await describedTxn(PIPELINE_TXN_ID);
  // (The client may finish its transaction there without a new InitProducerId: same epoch.)
  expect(after.producerId).toBe(before.producerId);
  expect(after.producerEpoch).toBeGreaterThanOrEqual(before.producerEpoch);
}, 240_000);

/** Brings killed brokers back, so __transaction_state has its min ISR again. */
async function restartDead(): Promise<void> {
  for (const [id, broker] of cluster.brokers) {
    if (!broker.running) cluster.brokers.set(id, await broker.restart());
  }
  await consistentMetadata(cluster, 3, 60_000);
}

/**
 * With the transaction in PrepareCommit (markers held), kills broker `id`, lets markers go and
 * waits for the commit to complete.
 */
async function killPreparedThenAwaitCommit(id: number): Promise<void> {
  expect((await describedTxn()).transactionState).toBe("PrepareCommit");
  await cluster.brokers.get(id)!.kill9();
  fs.rmSync(HOLD);
  await consistentMetadata(cluster, 2, 60_000);
  await until(
    async () => ((await describedTxn()).transactionState === "CompleteCommit" ? true : undefined),
    30_000,
    "the transaction's commit completing",
  );
}

test("kill -9 of the coordinator between a commit's prepare and its markers", async () => {
  await restartDead();
  await transact(["c1", "c2", "c3"], true);
  await transact(["a1", "a2", "a3"], false);
  fs.writeFileSync(HOLD, "");
  await transact(["p1", "p2", "p3"], true);
  // The new coordinator loaded PrepareCommit from the replicated log and wrote the markers.
  // It read the record past its high watermark (the old leader had acknowledged it).
  await killPreparedThenAwaitCommit(await coordinatorId());
  const all = ["c1", "c2", "c3", "p1", "p2", "p3"];
  expect(await readCommitted(all.length)).toEqual(all);
}, 240_000);

test("kill -9 of the coordinator between a commit's markers and its completion", async () => {
  await restartDead();
  fs.writeFileSync(HOLD_COMPLETION, "");
  await transact(["m1", "m2", "m3"], true);
  // The markers are written (every partition's LSO is its high watermark), the completion not.
  await until(async () => ((await openPartitions()) === 0 ? true : undefined), 30_000, "markers");
  expect((await describedTxn()).transactionState).toBe("PrepareCommit");
  await cluster.brokers.get(await coordinatorId())!.kill9();
  fs.rmSync(HOLD_COMPLETION);
  await consistentMetadata(cluster, 2, 60_000);
  // The next coordinator writes the markers again (harmless) and completes.
  await until(
    async () => ((await describedTxn()).transactionState === "CompleteCommit" ? true : undefined),
    30_000,
    "the transaction's completion",
  );
  const all = ["c1", "c2", "c3", "m1", "m2", "m3", "p1", "p2", "p3"];
  expect(await readCommitted(all.length)).toEqual(all);
}, 240_000);

/** How many of TOPIC's partitions have an LSO below their high watermark (an open transaction). */
async function openPartitions(): Promise<number> {
  const { topics } = await metadata(runningBroker());
  const partitions = topics.find((t) => t.name === TOPIC)!.partitions;
  let open = 0;
  for (const { partitionIndex, leaderId } of partitions) {
    const [uncommitted, committed] = await Promise.all(
      [0, 1].map(async (isolationLevel) => {
        const res = await requestOnce(cluster.brokers.get(leaderId)!.port, ApiKey.ListOffsets, 7, {
          replicaId: -1,
          isolationLevel,
          topics: [{ name: TOPIC, partitions: [{ partitionIndex, timestamp: -1n }] }],
        });
        return res.topics[0]!.partitions[0]!.offset;
      }),
    );
    if (committed !== uncommitted) open++;
  }
  return open;
}

/** The group's committed offset of TOPIC-1 as its coordinator answers a stable fetch. */
async function stableOffset(group: string) {
  return await until(
    async () => {
      const found = await requestOnce(runningBroker().port, ApiKey.FindCoordinator, 3, {
        key: group,
        keyType: 0,
      });
      if (found.errorCode !== ErrorCode.NONE) return undefined;
      const res = await requestOnce(
        cluster.brokers.get(found.nodeId)!.port,
        ApiKey.OffsetFetch,
        7,
        {
          groupId: group,
          topics: [{ name: TOPIC, partitionIndexes: [1] }],
          groups: [],
          requireStable: true,
        },
      );
      const p = res.topics[0]?.partitions[0];
      if (res.errorCode !== ErrorCode.NONE || p === undefined) return undefined;
      const retry =
        p.errorCode === ErrorCode.NOT_COORDINATOR ||
        p.errorCode === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS;
      return retry ? undefined : { errorCode: p.errorCode, offset: p.committedOffset };
    },
    30_000,
    `a stable offset fetch of ${group}`,
  );
}

const runningBroker = () => [...cluster.brokers.values()].find((b) => b.running)!;

test("kill -9 of the group coordinator holding an open transaction's pending offsets", async () => {
  await restartDead();
  const txnCoordinator = await coordinatorId();
  const running = runningBroker();
  // A group's coordinator leads its __consumer_offsets partition; the kills above left those
  // leaders on the survivors, so move them back to their preferred replicas first.
  await preferredLeaders(cluster, running);
  // A group coordinated by another broker than the transaction's coordinator.
  const { group, groupCoordinator } = await until(
    async () => {
      for (let i = 0; i < 100; i++) {
        const group = `eos-group-${i}`;
        const found = await requestOnce(running.port, ApiKey.FindCoordinator, 3, {
          key: group,
          keyType: 0,
        });
        if (found.nodeId >= 0 && found.nodeId !== txnCoordinator) {
          return { group, groupCoordinator: found.nodeId };
        }
      }
      return undefined;
    },
    30_000,
    "a group coordinated by another broker than the transaction",
  );
  const producer = kafka().producer({ transactionalId: TXN_ID, maxInFlightRequests: 1 });
  await producer.connect();
  const txn = await producer.transaction();
  await txn.send({ topic: TOPIC, messages: [{ value: "o1", partition: 0 }] });
  await txn.sendOffsets({
    consumerGroupId: group,
    topics: [{ topic: TOPIC, partitions: [{ partition: 1, offset: "42" }] }],
  });
  await cluster.brokers.get(groupCoordinator)!.kill9();
  await consistentMetadata(cluster, 2, 60_000);
  // The group's new coordinator read the offset the dead one held: a consumer taking over must
  // not start before what the open transaction consumed (KIP-447).
  expect(await stableOffset(group)).toEqual({
    errorCode: ErrorCode.UNSTABLE_OFFSET_COMMIT,
    offset: -1n,
  });
  await txn.commit();
  await producer.disconnect();
  const committed = await until(
    async () => {
      const answer = await stableOffset(group);
      return answer.errorCode === ErrorCode.NONE && answer.offset === 42n ? answer : undefined;
    },
    30_000,
    "the pending offset committed by the group's new coordinator",
  );
  expect(committed.offset).toBe(42n);
}, 240_000);
