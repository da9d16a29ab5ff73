// The group API handlers at their lowest and highest versions, over real TCP with raw requests
// (clients never pin versions): FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// OffsetCommit, OffsetFetch, OffsetDelete, DescribeGroups, ListGroups, DeleteGroups.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { KafkaClient, requestOnce, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

let b: TestBroker;
beforeAll(async () => {
  b = await startTestBroker({ "group.initial.rebalance.delay.ms": "0", "num.partitions": "2" });
  // OffsetCommit only accepts partitions of topics the broker knows.
  await requestOnce(b.port, ApiKey.CreateTopics, 5, {
    topics: [{ name: "t", numPartitions: 2, replicationFactor: 1 }], timeoutMs: 5_000,
  });
});
afterAll(async () => {
  await b.stop();
});

const subscription = new Uint8Array([0, 0, 0, 0, 0, 1, 0, 1, 116, 255, 255, 255, 255]);

/** JoinGroup + SyncGroup of a single member at one version; returns its member id. */
async function joinAlone(client: KafkaClient, groupId: string, joinVersion: number, syncVersion: number) {
  const join = (memberId: string) => client.request(ApiKey.JoinGroup, joinVersion, {
    groupId, sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 5_000, memberId, groupInstanceId: null,
    protocolType: "consumer", protocols: [{ name: "range", metadata: subscription }], reason: "test",
  });
  let joined = await join("");
  if (joined.errorCode === ErrorCode.MEMBER_ID_REQUIRED) joined = await join(joined.memberId);
  expect(joined.errorCode).toBe(ErrorCode.NONE);
  expect(joined.leader).toBe(joined.memberId);
  const synced = await client.request(ApiKey.SyncGroup, syncVersion, {
    groupId, generationId: joined.generationId, memberId: joined.memberId, groupInstanceId: null,
    protocolType: "consumer", protocolName: "range",
    assignments: [{ memberId: joined.memberId, assignment: new Uint8Array([7, 7]) }],
  });
  expect(synced.errorCode).toBe(ErrorCode.NONE);
  expect([...synced.assignment]).toEqual([7, 7]);
  return { memberId: joined.memberId, generationId: joined.generationId, joined, synced };
}

/** A simple-consumer commit (generation -1) of one partition. */
const commit = (version: number, groupId: string, offset: bigint, partitionIndex = 0, name = "t") =>
  requestOnce(b.port, ApiKey.OffsetCommit, version, {
    groupId, generationIdOrMemberEpoch: -1, memberId: "", groupInstanceId: null,
    topics: [{ name, partitions: [{ partitionIndex, committedOffset: offset, committedLeaderEpoch: 4, committedMetadata: "md" }] }],
  });

describe("FindCoordinator", () => {
  test("v0 and v3 answer this broker for a group key", async () => {
    for (const version of [0, 3]) {
      const res = await requestOnce(b.port, ApiKey.FindCoordinator, version, { key: "any-group", keyType: 0 });
      expect(res).toMatchObject({ errorCode: ErrorCode.NONE, nodeId: 0, host: "127.0.0.1", port: b.port });
    }
  });

  test("v4+ answers each batched key; transactions and share groups are refused", async () => {
    const res = await requestOnce(b.port, ApiKey.FindCoordinator, 4, { keyType: 0, coordinatorKeys: ["a", "b"] });
    expect(res.coordinators).toEqual([
      { key: "a", nodeId: 0, host: "127.0.0.1", port: b.port, errorCode: 0, errorMessage: null },
      { key: "b", nodeId: 0, host: "127.0.0.1", port: b.port, errorCode: 0, errorMessage: null },
    ]);
    const txn = await requestOnce(b.port, ApiKey.FindCoordinator, 6, { keyType: 1, coordinatorKeys: ["tx"] });
    expect(txn.coordinators[0]).toMatchObject({ errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, nodeId: -1 });
    const share = await requestOnce(b.port, ApiKey.FindCoordinator, 6, { keyType: 2, coordinatorKeys: ["s"] });
    expect(share.coordinators[0]!.errorCode).toBe(ErrorCode.INVALID_REQUEST);
  });
});

