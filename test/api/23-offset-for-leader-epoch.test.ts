import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { KafkaClient, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

let broker: TestBroker;
let client: KafkaClient;

beforeAll(async () => {
  broker = await startTestBroker();
  client = await KafkaClient.connect(broker.port);
  await client.request(ApiKey.CreateTopics, 7, {
    topics: [{ name: "epochs", numPartitions: 1, replicationFactor: 1 }],
    timeoutMs: 5_000,
  });
  const records = buildRecordBatch([{ value: new Uint8Array(3) }, { value: new Uint8Array(4) }]);
  const produced = await client.request(ApiKey.Produce, 9, {
    acks: -1,
    timeoutMs: 5_000,
    topicData: [{ name: "epochs", partitionData: [{ index: 0, records }] }],
  });
  expect(produced.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.NONE);
}, 60_000);

afterAll(async () => {
  client.close();
  await broker.stop();
});

async function ask(
  version: number,
  leaderEpoch: number,
  currentLeaderEpoch = -1,
  topic = "epochs",
) {
  // CurrentLeaderEpoch is not ignorable: unset below v2.
  const current = version >= 2 ? { currentLeaderEpoch } : {};
  const response = await client.request(ApiKey.OffsetForLeaderEpoch, version, {
    replicaId: -1,
    topics: [{ topic, partitions: [{ partition: 0, leaderEpoch, ...current }] }],
  });
  return response.topics[0]!.partitions[0]!;
}

test("the lone broker's epoch 0 ends at its log end offset, at every version", async () => {
  for (let version = 0; version <= 4; version++) {
    const found = await ask(version, 0);
    expect(found.errorCode).toBe(ErrorCode.NONE);
    expect(found.endOffset).toBe(2n);
    expect(found.leaderEpoch).toBe(version >= 1 ? 0 : -1); // v0 has no LeaderEpoch field.
  }
});

test("an epoch above any known is UNDEFINED; unknown topics and epochs are errors", async () => {
  expect(await ask(4, 7)).toMatchObject({
    errorCode: ErrorCode.NONE,
    leaderEpoch: -1,
    endOffset: -1n,
  });
  expect((await ask(4, 0, 0, "missing")).errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
  expect((await ask(4, 0, 3)).errorCode).toBe(ErrorCode.UNKNOWN_LEADER_EPOCH);
  expect((await ask(4, 0, 0)).errorCode).toBe(ErrorCode.NONE);
});
