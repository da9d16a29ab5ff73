// DeleteGroups of a share group in embedded mode, around a restart: share-group membership is in
// memory, its state in the data dir, so after a restart an Empty share group is known only by its
// stored state. DeleteGroups still deletes it (NONE, as Kafka, whose group survives restarts),
// and a new member of the id starts at share.auto.offset.reset, not at the stored start offset.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import {
  acquiredRecords,
  KafkaClient,
  shareFetchPartition0,
  startTestBroker,
  type TestBroker,
} from "../support/kafka-client.ts";

const TOPIC = "delete-share";
const GROUP = "g-delete-restart";
const ACCEPT = 1;
let b: TestBroker;
let client: KafkaClient;

beforeAll(async () => {
  b = await startTestBroker();
  client = await KafkaClient.connect(b.port);
  const created = await client.request(ApiKey.CreateTopics, 7, {
    topics: [{ name: TOPIC, numPartitions: 1, replicationFactor: 1 }],
    timeoutMs: 5000,
  });
  expect(created.topics[0]!.errorCode).toBe(ErrorCode.NONE);
});

afterAll(async () => {
  client.close();
  await b.stop();
});

async function produce(values: string[]): Promise<void> {
  const kafka = new Kafka({ brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic: TOPIC, messages: values.map((value) => ({ value })) });
  await producer.disconnect();
}

async function topicId(): Promise<Uint8Array> {
  const meta = await client.request(ApiKey.Metadata, 12, {
    topics: [{ name: TOPIC }],
    allowAutoTopicCreation: false,
    includeTopicAuthorizedOperations: false,
  });
  return meta.topics[0]!.topicId;
}

async function heartbeat(memberId: string, memberEpoch: number) {
  const res = await client.request(ApiKey.ShareGroupHeartbeat, 1, {
    groupId: GROUP,
    memberId,
    memberEpoch,
    subscribedTopicNames: memberEpoch === 0 ? [TOPIC] : null,
  });
  expect(res.errorCode).toBe(ErrorCode.NONE);
}

async function fetch(topicId: Uint8Array, memberId: string, epoch: number) {
  const maxWaitMs = epoch === 0 ? 0 : 5_000;
  const res = await shareFetchPartition0(client, {
    groupId: GROUP,
    memberId,
    topicId,
    epoch,
    maxWaitMs,
  });
  expect(res.errorCode).toBe(ErrorCode.NONE);
  return acquiredRecords(res);
}

async function deleteGroup(): Promise<number> {
  const res = await client.request(ApiKey.DeleteGroups, 2, { groupsNames: [GROUP] });
  expect(res.results.length).toBe(1);
  return res.results[0]!.errorCode;
}

test("a share group known only by its stored state after a restart is deleted with it", async () => {
  let id = await topicId();
  await heartbeat("m1", 0);
  expect(await fetch(id, "m1", 0)).toEqual([]);
  await produce(["0", "1", "2", "3", "4"]);
  expect(await fetch(id, "m1", 1)).toEqual([{ firstOffset: 0n, lastOffset: 4n, deliveryCount: 1 }]);
  const acked = await client.request(ApiKey.ShareAcknowledge, 1, {
    groupId: GROUP,
    memberId: "m1",
    shareSessionEpoch: 2,
    topics: [
      {
        topicId: id,
        partitions: [
          {
            partitionIndex: 0,
            acknowledgementBatches: [
              { firstOffset: 0n, lastOffset: 1n, acknowledgeTypes: [ACCEPT] },
            ],
          },
        ],
      },
    ],
  });
  expect(acked.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
  await heartbeat("m1", -1);

  // After the restart the group has no membership here, only its stored state (start 2).
  client.close();
  b = await b.restart();
  client = await KafkaClient.connect(b.port);
  id = await topicId();
  const shares = b.broker.services.sharePartitionManager;
  expect(shares.hasStoredState(GROUP)).toBe(true);
  expect(await deleteGroup()).toBe(ErrorCode.NONE);
  expect(shares.hasStoredState(GROUP)).toBe(false);
  expect(await deleteGroup()).toBe(ErrorCode.GROUP_ID_NOT_FOUND);

  // Afresh at latest: the log end, not 2-4 again from the deleted state.
  await heartbeat("m2", 0);
  expect(await fetch(id, "m2", 0)).toEqual([]);
  await produce(["5"]);
  expect(await fetch(id, "m2", 1)).toEqual([{ firstOffset: 5n, lastOffset: 5n, deliveryCount: 1 }]);
}, 60_000);
