// The transaction coordinator's APIs on the wire: InitProducerId with a transactional id,
// AddPartitionsToTxn, EndTxn, fencing and its version-dependent error codes, the timeout
// checks, DescribeTransactions and ListTransactions, and the state surviving a restart.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { KafkaClient, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

let b: TestBroker;
let client: KafkaClient;
beforeAll(async () => {
  b = await startTestBroker({
    "transaction.state.log.num.partitions": "2",
    "transaction.max.timeout.ms": "60000",
  });
  client = await KafkaClient.connect(b.port);
  const res = await client.request(ApiKey.CreateTopics, 7, {
    topics: [{ name: "txn-api", numPartitions: 2, replicationFactor: 1 }],
  });
  expect(res.topics[0].errorCode).toBe(ErrorCode.NONE);
  const found = await client.request(ApiKey.FindCoordinator, 3, { key: "api-tx", keyType: 1 });
  expect(found.errorCode).toBe(ErrorCode.NONE);
}, 60_000);
afterAll(async () => {
  client.close();
  await b.stop();
});

const init = (id: string, timeoutMs = 30_000, version = 4, producerId = -1n, producerEpoch = -1) =>
  client.request(ApiKey.InitProducerId, version, {
    transactionalId: id,
    transactionTimeoutMs: timeoutMs,
    producerId,
    producerEpoch,
  });

async function initUntilReady(id: string) {
  // CONCURRENT_TRANSACTIONS while a previous incarnation's transaction is being aborted.
  for (let i = 0; i < 100; i++) {
    const res = await init(id);
    if (res.errorCode !== ErrorCode.CONCURRENT_TRANSACTIONS) return res;
    await Bun.sleep(20);
  }
  throw new Error("still CONCURRENT_TRANSACTIONS");
}

const addPartitions = (id: string, producerId: bigint, epoch: number, version = 3) =>
  client.request(ApiKey.AddPartitionsToTxn, version, {
    v3AndBelowTransactionalId: id,
    v3AndBelowProducerId: producerId,
    v3AndBelowProducerEpoch: epoch,
    v3AndBelowTopics: [{ name: "txn-api", partitions: [0, 1] }],
  });

const describe = async (id: string) =>
  (
    await client.request(ApiKey.DescribeTransactions, 0, {
      transactionalIds: [id],
    })
  ).transactionStates[0];

test("one producer id per transactional id, the epoch bumped by every init", async () => {
  const first = await init("api-tx");
  expect(first.errorCode).toBe(ErrorCode.NONE);
  const second = await init("api-tx");
  expect(second).toMatchObject({
    errorCode: ErrorCode.NONE,
    producerId: first.producerId,
    producerEpoch: first.producerEpoch + 1,
  });
  expect((await init("other-tx")).producerId).not.toBe(first.producerId);
});

test("InitProducerId with a producer id and epoch (KIP-360) answers as Kafka 3.9", async () => {
  // A new id takes any pair: @platformatic/kafka sends 0/0 instead of -1/-1.
  const first = await init("kip360-tx", 30_000, 4, 0n, 0);
  expect(first).toMatchObject({ errorCode: ErrorCode.NONE, producerEpoch: 0 });
  const bumped = await init("kip360-tx", 30_000, 4, first.producerId, 0);
  expect(bumped).toMatchObject({ errorCode: ErrorCode.NONE, producerEpoch: 1 });
  // The previous epoch again is a retry whose answer was lost: the current epoch, not bumped.
  const retried = await init("kip360-tx", 30_000, 4, first.producerId, 0);
  expect(retried).toMatchObject({ errorCode: ErrorCode.NONE, producerEpoch: 1 });
  const staleEpoch = await init("kip360-tx", 30_000, 4, first.producerId, 7);
  expect(staleEpoch.errorCode).toBe(ErrorCode.PRODUCER_FENCED);
  const otherId = await init("kip360-tx", 30_000, 4, first.producerId + 1000n, 1);
  expect(otherId.errorCode).toBe(ErrorCode.PRODUCER_FENCED);
});