describe("membership APIs", () => {
  test("lowest versions: JoinGroup v0 joins directly, SyncGroup/Heartbeat/LeaveGroup v0", async () => {
    const client = await KafkaClient.connect(b.port);
    try {
      const { memberId, generationId, joined } = await joinAlone(client, "g-v0", 0, 0);
      expect(joined.protocolName).toBe("range");
      const hb = await client.request(ApiKey.Heartbeat, 0, { groupId: "g-v0", generationId, memberId });
      expect(hb.errorCode).toBe(ErrorCode.NONE);
      const stale = await client.request(ApiKey.Heartbeat, 0, { groupId: "g-v0", generationId: generationId + 1, memberId });
      expect(stale.errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
      const left = await client.request(ApiKey.LeaveGroup, 0, { groupId: "g-v0", memberId });
      expect(left.errorCode).toBe(ErrorCode.NONE);
      const again = await client.request(ApiKey.LeaveGroup, 0, { groupId: "g-v0", memberId });
      expect(again.errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    } finally {
      client.close();
    }
  });

  test("highest versions: JoinGroup v9 MEMBER_ID_REQUIRED, SyncGroup v5, Heartbeat v4, batched LeaveGroup v5", async () => {
    const client = await KafkaClient.connect(b.port);
    try {
      const first = await client.request(ApiKey.JoinGroup, 9, {
        groupId: "g-v9", sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 5_000, memberId: "",
        protocolType: "consumer", protocols: [{ name: "range", metadata: subscription }], reason: null,
      });
      expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
      expect(first.protocolName).toBeNull();
      const { memberId, generationId, joined, synced } = await joinAlone(client, "g-v9", 9, 5);
      expect(joined.protocolType).toBe("consumer");
      expect(synced.protocolName).toBe("range");
      expect((await client.request(ApiKey.Heartbeat, 4, { groupId: "g-v9", generationId, memberId })).errorCode)
        .toBe(ErrorCode.NONE);
      const left = await client.request(ApiKey.LeaveGroup, 5, { groupId: "g-v9", members: [
        { memberId, groupInstanceId: null, reason: "done" }, { memberId: "nobody", groupInstanceId: null, reason: null },
      ] });
      expect(left.errorCode).toBe(ErrorCode.NONE);
      expect(left.members.map((m) => m.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]);
    } finally {
      client.close();
    }
  });

  test("INVALID_SESSION_TIMEOUT below group.min.session.timeout.ms", async () => {
    const res = await requestOnce(b.port, ApiKey.JoinGroup, 5, {
      groupId: "g-bad", sessionTimeoutMs: 10, rebalanceTimeoutMs: 5_000, memberId: "",
      protocolType: "consumer", protocols: [{ name: "range", metadata: subscription }],
    });
    expect(res.errorCode).toBe(ErrorCode.INVALID_SESSION_TIMEOUT);
  });
});

describe("offset APIs", () => {
  test("OffsetCommit v0 and OffsetFetch v1 (lowest with partitions)", async () => {
    const committed = await commit(0, "simple-v0", 42n);
    expect(committed.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    const fetched = await requestOnce(b.port, ApiKey.OffsetFetch, 1, {
      groupId: "simple-v0", topics: [{ name: "t", partitionIndexes: [0, 1] }],
    });
    expect(fetched.topics[0]!.partitions.map((p) => [p.committedOffset, p.metadata])).toEqual([[42n, "md"], [-1n, ""]]);
  });

  test("OffsetCommit v9 with leader epoch; OffsetFetch v7 all partitions; v8/v9 several groups", async () => {
    await commit(9, "simple-v9", 5n, 1);
    const all = await requestOnce(b.port, ApiKey.OffsetFetch, 7, { groupId: "simple-v9", topics: null, requireStable: true });
    expect(all.errorCode).toBe(ErrorCode.NONE);
    expect(all.topics).toEqual([{ name: "t", partitions: [
      { partitionIndex: 1, committedOffset: 5n, committedLeaderEpoch: 4, metadata: "md", errorCode: 0 },
    ] }]);
    for (const version of [8, 9]) {
      const many = await requestOnce(b.port, ApiKey.OffsetFetch, version, { groups: [
        { groupId: "simple-v9", memberId: null, memberEpoch: -1, topics: null },
        { groupId: "simple-v0", memberId: null, memberEpoch: -1, topics: [{ name: "t", partitionIndexes: [0] }] },
      ] });
      expect(many.groups.map((g) => [g.groupId, g.errorCode, g.topics[0]!.partitions[0]!.committedOffset])).toEqual([
        ["simple-v9", 0, 5n], ["simple-v0", 0, 42n],
      ]);
    }
  });

  test("OffsetCommit to an unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION", async () => {
    const unknownTopic = await commit(8, "g-unknown", 1n, 0, "no-such-topic");
    expect(unknownTopic.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    const unknownPartition = await commit(8, "g-unknown", 1n, 9);
    expect(unknownPartition.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
  });

  test("OffsetCommit from a stale generation gets ILLEGAL_GENERATION", async () => {
    const client = await KafkaClient.connect(b.port);
    try {
      const { memberId, generationId } = await joinAlone(client, "g-commit", 5, 3);
      const stale = await client.request(ApiKey.OffsetCommit, 7, {
        groupId: "g-commit", generationIdOrMemberEpoch: generationId + 1, memberId, groupInstanceId: null,
        topics: [{ name: "t", partitions: [{ partitionIndex: 0, committedOffset: 1n }] }],
      });
      expect(stale.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
      const current = await client.request(ApiKey.OffsetCommit, 7, {
        groupId: "g-commit", generationIdOrMemberEpoch: generationId, memberId, groupInstanceId: null,
        topics: [{ name: "t", partitions: [{ partitionIndex: 0, committedOffset: 1n }] }],
      });
      expect(current.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    } finally {
      client.close();
    }
  });

  test("OffsetDelete v0 deletes offsets of an Empty group", async () => {
    await commit(8, "g-delete-offsets", 3n);
    const res = await requestOnce(b.port, ApiKey.OffsetDelete, 0, {
      groupId: "g-delete-offsets", topics: [{ name: "t", partitions: [{ partitionIndex: 0 }] }],
    });
    expect(res.errorCode).toBe(ErrorCode.NONE);
    expect(res.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    const fetched = await requestOnce(b.port, ApiKey.OffsetFetch, 5, {
      groupId: "g-delete-offsets", topics: [{ name: "t", partitionIndexes: [0] }],
    });
    expect(fetched.topics[0]!.partitions[0]!.committedOffset).toBe(-1n);
    const missing = await requestOnce(b.port, ApiKey.OffsetDelete, 0, { groupId: "nope", topics: [] });
    expect(missing.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });
});

describe("group administration APIs", () => {
  test("DescribeGroups v0 and v5, ListGroups v0 and v5 with filters, DeleteGroups v0 and v2", async () => {
    const client = await KafkaClient.connect(b.port);
    try {
      const { memberId } = await joinAlone(client, "g-admin", 5, 3);
      await commit(8, "g-idle", 1n);
      const v0 = await client.request(ApiKey.DescribeGroups, 0, { groups: ["g-admin", "missing"] });
      expect(v0.groups.map((g) => [g.groupId, g.errorCode, g.groupState])).toEqual([
        ["g-admin", 0, "Stable"], ["missing", 0, "Dead"],
      ]);
      expect(v0.groups[0]!.members[0]!.memberId).toBe(memberId);
      const v5 = await client.request(ApiKey.DescribeGroups, 5, { groups: ["g-admin"], includeAuthorizedOperations: true });
      expect(v5.groups[0]).toMatchObject({ protocolType: "consumer", protocolData: "range", authorizedOperations: 328 });
      expect([...v5.groups[0]!.members[0]!.memberAssignment]).toEqual([7, 7]);

      const listed0 = await client.request(ApiKey.ListGroups, 0, {});
      expect(listed0.groups.map((g) => g.groupId)).toEqual(expect.arrayContaining(["g-admin", "g-idle"]));
      const stableOnly = await client.request(ApiKey.ListGroups, 5, { statesFilter: ["STABLE"], typesFilter: ["classic"] });
      expect(stableOnly.groups.map((g) => g.groupId)).toContain("g-admin");
      expect(stableOnly.groups.map((g) => g.groupId)).not.toContain("g-idle");
      expect(stableOnly.groups.every((g) => g.groupState === "Stable" && g.groupType === "classic")).toBe(true);

      const del0 = await client.request(ApiKey.DeleteGroups, 0, { groupsNames: ["g-admin", "g-idle"] });
      expect(del0.results).toEqual([
        { groupId: "g-admin", errorCode: ErrorCode.NON_EMPTY_GROUP }, { groupId: "g-idle", errorCode: ErrorCode.NONE },
      ]);
      const del2 = await client.request(ApiKey.DeleteGroups, 2, { groupsNames: ["g-idle"] });
      expect(del2.results).toEqual([{ groupId: "g-idle", errorCode: ErrorCode.GROUP_ID_NOT_FOUND }]);
    } finally {
      client.close();
    }
  });

  test("ApiVersions advertises the group API ranges", async () => {
    const res = await requestOnce(b.port, ApiKey.ApiVersions, 3, { clientSoftwareName: "t", clientSoftwareVersion: "1" });
    const ranges = Object.fromEntries(res.apiKeys.map((k) => [k.apiKey, [k.minVersion, k.maxVersion]]));
    expect(ranges).toMatchObject({
      8: [0, 9], 9: [0, 9], 10: [0, 6], 11: [0, 9], 12: [0, 4], 13: [0, 5], 14: [0, 5], 15: [0, 5], 16: [0, 5],
      42: [0, 2], 47: [0, 0],
    });
  });
});
