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
    topics: [{ name: "idem", numPartitions: 2, replicationFactor: 1 }],
  });
  expect(res.topics[0].errorCode).toBe(ErrorCode.NONE);
}, 60_000);
afterAll(async () => {
  client.close();
  await b.stop();
});

const init = (version: number, body: object = {}) =>
  client.request(ApiKey.InitProducerId, version, {
    transactionalId: null,
    transactionTimeoutMs: 60_000,
    ...body,
  });

function produce(producerId: bigint, epoch: number, seq: number, partition = 0, count = 3) {
  const records = Array.from({ length: count }, (_, i) => ({
    value: new TextEncoder().encode(`s${seq + i}`),
  }));
  const batch = buildRecordBatch(records, { producerId, producerEpoch: epoch, baseSequence: seq });
  return client
    .request(ApiKey.Produce, 9, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 5000,
      topicData: [{ name: "idem", partitionData: [{ index: partition, records: batch }] }],
    })
    .then((r) => r.responses[0].partitionResponses[0]);
}

test("every version hands out a new id with epoch 0, increasing", async () => {
  const ids: bigint[] = [];
  for (let version = 0; version <= 5; version++) {
    const res = await init(version);
    expect(res.errorCode).toBe(ErrorCode.NONE);
    expect(res.producerEpoch).toBe(0);
    ids.push(res.producerId);
  }
  expect(new Set(ids).size).toBe(6);
  expect([...ids].sort((x, y) => (x < y ? -1 : 1))).toEqual(ids);
});

test("an idempotent producer re-initialising with its id and epoch gets a new id (as Kafka)", async () => {
  const first = await init(4);
  const again = await init(4, { producerId: first.producerId, producerEpoch: 0 });
  expect(again.errorCode).toBe(ErrorCode.NONE);
  expect(again.producerId).not.toBe(first.producerId);
  expect(again.producerEpoch).toBe(0);
});

test("refusals: transactional ids (no coordinator), empty ids, half a producer id/epoch pair", async () => {
  expect((await init(3, { transactionalId: "txn-1" })).errorCode).toBe(
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
  );
  expect((await init(0, { transactionalId: "" })).errorCode).toBe(ErrorCode.INVALID_REQUEST);
  const half = await init(3, { producerId: 12n, producerEpoch: -1 });
  expect(half.errorCode).toBe(ErrorCode.INVALID_REQUEST);
  expect(half.producerId).toBe(-1n);
});

test("ids stay unique across a broker restart", async () => {
  const before = (await init(4)).producerId;
  client.close();
  b = await b.restart();
  client = await KafkaClient.connect(b.port);
  const after = (await init(4)).producerId;
  expect(after).toBeGreaterThan(before);
});

test("produce with the id: a retry returns the first offset, a gap is refused", async () => {
  const { producerId } = await init(4);
  expect((await produce(producerId, 0, 0)).baseOffset).toBe(0n);
  expect((await produce(producerId, 0, 3)).baseOffset).toBe(3n);
  const retry = await produce(producerId, 0, 0);
  expect(retry.errorCode).toBe(ErrorCode.NONE);
  expect(retry.baseOffset).toBe(0n);
  expect((await produce(producerId, 0, 9)).errorCode).toBe(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER);
});
