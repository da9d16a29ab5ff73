/**
 * Shared steps of the group API tests: one member joining and syncing alone at given versions,
 * and a simple-consumer commit, all as raw requests over TCP.
 */
import { expect } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import {
  type KafkaClient,
  requestOnce,
  startTestBroker,
  type TestBroker,
} from "../support/kafka-client.ts";

/** A ConsumerProtocolSubscription v0 for topic "t" with null user data. */
export const SUBSCRIPTION = new Uint8Array([0, 0, 0, 0, 0, 1, 0, 1, 116, 255, 255, 255, 255]);

/** A broker with topic "t" (2 partitions) and no initial rebalance delay. */
export async function startGroupBroker(): Promise<TestBroker> {
  const b = await startTestBroker({ "group.initial.rebalance.delay.ms": "0" });
  // OffsetCommit only accepts partitions of topics the broker knows.
  await requestOnce(b.port, ApiKey.CreateTopics, 5, {
    topics: [{ name: "t", numPartitions: 2, replicationFactor: 1 }],
    timeoutMs: 5_000,
  });
  return b;
}

/** JoinGroup (twice if MEMBER_ID_REQUIRED) and SyncGroup of a lone member. */
export async function joinAlone(
  client: KafkaClient,
  groupId: string,
  joinVersion: number,
  syncVersion: number,
) {
  const join = (memberId: string) =>
    client.request(ApiKey.JoinGroup, joinVersion, {
      groupId,
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 5_000,
      memberId,
      groupInstanceId: null,
      protocolType: "consumer",
      protocols: [{ name: "range", metadata: SUBSCRIPTION }],
      reason: "test",
    });
  let joined = await join("");
  if (joined.errorCode === ErrorCode.MEMBER_ID_REQUIRED) joined = await join(joined.memberId);
  expect(joined.errorCode).toBe(ErrorCode.NONE);
  expect(joined.leader).toBe(joined.memberId);
  const synced = await client.request(ApiKey.SyncGroup, syncVersion, {
    groupId,
    generationId: joined.generationId,
    memberId: joined.memberId,
    groupInstanceId: null,
    protocolType: "consumer",
    protocolName: "range",
    assignments: [{ memberId: joined.memberId, assignment: new Uint8Array([7, 7]) }],
  });
  expect(synced.errorCode).toBe(ErrorCode.NONE);
  expect([...synced.assignment]).toEqual([7, 7]);
  return { memberId: joined.memberId, generationId: joined.generationId, joined, synced };
}

/** A simple-consumer commit (generation -1) of one partition, leader epoch 4, metadata "md". */
export function simpleCommit(
  port: number,
  version: number,
  groupId: string,
  offset: bigint,
  partitionIndex = 0,
  name = "t",
) {
  const partition = {
    partitionIndex,
    committedOffset: offset,
    committedLeaderEpoch: 4,
    committedMetadata: "md",
  };
  return requestOnce(port, ApiKey.OffsetCommit, version, {
    groupId,
    generationIdOrMemberEpoch: -1,
    memberId: "",
    groupInstanceId: null,
    topics: [{ name, partitions: [partition] }],
  });
}

/** The first partition's error code of an OffsetCommit response. */
export const firstCode = (res: { topics: { partitions: { errorCode: number }[] }[] }) =>
  res.topics[0]!.partitions[0]!.errorCode;
