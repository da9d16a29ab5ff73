// One group id is one group: the APIs of a classic, KIP-848 consumer or KIP-932 share group refuse
// an id another type holds, with Kafka 4.4's errors (GroupMetadataManager): JoinGroup on a share
// group is INCONSISTENT_GROUP_PROTOCOL; ConsumerGroupHeartbeat, OffsetCommit, OffsetFetch and
// ConsumerGroupDescribe on one are GROUP_ID_NOT_FOUND ("is not a consumer group"), DescribeGroups
// v6 too ("is not a classic group", Dead before v6); ShareGroupHeartbeat and ShareGroupDescribe
// on a classic or consumer group are GROUP_ID_NOT_FOUND ("is not a share group"), also for a
// group with only committed offsets after a restart; SyncGroup, Heartbeat and LeaveGroup find no
// classic member (UNKNOWN_MEMBER_ID). Raw requests, and a kafkajs consumer.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { KafkaClient, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

const TOPIC = "conflicts";
let b: TestBroker;
let client: KafkaClient;

beforeAll(async () => {
  b = await startTestBroker();
  client = await KafkaClient.connect(b.port);
  await client.request(ApiKey.CreateTopics, 7, {
    topics: [{ name: TOPIC, numPartitions: 1, replicationFactor: 1 }],
    timeoutMs: 5000,
  });
});

afterAll(async () => {
  client.close();
  await b.stop();
});

function shareHeartbeat(groupId: string, memberId: string) {
  return client.request(ApiKey.ShareGroupHeartbeat, 1, {
    groupId,
    memberId,
    memberEpoch: 0,
    subscribedTopicNames: [TOPIC],
  });
}

function consumerHeartbeat(groupId: string, memberId: string) {
  return client.request(ApiKey.ConsumerGroupHeartbeat, 1, {
    groupId,
    memberId,
    memberEpoch: 0,
    rebalanceTimeoutMs: 30_000,
    subscribedTopicNames: [TOPIC],
  });
}

function join(groupId: string) {
  return client.request(ApiKey.JoinGroup, 9, {
    groupId,
    sessionTimeoutMs: 10_000,
    rebalanceTimeoutMs: 5_000,
    memberId: "",
    protocolType: "consumer",
    protocols: [{ name: "range", metadata: new Uint8Array(0) }],
  });
}

async function commitCode(groupId: string): Promise<number> {
  const res = await client.request(ApiKey.OffsetCommit, 8, {
    groupId,
    generationIdOrMemberEpoch: -1,
    memberId: "",
    groupInstanceId: null,
    topics: [{ name: TOPIC, partitions: [{ partitionIndex: 0, committedOffset: 1n }] }],
  });
  return res.topics[0]!.partitions[0]!.errorCode;
}