test("timeouts above transaction.max.timeout.ms are INVALID_TRANSACTION_TIMEOUT", async () => {
  expect((await init("api-tx", 60_001)).errorCode).toBe(ErrorCode.INVALID_TRANSACTION_TIMEOUT);
  expect((await init("api-tx", 0)).errorCode).toBe(ErrorCode.INVALID_TRANSACTION_TIMEOUT);
});

test("an open transaction is described, listed, ended and fenced as in Kafka", async () => {
  const { producerId, producerEpoch } = await initUntilReady("life-tx");
  const added = await addPartitions("life-tx", producerId, producerEpoch);
  expect(
    added.resultsByTopicV3AndBelow[0].resultsByPartition.map((p) => p.partitionErrorCode),
  ).toEqual([ErrorCode.NONE, ErrorCode.NONE]);
  expect(await describe("life-tx")).toMatchObject({
    errorCode: ErrorCode.NONE,
    transactionState: "Ongoing",
    producerId,
    producerEpoch,
    topics: [{ topic: "txn-api", partitions: [0, 1] }],
  });
  const listed = await client.request(ApiKey.ListTransactions, 1, {
    stateFilters: ["Ongoing", "Bogus"],
    producerIdFilters: [],
    durationFilter: -1n,
  });
  expect(listed.unknownStateFilters).toEqual(["Bogus"]);
  expect(listed.transactionStates.map((t) => t.transactionalId)).toContain("life-tx");
  // A new incarnation aborts the open transaction first, then gets the next epoch but one.
  const fenced = await initUntilReady("life-tx");
  expect(fenced.producerEpoch).toBe(producerEpoch + 2);
  expect((await describe("life-tx")).transactionState).toBe("Empty");
  // The old incarnation is fenced: PRODUCER_FENCED from v2, INVALID_PRODUCER_EPOCH before.
  const stale = await addPartitions("life-tx", producerId, producerEpoch);
  expect(stale.resultsByTopicV3AndBelow[0].resultsByPartition[0].partitionErrorCode).toBe(
    ErrorCode.PRODUCER_FENCED,
  );
  const staleV1 = await addPartitions("life-tx", producerId, producerEpoch, 1);
  expect(staleV1.resultsByTopicV3AndBelow[0].resultsByPartition[0].partitionErrorCode).toBe(
    ErrorCode.INVALID_PRODUCER_EPOCH,
  );
  const end = await client.request(ApiKey.EndTxn, 3, {
    transactionalId: "life-tx",
    producerId,
    producerEpoch,
    committed: true,
  });
  expect(end.errorCode).toBe(ErrorCode.PRODUCER_FENCED);
  // EndTxn on an Empty transaction is INVALID_TXN_STATE; an unknown id INVALID_PRODUCER_ID_MAPPING.
  const empty = await client.request(ApiKey.EndTxn, 3, {
    transactionalId: "life-tx",
    producerId: fenced.producerId,
    producerEpoch: fenced.producerEpoch,
    committed: true,
  });
  expect(empty.errorCode).toBe(ErrorCode.INVALID_TXN_STATE);
  const unknown = await client.request(ApiKey.EndTxn, 3, {
    transactionalId: "never-seen",
    producerId: 1n,
    producerEpoch: 0,
    committed: false,
  });
  expect(unknown.errorCode).toBe(ErrorCode.INVALID_PRODUCER_ID_MAPPING);
  expect((await describe("never-seen")).errorCode).toBe(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND);
});

test("committing moves through PrepareCommit to CompleteCommit; the state survives a restart", async () => {
  const { producerId, producerEpoch } = await initUntilReady("restart-tx");
  await addPartitions("restart-tx", producerId, producerEpoch);
  const end = await client.request(ApiKey.EndTxn, 3, {
    transactionalId: "restart-tx",
    producerId,
    producerEpoch,
    committed: true,
  });
  expect(end.errorCode).toBe(ErrorCode.NONE);
  for (
    let i = 0;
    i < 100 && (await describe("restart-tx")).transactionState !== "CompleteCommit";
    i++
  )
    await Bun.sleep(20);
  expect((await describe("restart-tx")).transactionState).toBe("CompleteCommit");
  // A retried EndTxn of the same decision is answered NONE.
  const retried = await client.request(ApiKey.EndTxn, 3, {
    transactionalId: "restart-tx",
    producerId,
    producerEpoch,
    committed: true,
  });
  expect(retried.errorCode).toBe(ErrorCode.NONE);
  client.close();
  b = await b.restart();
  client = await KafkaClient.connect(b.port);
  expect(await describe("restart-tx")).toMatchObject({
    transactionState: "CompleteCommit",
    producerId,
    producerEpoch,
  });
  expect((await init("restart-tx")).producerEpoch).toBe(producerEpoch + 1);
});

