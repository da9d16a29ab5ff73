// The versions Kafka 4 clients send that Quill serves beyond 3.9's: each is answered as its
// version note says (the Java 4.4 client's run is test/e2e/kafka4-java.test.ts).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { KafkaClient } from "../support/kafka-client.ts";

let b: InProcessBroker;
let client: KafkaClient;
beforeAll(async () => {
  b = await startInProcessBroker();
  client = await KafkaClient.connect(b.port);
  const created = await client.request(ApiKey.CreateTopics, 7, {
    topics: [{ name: "k4", numPartitions: 1, replicationFactor: 1 }],
  });
  expect(created.topics[0]!.errorCode).toBe(ErrorCode.NONE);
});
afterAll(async () => {
  client?.close();
  await b?.stop();
});

test("ApiVersions advertises the Kafka 4 versions the handlers implement", async () => {
  const res = await client.request(ApiKey.ApiVersions, 4, {
    clientSoftwareName: "apache-kafka-java",
    clientSoftwareVersion: "4.4.0",
  });
  const max = new Map(res.apiKeys.map((k) => [k.apiKey, k.maxVersion]));
  expect(max.get(ApiKey.Produce)).toBe(12);
  expect(max.get(ApiKey.Fetch)).toBe(18);
  expect(max.get(ApiKey.ListOffsets)).toBe(11);
  expect(max.get(ApiKey.Metadata)).toBe(13);
  expect(max.get(ApiKey.DescribeGroups)).toBe(6);
  expect(max.get(ApiKey.OffsetCommit)).toBe(10);
  expect(max.get(ApiKey.OffsetFetch)).toBe(10);
  expect(max.get(ApiKey.ConsumerGroupHeartbeat)).toBe(1);
});

test("Metadata v13 answers with a top-level error code of NONE", async () => {
  const res = await client.request(ApiKey.Metadata, 13, { topics: [{ name: "k4" }] });
  expect(res.errorCode).toBe(ErrorCode.NONE);
  expect(res.topics.map((t) => [t.name, t.errorCode])).toEqual([["k4", ErrorCode.NONE]]);
});

test("ListOffsets v11: EARLIEST_PENDING_UPLOAD (-6) is offset -1 without tiered storage", async () => {
  const ask = (timestamp: bigint) =>
    client.request(ApiKey.ListOffsets, 11, {
      replicaId: -1,
      topics: [{ name: "k4", partitions: [{ partitionIndex: 0, timestamp }] }],
    });
  const pending = (await ask(-6n)).topics[0]!.partitions[0]!;
  expect([pending.errorCode, pending.offset]).toEqual([ErrorCode.NONE, -1n]);
  const latest = (await ask(-1n)).topics[0]!.partitions[0]!;
  expect([latest.errorCode, latest.offset]).toEqual([ErrorCode.NONE, 0n]);
});

test("DescribeGroups v6: an unknown group is GROUP_ID_NOT_FOUND with a message", async () => {
  const v6 = await client.request(ApiKey.DescribeGroups, 6, { groups: ["nobody"] });
  expect(v6.groups[0]).toMatchObject({
    groupId: "nobody",
    errorCode: ErrorCode.GROUP_ID_NOT_FOUND,
    errorMessage: "Group nobody not found.",
  });
  const v5 = await client.request(ApiKey.DescribeGroups, 5, { groups: ["nobody"] });
  expect(v5.groups[0]).toMatchObject({ errorCode: ErrorCode.NONE, groupState: "Dead" });
  const del = await client.request(ApiKey.DeleteGroups, 3, { groupsNames: ["nobody"] });
  expect(del.results).toEqual([
    { groupId: "nobody", errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: null },
  ]);
});

test("OffsetCommit and OffsetFetch v10 name topics by id; an unknown id is UNKNOWN_TOPIC_ID", async () => {
  const meta = await client.request(ApiKey.Metadata, 13, { topics: [{ name: "k4" }] });
  const topicId = meta.topics[0]!.topicId;
  const stranger = new Uint8Array(16).fill(9);
  const commit = await client.request(ApiKey.OffsetCommit, 10, {
    groupId: "g10",
    generationIdOrMemberEpoch: -1,
    topics: [
      { topicId, partitions: [{ partitionIndex: 0, committedOffset: 7n }] },
      { topicId: stranger, partitions: [{ partitionIndex: 0, committedOffset: 1n }] },
    ],
  });
  expect(commit.topics.map((t) => [t.topicId, t.partitions[0]!.errorCode])).toEqual([
    [topicId, ErrorCode.NONE],
    [stranger, ErrorCode.UNKNOWN_TOPIC_ID],
  ]);
  const fetched = await client.request(ApiKey.OffsetFetch, 10, {
    groups: [{ groupId: "g10", topics: [{ topicId, partitionIndexes: [0] }] }],
  });
  const topic = fetched.groups[0]!.topics[0]!;
  expect(topic.topicId).toEqual(topicId);
  expect(topic.partitions[0]).toMatchObject({ committedOffset: 7n, errorCode: ErrorCode.NONE });
  const all = await client.request(ApiKey.OffsetFetch, 10, {
    groups: [{ groupId: "g10", topics: null }],
  });
  expect(all.groups[0]!.topics.map((t) => t.topicId)).toEqual([topicId]);
});
