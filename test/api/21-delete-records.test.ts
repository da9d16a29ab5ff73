// DeleteRecords against a real in-process broker over TCP: every version, the errors Kafka
// gives, segments removed from disk, fetch and ListOffsets after the move, a clean restart.
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import {
  fetchPartition0,
  KafkaClient,
  startTestBroker,
  type TestBroker,
} from "../support/kafka-client.ts";

let b: TestBroker;
let client: KafkaClient;
const TOPIC = "trimmed";

beforeAll(async () => {
  b = await startTestBroker();
  client = await KafkaClient.connect(b.port);
  const res = await client.request(ApiKey.CreateTopics, 7, {
    topics: [
      {
        name: TOPIC,
        numPartitions: 1,
        replicationFactor: 1,
        configs: [{ name: "segment.bytes", value: "1024" }],
      },
      {
        name: "compacted",
        numPartitions: 1,
        replicationFactor: 1,
        configs: [{ name: "cleanup.policy", value: "compact" }],
      },
    ],
  });
  expect(res.topics.map((t) => t.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.NONE]);
  // 40 batches of 5 records of 100 bytes: several 1 KiB segments.
  for (let i = 0; i < 40; i++) await produce(TOPIC, 5);
  await produce("compacted", 1);
}, 60_000);
afterAll(async () => {
  client.close();
  await b.stop();
});

async function produce(topic: string, count: number) {
  const records = Array.from({ length: count }, (_, i) => ({
    key: new TextEncoder().encode(`k${i}`),
    value: new Uint8Array(100),
  }));
  const res = await client.request(ApiKey.Produce, 9, {
    transactionalId: null,
    acks: 1,
    timeoutMs: 5000,
    topicData: [{ name: topic, partitionData: [{ index: 0, records: buildRecordBatch(records) }] }],
  });
  expect(res.responses[0].partitionResponses[0].errorCode).toBe(ErrorCode.NONE);
}

async function deleteRecords(version: number, offsets: Record<string, bigint>, timeoutMs = 5000) {
  const res = await client.request(ApiKey.DeleteRecords, version, {
    timeoutMs,
    topics: Object.entries(offsets).map(([key, offset]) => {
      const [name, partition] = key.split(":");
      return { name, partitions: [{ partitionIndex: Number(partition), offset }] };
    }),
  });
  return res.topics.map((t) => t.partitions[0]);
}

async function earliest(topic: string): Promise<bigint> {
  const res = await client.request(ApiKey.ListOffsets, 7, {
    replicaId: -1,
    isolationLevel: 0,
    topics: [{ name: topic, partitions: [{ partitionIndex: 0, timestamp: -2n }] }],
  });
  expect(res.topics[0].partitions[0].errorCode).toBe(ErrorCode.NONE);
  return res.topics[0].partitions[0].offset;
}

const fetchAt = (offset: bigint) => fetchPartition0(client, TOPIC, offset);

const segmentFiles = () =>
  fs
    .readdirSync(path.join(b.dataDir, `${TOPIC}-0`))
    .filter((f) => f.endsWith(".log"))
    .sort();

test("v0, v1 and v2 move the log start offset; segments wholly below it are deleted", async () => {
  const before = segmentFiles();
  expect(before.length).toBeGreaterThan(4);
  expect(await deleteRecords(0, { [`${TOPIC}:0`]: 12n })).toEqual([
    { partitionIndex: 0, lowWatermark: 12n, errorCode: ErrorCode.NONE },
  ]);
  expect(await earliest(TOPIC)).toBe(12n);
  // A lower offset leaves it where it is, and answers where it is.
  expect((await deleteRecords(1, { [`${TOPIC}:0`]: 3n }))[0].lowWatermark).toBe(12n);
  expect((await deleteRecords(2, { [`${TOPIC}:0`]: 101n }))[0]).toEqual({
    partitionIndex: 0,
    lowWatermark: 101n,
    errorCode: ErrorCode.NONE,
  });
  const after = segmentFiles();
  expect(after.length).toBeLessThan(before.length);
  // The first remaining segment holds offset 101: every one before it lay wholly below.
  const firstBase = BigInt(after[0].replace(".log", ""));
  expect(firstBase).toBeLessThanOrEqual(101n);
  expect(firstBase).toBeGreaterThan(50n);
  expect(await earliest(TOPIC)).toBe(101n);
});

