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
    topics: [
      { name: "t", numPartitions: 2, replicationFactor: 1 },
      {
        name: "strict",
        numPartitions: 1,
        replicationFactor: 1,
        configs: [{ name: "min.insync.replicas", value: "2" }],
      },
    ],
  });
  expect(res.topics.map((t: { errorCode: number }) => t.errorCode)).toEqual([
    ErrorCode.NONE,
    ErrorCode.NONE,
  ]);
}, 60_000);
afterAll(async () => {
  client.close();
  await b.stop();
});

const batch = (value: string) =>
  buildRecordBatch([{ key: null, value: new TextEncoder().encode(value) }]);

type Part = { topic: string; index: number; records: Uint8Array | null };

async function produce(acks: number, parts: readonly Part[]): Promise<number[]> {
  const res = await client.request(ApiKey.Produce, 9, {
    transactionalId: null,
    acks,
    timeoutMs: 5000,
    topicData: parts.map((p) => ({
      name: p.topic,
      partitionData: [{ index: p.index, records: p.records }],
    })),
  });
  return res.responses.map(
    (t: { partitionResponses: { errorCode: number }[] }) => t.partitionResponses[0]!.errorCode,
  );
}

test("per-partition errors: unknown partition, missing records, two batches in one request", async () => {
  const two = new Uint8Array([...batch("x"), ...batch("y")]);
  const codes = await produce(1, [
    { topic: "t", index: 7, records: batch("a") },
    { topic: "t", index: 0, records: null },
    { topic: "t", index: 0, records: two },
    { topic: "t", index: 1, records: batch("ok") },
  ]);
  expect(codes).toEqual([
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.INVALID_RECORD,
    ErrorCode.INVALID_RECORD,
    ErrorCode.NONE,
  ]);
});

test("the partition's own refusal comes before its records' errors", async () => {
  const two = new Uint8Array([...batch("x"), ...batch("y")]);
  const codes = await produce(-1, [
    { topic: "t", index: 7, records: null },
    { topic: "nope", index: 0, records: two },
    { topic: "__transaction_state", index: 0, records: null },
    { topic: "strict", index: 0, records: two },
    { topic: "t", index: 0, records: two },
  ]);
  expect(codes).toEqual([
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.INVALID_TOPIC_EXCEPTION,
    ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.INVALID_RECORD,
  ]);
});

test("truncated and corrupt batches fail alone; the valid partition beside them is written", async () => {
  const corrupt = batch("a");
  corrupt[corrupt.length - 1]! ^= 0xff; // the CRC no longer matches: the log's validator says so
  const codes = await produce(1, [
    { topic: "t", index: 0, records: batch("a").subarray(0, 20) },
    { topic: "t", index: 0, records: corrupt },
    { topic: "t", index: 1, records: batch("b") },
  ]);
  expect(codes).toEqual([ErrorCode.INVALID_RECORD, ErrorCode.CORRUPT_MESSAGE, ErrorCode.NONE]);
});