test("a share group's id is refused by the classic and consumer group APIs", async () => {
  const group = "held-by-share";
  expect((await shareHeartbeat(group, "s1")).errorCode).toBe(ErrorCode.NONE);

  const joined = await join(group);
  expect([joined.errorCode, joined.memberId]).toEqual([ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ""]);
  const beat = await consumerHeartbeat(group, "c1");
  expect([beat.errorCode, beat.errorMessage]).toEqual([
    ErrorCode.GROUP_ID_NOT_FOUND,
    `Group ${group} is not a consumer group.`,
  ]);
  expect(await commitCode(group)).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  const fetched = await client.request(ApiKey.OffsetFetch, 9, {
    groups: [{ groupId: group, memberId: null, memberEpoch: -1, topics: null }],
  });
  expect(fetched.groups[0]!.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);

  const member = { groupId: group, generationId: 1, memberId: "m", groupInstanceId: null };
  const synced = await client.request(ApiKey.SyncGroup, 5, {
    ...member,
    protocolType: "consumer",
    protocolName: "range",
    assignments: [],
  });
  expect(synced.errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  expect((await client.request(ApiKey.Heartbeat, 4, member)).errorCode).toBe(
    ErrorCode.UNKNOWN_MEMBER_ID,
  );
  const left = await client.request(ApiKey.LeaveGroup, 5, {
    groupId: group,
    members: [{ memberId: "m", groupInstanceId: null, reason: null }],
  });
  expect(left.members[0]!.errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);

  const v6 = await client.request(ApiKey.DescribeGroups, 6, { groups: [group] });
  expect(v6.groups.map((g) => [g.errorCode, g.errorMessage, g.groupState])).toEqual([
    [ErrorCode.GROUP_ID_NOT_FOUND, `Group ${group} is not a classic group.`, "Dead"],
  ]);
  const v5 = await client.request(ApiKey.DescribeGroups, 5, { groups: [group] });
  expect(v5.groups.map((g) => [g.errorCode, g.groupState])).toEqual([[ErrorCode.NONE, "Dead"]]);
  const described = await client.request(ApiKey.ConsumerGroupDescribe, 1, { groupIds: [group] });
  expect([described.groups[0]!.errorCode, described.groups[0]!.errorMessage]).toEqual([
    ErrorCode.GROUP_ID_NOT_FOUND,
    `Group ${group} is not a consumer group.`,
  ]);

  // Still one share group, with its one member, described as such.
  const share = await client.request(ApiKey.ShareGroupDescribe, 1, { groupIds: [group] });
  expect(share.groups[0]!.errorCode).toBe(ErrorCode.NONE);
  expect(share.groups[0]!.members.map((m) => m.memberId)).toEqual(["s1"]);
  expect(b.broker.services.groupCoordinator.groupState(group)).toBeNull();
});

test("a kafkajs consumer cannot join a share group's id", async () => {
  const group = "kafkajs-vs-share";
  expect((await shareHeartbeat(group, "s1")).errorCode).toBe(ErrorCode.NONE);
  const kafka = new Kafka({
    brokers: [`127.0.0.1:${b.port}`],
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
  });
  const consumer = kafka.consumer({ groupId: group });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [TOPIC] });
    const crashed = new Promise<unknown>((resolve) =>
      consumer.on(consumer.events.CRASH, (e) => resolve(e.payload.error)),
    );
    await consumer.run({ eachMessage: async () => {} });
    expect(await crashed).toMatchObject({ type: "INCONSISTENT_GROUP_PROTOCOL" });
  } finally {
    await consumer.disconnect();
  }
}, 30_000);

test("a classic or consumer group's id is refused by ShareGroupHeartbeat and ShareGroupDescribe", async () => {
  const refusedShare = async (group: string) => {
    const beat = await shareHeartbeat(group, "s1");
    expect([beat.errorCode, beat.errorMessage]).toEqual([
      ErrorCode.GROUP_ID_NOT_FOUND,
      `Group ${group} is not a share group.`,
    ]);
    const described = await client.request(ApiKey.ShareGroupDescribe, 1, { groupIds: [group] });
    expect([described.groups[0]!.errorCode, described.groups[0]!.errorMessage]).toEqual([
      ErrorCode.GROUP_ID_NOT_FOUND,
      `Group ${group} is not a share group.`,
    ]);
  };
  expect((await consumerHeartbeat("held-by-consumer", "c1")).errorCode).toBe(ErrorCode.NONE);
  await refusedShare("held-by-consumer");
  // A classic group with committed offsets only, no members.
  expect(await commitCode("held-by-offsets")).toBe(ErrorCode.NONE);
  await refusedShare("held-by-offsets");
  // After a restart the group is only in the store until something asks for it.
  client.close();
  b = await b.restart();
  client = await KafkaClient.connect(b.port);
  await refusedShare("held-by-offsets");
  const fetched = await client.request(ApiKey.OffsetFetch, 9, {
    groups: [{ groupId: "held-by-offsets", memberId: null, memberEpoch: -1, topics: null }],
  });
  expect(fetched.groups[0]!.topics[0]!.partitions[0]!.committedOffset).toBe(1n);
}, 30_000);
