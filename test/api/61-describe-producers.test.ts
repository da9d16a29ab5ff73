import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { KafkaClient, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

let b: TestBroker;
let client: KafkaClient;
beforeAll(async () => {
  b = await startTestBroker();
  client = await KafkaClient.connect(b.port);
  const res = await client.request(ApiKey.CreateTopics, 7, {
    topics: [{ name: "described", numPartitions: 2, replicationFactor: 1 }],
  });
  expect(res.topics[0].errorCode).toBe(ErrorCode.NONE);
}, 60_000);
afterAll(async () => {
  client.close();
  await b.stop();
});

async function produce(producerId: bigint, epoch: number, seq: number, count: number) {
  const records = Array.from({ length: count }, () => ({ value: new Uint8Array(4) }));
  const batch = buildRecordBatch(records, { producerId, producerEpoch: epoch, baseSequence: seq });
  const res = await client.request(ApiKey.Produce, 9, {
    transactionalId: null,
    acks: 1,
    timeoutMs: 5000,
    topicData: [{ name: "described", partitionData: [{ index: 0, records: batch }] }],
  });
  expect(res.responses[0].partitionResponses[0].errorCode).toBe(ErrorCode.NONE);
}

test("v0 lists each producer's epoch, last sequence and timestamp; unknown partitions fail", async () => {
  await produce(100n, 2, 0, 3);
  await produce(100n, 2, 3, 4);
  await produce(200n, 0, 50, 1);
  const described = await client.request(ApiKey.DescribeProducers, 0, {
    topics: [
      { name: "described", partitionIndexes: [0, 1, 7] },
      { name: "nope", partitionIndexes: [0] },
    ],
  });
  const [p0, p1, p7] = described.topics[0].partitions;
  expect(p0.errorCode).toBe(ErrorCode.NONE);
  const byId = new Map(p0.activeProducers.map((p) => [p.producerId, p]));
  expect(byId.get(100n)).toMatchObject({
    producerEpoch: 2,
    lastSequence: 6,
    coordinatorEpoch: -1,
    currentTxnStartOffset: -1n,
  });
  expect(byId.get(200n)).toMatchObject({ producerEpoch: 0, lastSequence: 50 });
  expect(byId.get(100n)!.lastTimestamp).toBeGreaterThan(0n);
  expect(p1.activeProducers).toEqual([]);
  expect(p7.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
  expect(described.topics[1].partitions[0].errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
});

test("the producers survive a broker restart (snapshot at shutdown)", async () => {
  client.close();
  b = await b.restart();
  client = await KafkaClient.connect(b.port);
  const described = await client.request(ApiKey.DescribeProducers, 0, {
    topics: [{ name: "described", partitionIndexes: [0] }],
  });
  const ids = described.topics[0].partitions[0].activeProducers.map((p) => p.producerId);
  expect(ids.sort()).toEqual([100n, 200n]);
});

test("a producer with an open transaction shows its first offset until the marker", async () => {
  const batch = buildRecordBatch([{ value: new Uint8Array(4) }], {
    producerId: 300n,
    producerEpoch: 0,
    baseSequence: 0,
    isTransactional: true,
  });
  const res = await client.request(ApiKey.Produce, 9, {
    transactionalId: "t",
    acks: 1,
    timeoutMs: 5000,
    topicData: [{ name: "described", partitionData: [{ index: 1, records: batch }] }],
  });
  const { errorCode, baseOffset } = res.responses[0].partitionResponses[0];
  expect(errorCode).toBe(ErrorCode.NONE);
  const describe = async () =>
    (
      await client.request(ApiKey.DescribeProducers, 0, {
        topics: [{ name: "described", partitionIndexes: [1] }],
      })
    ).topics[0].partitions[0].activeProducers.find((p) => p.producerId === 300n);
  expect(await describe()).toMatchObject({ currentTxnStartOffset: baseOffset });
  const marked = await client.request(ApiKey.WriteTxnMarkers, 1, {
    markers: [
      {
        producerId: 300n,
        producerEpoch: 0,
        transactionResult: false,
        coordinatorEpoch: 3,
        topics: [{ name: "described", partitionIndexes: [1] }],
      },
    ],
  });
  expect(marked.markers[0].topics[0].partitions[0].errorCode).toBe(ErrorCode.NONE);
  expect(await describe()).toMatchObject({ currentTxnStartOffset: -1n, coordinatorEpoch: 3 });
});