test("a fetch below the log start offset is OFFSET_OUT_OF_RANGE; at it, records come", async () => {
  const below = await fetchAt(100n);
  expect(below.errorCode).toBe(ErrorCode.OFFSET_OUT_OF_RANGE);
  expect(below.logStartOffset).toBe(101n);
  const at = await fetchAt(101n);
  expect(at.errorCode).toBe(ErrorCode.NONE);
  expect((at.records as Uint8Array).length).toBeGreaterThan(0);
});

test("errors as Kafka: above the HW, negative, unknown partitions, compacted topics", async () => {
  const [above, negative, unknownTopic, unknownPartition, compacted] = await Promise.all([
    deleteRecords(2, { [`${TOPIC}:0`]: 201n }),
    deleteRecords(2, { [`${TOPIC}:0`]: -2n }),
    deleteRecords(2, { "nope:0": 0n }),
    deleteRecords(2, { [`${TOPIC}:7`]: 0n }),
    deleteRecords(2, { "compacted:0": 1n }),
  ]);
  expect(above[0]).toMatchObject({ errorCode: ErrorCode.OFFSET_OUT_OF_RANGE, lowWatermark: -1n });
  expect(negative[0].errorCode).toBe(ErrorCode.OFFSET_OUT_OF_RANGE);
  expect(unknownTopic[0].errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
  expect(unknownPartition[0].errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
  expect(compacted[0].errorCode).toBe(ErrorCode.POLICY_VIOLATION);
  expect(await earliest("compacted")).toBe(0n);
});

test("-1 means the high watermark; the start offset is checkpointed and survives a restart", async () => {
  expect(await deleteRecords(2, { [`${TOPIC}:0`]: 150n })).toEqual([
    { partitionIndex: 0, lowWatermark: 150n, errorCode: ErrorCode.NONE },
  ]);
  const checkpoint = fs.readFileSync(path.join(b.dataDir, "log-start-offset-checkpoint"), "utf8");
  expect(checkpoint.split("\n")).toContain(`${TOPIC} 0 150`);
  client.close();
  b = await b.restart();
  client = await KafkaClient.connect(b.port);
  expect(await earliest(TOPIC)).toBe(150n);
  expect((await fetchAt(149n)).errorCode).toBe(ErrorCode.OFFSET_OUT_OF_RANGE);
  expect((await deleteRecords(0, { [`${TOPIC}:0`]: -1n }))[0]).toEqual({
    partitionIndex: 0,
    lowWatermark: 200n,
    errorCode: ErrorCode.NONE,
  });
  expect(await earliest(TOPIC)).toBe(200n);
  // Everything is deleted; new records still go in and start at 200.
  await produce(TOPIC, 5);
  expect(await earliest(TOPIC)).toBe(200n);
  expect((await fetchAt(200n)).errorCode).toBe(ErrorCode.NONE);
});

test("a checkpoint the disk refuses is KAFKA_STORAGE_ERROR, not a success", async () => {
  await produce(TOPIC, 5);
  // A directory where the checkpoint's temporary file must go makes its open fail.
  const blocker = path.join(b.dataDir, "log-start-offset-checkpoint.tmp");
  fs.mkdirSync(blocker);
  try {
    expect(await deleteRecords(2, { [`${TOPIC}:0`]: 203n })).toEqual([
      { partitionIndex: 0, lowWatermark: -1n, errorCode: ErrorCode.KAFKA_STORAGE_ERROR },
    ]);
  } finally {
    fs.rmdirSync(blocker);
  }
  expect((await deleteRecords(2, { [`${TOPIC}:0`]: 204n }))[0].errorCode).toBe(ErrorCode.NONE);
  const checkpoint = fs.readFileSync(path.join(b.dataDir, "log-start-offset-checkpoint"), "utf8");
  expect(checkpoint.split("\n")).toContain(`${TOPIC} 0 204`);
});
