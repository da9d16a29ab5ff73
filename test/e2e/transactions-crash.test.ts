// A broker killed with kill -9 while a transaction is open (issue 15): after the restart the
// partition still holds the transaction open (its LSO stays at the first transactional offset,
// from the producer state), the coordinator reloads the id's state from __transaction_state,
// and once the transaction's timeout passes it aborts it with a bumped epoch: the ABORT marker
// moves the LSO and read_committed fetches list the aborted transaction. And a kill -9 between
// a commit's prepare and its completion (markers held by a test hook): the restarted
// coordinator finds PrepareCommit and writes the COMMIT markers. And a kill -9 after the markers
// and before the CompleteCommit record (held by another hook): the restarted coordinator writes
// the markers again (harmless) and completes.
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { ChildBroker } from "../support/child-broker.ts";
import { KafkaClient } from "../support/kafka-client.ts";

const TOPIC = "crash-txn";
const TXN_ID = "crash-tx";
let broker: ChildBroker;

beforeAll(async () => {
  broker = await ChildBroker.start({
    settings: {
      "transaction.state.log.num.partitions": "2",
      "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
    },
  });
}, 60_000);

afterAll(async () => {
  await broker?.terminate().catch(() => undefined);
  await broker?.remove();
});

async function lastStableOffset(client: KafkaClient, topic = TOPIC): Promise<bigint> {
  const res = await client.request(ApiKey.ListOffsets, 7, {
    replicaId: -1,
    isolationLevel: 1,
    topics: [{ name: topic, partitions: [{ partitionIndex: 0, timestamp: -1n }] }],
  });
  return res.topics[0]!.partitions[0]!.offset;
}

async function describe(client: KafkaClient, txnId = TXN_ID) {
  const res = await client.request(ApiKey.DescribeTransactions, 0, { transactionalIds: [txnId] });
  return res.transactionStates[0]!;
}

/** Creates the topic and leaves a transaction of 3 records open on it. */
async function openTransaction(client: KafkaClient, topic = TOPIC, txnId = TXN_ID) {
  const created = await client.request(ApiKey.CreateTopics, 7, {
    topics: [{ name: topic, numPartitions: 1, replicationFactor: 1 }],
  });
  expect(created.topics[0]!.errorCode).toBe(ErrorCode.NONE);
  const found = await client.request(ApiKey.FindCoordinator, 3, { key: txnId, keyType: 1 });
  expect(found.errorCode).toBe(ErrorCode.NONE);
  const init = await client.request(ApiKey.InitProducerId, 4, {
    transactionalId: txnId,
    transactionTimeoutMs: 3_000,
    producerId: -1n,
    producerEpoch: -1,
  });
  expect(init.errorCode).toBe(ErrorCode.NONE);
  const { producerId, producerEpoch } = init;
  const added = await client.request(ApiKey.AddPartitionsToTxn, 3, {
    v3AndBelowTransactionalId: txnId,
    v3AndBelowProducerId: producerId,
    v3AndBelowProducerEpoch: producerEpoch,
    v3AndBelowTopics: [{ name: topic, partitions: [0] }],
  });
  expect(added.resultsByTopicV3AndBelow[0]!.resultsByPartition[0]!.partitionErrorCode).toBe(0);
  const records = [1, 2, 3].map((i) => ({ value: new TextEncoder().encode(`v${i}`) }));
  const batch = buildRecordBatch(records, {
    producerId,
    producerEpoch,
    baseSequence: 0,
    isTransactional: true,
  });
  const produced = await client.request(ApiKey.Produce, 9, {
    transactionalId: txnId,
    acks: -1,
    timeoutMs: 5000,
    topicData: [{ name: topic, partitionData: [{ index: 0, records: batch }] }],
  });
  expect(produced.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.NONE);
  return { producerId, producerEpoch };
}

/** Opens a transaction of 3 records (see openTransaction) and asks its coordinator to commit. */
async function openAndCommit(client: KafkaClient, topic: string, txnId: string) {
  const ids = await openTransaction(client, topic, txnId);
  const end = await client.request(ApiKey.EndTxn, 3, {
    transactionalId: txnId,
    ...ids,
    committed: true,
  });
  expect(end.errorCode).toBe(ErrorCode.NONE);
  return ids;
}

/** A read_committed fetch of the whole partition. */
async function fetchCommitted(client: KafkaClient, topic = TOPIC) {
  const fetched = await client.request(ApiKey.Fetch, 12, {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 1 << 20,
    isolationLevel: 1,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [
      { topic, partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20 }] },
    ],
    forgottenTopicsData: [],
    rackId: "",
  });
  return fetched.responses[0]!.partitions[0]!;
}

