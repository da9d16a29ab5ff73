/**
 * Incremental fetch sessions (KIP-227) on the wire: a full fetch at epoch 0 opens a session,
 * incremental fetches list only changed partitions and get only partitions with news, forgotten
 * partitions leave the session, and the errors a client must recover from are Kafka's: unknown
 * session, wrong epoch, names switched for ids. A session cache of one slot refuses a second
 * consumer session (session id 0) and gives it to a follower's fetch (privileged).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { KafkaClient, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

const TOPIC = "sessions";
let b: TestBroker;
let client: KafkaClient;

beforeAll(async () => {
  b = await startTestBroker({ "max.incremental.fetch.session.cache.slots": "1" });
  client = await KafkaClient.connect(b.port);
  const res = await client.request(ApiKey.CreateTopics, 7, {
    topics: [{ name: TOPIC, numPartitions: 3, replicationFactor: 1, configs: [] }],
  });
  expect(res.topics[0]!.errorCode).toBe(ErrorCode.NONE);
}, 60_000);

afterAll(async () => {
  client.close();
  await b.stop();
});

async function produce(partition: number) {
  const records = buildRecordBatch([{ value: new TextEncoder().encode("v") }]);
  const res = await client.request(ApiKey.Produce, 9, {
    transactionalId: null,
    acks: 1,
    timeoutMs: 5000,
    topicData: [{ name: TOPIC, partitionData: [{ index: partition, records }] }],
  });
  expect(res.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.NONE);
}

interface FetchArgs {
  sessionId: number;
  epoch: number;
  partitions?: [partition: number, offset: bigint][];
  forgotten?: number[];
  version?: number;
  replicaId?: number;
}

function fetch({
  sessionId,
  epoch,
  partitions = [],
  forgotten = [],
  version = 12,
  replicaId,
}: FetchArgs) {
  return client.request(ApiKey.Fetch, version, {
    replicaId: replicaId ?? -1,
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: 1 << 20,
    isolationLevel: 0,
    sessionId,
    sessionEpoch: epoch,
    topics:
      partitions.length === 0
        ? []
        : [
            {
              topic: TOPIC,
              partitions: partitions.map(([partition, fetchOffset]) => ({
                partition,
                currentLeaderEpoch: -1,
                fetchOffset,
                lastFetchedEpoch: -1,
                logStartOffset: -1n,
                partitionMaxBytes: 1 << 16,
              })),
            },
          ],
    forgottenTopicsData: forgotten.length === 0 ? [] : [{ topic: TOPIC, partitions: forgotten }],
    rackId: "",
  });
}

const listed = (res: Awaited<ReturnType<typeof fetch>>) =>
  res.responses.flatMap((t) => t.partitions.map((p) => p.partitionIndex));

test("a session: full fetch, then only changes both ways, forgotten partitions, errors", async () => {
  const full = await fetch({
    sessionId: 0,
    epoch: 0,
    partitions: [
      [0, 0n],
      [1, 0n],
      [2, 0n],
    ],
  });
  expect(full.errorCode).toBe(ErrorCode.NONE);
  expect(full.sessionId).not.toBe(0);
  expect(listed(full)).toEqual([0, 1, 2]);
  const id = full.sessionId;
  // Nothing changed: nothing listed.
  expect(listed(await fetch({ sessionId: id, epoch: 1 }))).toEqual([]);
  await produce(1);
  const news = await fetch({ sessionId: id, epoch: 2 });
  expect(listed(news)).toEqual([1]);
  expect(news.responses[0]!.partitions[0]!.highWatermark).toBe(1n);
  // The client moves partition 1 on; the unchanged others are not sent again.
  expect(listed(await fetch({ sessionId: id, epoch: 3, partitions: [[1, 1n]] }))).toEqual([]);
  // Partition 2 is forgotten: its new records are no longer fetched.
  expect(listed(await fetch({ sessionId: id, epoch: 4, forgotten: [2] }))).toEqual([]);
  await produce(2);
  await produce(0);
  expect(listed(await fetch({ sessionId: id, epoch: 5 }))).toEqual([0]);
  const stale = await fetch({ sessionId: id, epoch: 5 });
  expect(stale).toMatchObject({ errorCode: ErrorCode.INVALID_FETCH_SESSION_EPOCH, responses: [] });
  const unknown = await fetch({ sessionId: id + 1, epoch: 1 });
  expect(unknown).toMatchObject({ errorCode: ErrorCode.FETCH_SESSION_ID_NOT_FOUND, sessionId: 0 });
  // The same session through topic ids (v13) is refused; the client must start over.
  const ids = await fetch({ sessionId: id, epoch: 6, version: 13 });
  expect(ids.errorCode).toBe(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR);
  // Epoch -1 closes it and answers as a sessionless full fetch.
  const closed = await fetch({ sessionId: id, epoch: -1, partitions: [[0, 0n]] });
  expect(closed).toMatchObject({ errorCode: ErrorCode.NONE, sessionId: 0 });
  expect(listed(closed)).toEqual([0]);
  const gone = await fetch({ sessionId: id, epoch: 7 });
  expect(gone.errorCode).toBe(ErrorCode.FETCH_SESSION_ID_NOT_FOUND);
});

test("one slot: a second consumer gets no session, a follower's fetch takes the slot", async () => {
  const first = await fetch({ sessionId: 0, epoch: 0, partitions: [[0, 0n]] });
  expect(first.sessionId).not.toBe(0);
  const second = await fetch({
    sessionId: 0,
    epoch: 0,
    partitions: [
      [0, 0n],
      [1, 0n],
    ],
  });
  expect(second.sessionId).toBe(0);
  expect(listed(second)).toEqual([0, 1]);
  const follower = await fetch({ sessionId: 0, epoch: 0, partitions: [[0, 0n]], replicaId: 5 });
  expect(follower.sessionId).not.toBe(0);
  const evicted = await fetch({ sessionId: first.sessionId, epoch: 1 });
  expect(evicted.errorCode).toBe(ErrorCode.FETCH_SESSION_ID_NOT_FOUND);
});