test("clients cannot write __transaction_state (INVALID_TOPIC_EXCEPTION)", async () => {
  const { buildRecordBatch } = await import("../../src/protocol/record-batch.ts");
  const res = await client.request(ApiKey.Produce, 9, {
    transactionalId: null,
    acks: 1,
    timeoutMs: 5000,
    topicData: [
      {
        name: "__transaction_state",
        partitionData: [{ index: 0, records: buildRecordBatch([{ value: new Uint8Array(1) }]) }],
      },
    ],
  });
  expect(res.responses[0].partitionResponses[0].errorCode).toBe(ErrorCode.INVALID_TOPIC_EXCEPTION);
});

test("ids unused for transactional.id.expiration.ms are forgotten, for good; open ones stay", async () => {
  const own = await startTestBroker({
    "transaction.state.log.num.partitions": "1",
    "transactional.id.expiration.ms": "1500",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "100",
  });
  let c = await KafkaClient.connect(own.port);
  let restarted: TestBroker | null = null;
  try {
    const created = await c.request(ApiKey.CreateTopics, 7, {
      topics: [{ name: "txn-api", numPartitions: 2, replicationFactor: 1 }],
    });
    expect(created.topics[0].errorCode).toBe(ErrorCode.NONE);
    const initOn = (id: string) =>
      c.request(ApiKey.InitProducerId, 4, {
        transactionalId: id,
        transactionTimeoutMs: 60_000,
        producerId: -1n,
        producerEpoch: -1,
      });
    // The first FindCoordinator creates __transaction_state; wait until it is loaded.
    for (let i = 0; i < 100; i++) {
      const found = await c.request(ApiKey.FindCoordinator, 3, { key: "idle-tx", keyType: 1 });
      if (found.errorCode === ErrorCode.NONE) break;
      await Bun.sleep(50);
    }
    const idle = await initOn("idle-tx");
    const open = await initOn("open-tx");
    const added = await c.request(ApiKey.AddPartitionsToTxn, 3, {
      v3AndBelowTransactionalId: "open-tx",
      v3AndBelowProducerId: open.producerId,
      v3AndBelowProducerEpoch: open.producerEpoch,
      v3AndBelowTopics: [{ name: "txn-api", partitions: [0] }],
    });
    expect(added.resultsByTopicV3AndBelow[0].resultsByPartition[0].partitionErrorCode).toBe(0);
    const described = async (id: string) =>
      (await c.request(ApiKey.DescribeTransactions, 0, { transactionalIds: [id] }))
        .transactionStates[0];
    const deadline = Date.now() + 20_000;
    while ((await described("idle-tx")).errorCode === ErrorCode.NONE && Date.now() < deadline)
      await Bun.sleep(100);
    expect((await described("idle-tx")).errorCode).toBe(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND);
    // An id with a transaction open is never expired (its timeout aborts it first).
    expect(await described("open-tx")).toMatchObject({ transactionState: "Ongoing" });
    const listed = await c.request(ApiKey.ListTransactions, 0, {
      stateFilters: [],
      producerIdFilters: [],
    });
    expect(listed.transactionStates.map((t) => t.transactionalId)).toEqual(["open-tx"]);
    // The tombstone in __transaction_state keeps it forgotten across a restart; the id then
    // starts again under a new producer id.
    c.close();
    restarted = await own.restart();
    c = await KafkaClient.connect(restarted.port);
    expect((await described("idle-tx")).errorCode).toBe(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND);
    const again = await initOn("idle-tx");
    expect(again.errorCode).toBe(ErrorCode.NONE);
    expect(again.producerId).not.toBe(idle.producerId);
    expect(again.producerEpoch).toBe(0);
  } finally {
    c.close();
    await (restarted ?? own).stop();
  }
}, 60_000);