test("an open transaction survives kill -9 and is aborted by the coordinator after its timeout", async () => {
  let client = await KafkaClient.connect(broker.port);
  const { producerId, producerEpoch } = await openTransaction(client);
  expect(await lastStableOffset(client)).toBe(0n);
  client.close();

  await broker.kill9();
  broker = await broker.restart();
  client = await KafkaClient.connect(broker.port);
  // The state and the open transaction came back from the log (the timeout may already be
  // running out: the coordinator then aborts within a few hundred ms).
  const reloaded = await describe(client);
  expect(reloaded.errorCode).toBe(ErrorCode.NONE);
  expect(reloaded.producerId).toBe(producerId);
  const deadline = Date.now() + 20_000;
  while ((await lastStableOffset(client)) < 4n && Date.now() < deadline) await Bun.sleep(100);
  expect(await lastStableOffset(client)).toBe(4n);
  const aborted = await describe(client);
  expect(aborted).toMatchObject({ transactionState: "CompleteAbort", producerId });
  expect(aborted.producerEpoch).toBe(producerEpoch + 1);
  const p = await fetchCommitted(client);
  expect(p.lastStableOffset).toBe(4n);
  expect(p.abortedTransactions).toEqual([{ producerId, firstOffset: 0n }]);
  // The producer's old epoch is fenced.
  const end = await client.request(ApiKey.EndTxn, 3, {
    transactionalId: TXN_ID,
    producerId,
    producerEpoch,
    committed: true,
  });
  expect(end.errorCode).toBe(ErrorCode.PRODUCER_FENCED);
  client.close();
}, 90_000);

const HOLD_MARKERS = path.join(os.tmpdir(), `quill-hold-markers-${process.pid}-${Date.now()}`);
const HOLD_COMPLETION = `${HOLD_MARKERS}-completion`;
/** The prepare tests' broker, with both test hooks: the first test's stays as it was. */
const held: { broker?: ChildBroker } = {};

async function heldBroker(): Promise<{ broker: ChildBroker }> {
  held.broker ??= await ChildBroker.start({
    settings: { "transaction.state.log.num.partitions": "2" },
    env: {
      TEST_QUILL_HOLD_TXN_MARKERS: HOLD_MARKERS,
      TEST_QUILL_HOLD_TXN_COMPLETION: HOLD_COMPLETION,
    },
  });
  return held as { broker: ChildBroker };
}

afterAll(async () => {
  fs.rmSync(HOLD_MARKERS, { force: true });
  fs.rmSync(HOLD_COMPLETION, { force: true });
  await held.broker?.terminate().catch(() => undefined);
  await held.broker?.remove();
});

test("kill -9 between a commit's prepare and its markers: the restarted coordinator commits", async () => {
  fs.writeFileSync(HOLD_MARKERS, "");
  await commitPreparedThenKill(await heldBroker(), "prepared-txn", "prepared-tx", HOLD_MARKERS);
}, 90_000);

test("kill -9 between a commit's markers and its completion: the restarted coordinator completes", async () => {
  const topic = "marked-txn";
  const txnId = "marked-tx";
  const own = await heldBroker();
  fs.writeFileSync(HOLD_COMPLETION, "");
  let client = await KafkaClient.connect(own.broker.port);
  const { producerId, producerEpoch } = await openAndCommit(client, topic, txnId);
  // The COMMIT marker is written (the LSO passed it), the completion is not.
  const deadline = Date.now() + 20_000;
  while ((await lastStableOffset(client, topic)) < 4n && Date.now() < deadline)
    await Bun.sleep(100);
  expect(await lastStableOffset(client, topic)).toBe(4n);
  expect(await describe(client, txnId)).toMatchObject({ transactionState: "PrepareCommit" });
  client.close();

  await own.broker.kill9();
  fs.rmSync(HOLD_COMPLETION);
  own.broker = await own.broker.restart();
  client = await KafkaClient.connect(own.broker.port);
  while (
    (await describe(client, txnId)).transactionState !== "CompleteCommit" &&
    Date.now() < deadline + 20_000
  )
    await Bun.sleep(100);
  expect(await describe(client, txnId)).toMatchObject({
    transactionState: "CompleteCommit",
    producerId,
    producerEpoch,
  });
  // The marker written again is harmless: the three records are committed once, nothing open.
  const p = await fetchCommitted(client, topic);
  expect(p.abortedTransactions ?? []).toEqual([]);
  expect(p.lastStableOffset).toBe(p.highWatermark);
  expect(p.highWatermark).toBeGreaterThanOrEqual(4n);
  // The next incarnation of the id starts from the completed state.
  const next = await client.request(ApiKey.InitProducerId, 4, {
    transactionalId: txnId,
    transactionTimeoutMs: 3_000,
    producerId: -1n,
    producerEpoch: -1,
  });
  expect(next).toMatchObject({
    errorCode: ErrorCode.NONE,
    producerId,
    producerEpoch: producerEpoch + 1,
  });
  client.close();
}, 90_000);

async function commitPreparedThenKill(
  own: { broker: ChildBroker },
  topic: string,
  txnId: string,
  hold: string,
) {
  let client = await KafkaClient.connect(own.broker.port);
  const { producerId, producerEpoch } = await openAndCommit(client, topic, txnId);
  // The decision is durable, the markers are not written: the commit is not visible yet.
  expect(await describe(client, txnId)).toMatchObject({ transactionState: "PrepareCommit" });
  await Bun.sleep(300);
  expect(await lastStableOffset(client, topic)).toBe(0n);
  client.close();

  await own.broker.kill9();
  fs.rmSync(hold);
  own.broker = await own.broker.restart();
  client = await KafkaClient.connect(own.broker.port);
  const deadline = Date.now() + 20_000;
  while ((await lastStableOffset(client, topic)) < 4n && Date.now() < deadline)
    await Bun.sleep(100);
  expect(await lastStableOffset(client, topic)).toBe(4n);
  const done = await describe(client, txnId);
  expect(done).toMatchObject({ transactionState: "CompleteCommit", producerId, producerEpoch });
  const p = await fetchCommitted(client, topic);
  expect(p.abortedTransactions ?? []).toEqual([]);
  expect(p.highWatermark).toBe(4n);
  client.close();
}
