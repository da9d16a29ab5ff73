// JoinGroup, SyncGroup, Heartbeat and LeaveGroup at their lowest and highest versions: one
// member's whole life in a group, as raw requests over TCP.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { KafkaClient, requestOnce, type TestBroker } from "../support/kafka-client.ts";
import { joinAlone, SUBSCRIPTION, startGroupBroker } from "./group-api-support.ts";

let b: TestBroker;
beforeAll(async () => {
  b = await startGroupBroker();
}, 60_000);
afterAll(async () => {
  await b.stop();
});

test("lowest: JoinGroup v0 joins at once; SyncGroup, Heartbeat, LeaveGroup v0", async () => {
  const client = await KafkaClient.connect(b.port);
  try {
    const { memberId, generationId, joined } = await joinAlone(client, "g-v0", 0, 0);
    expect(joined.protocolName).toBe("range");
    const beat = (generation: number) =>
      client.request(ApiKey.Heartbeat, 0, { groupId: "g-v0", generationId: generation, memberId });
    expect((await beat(generationId)).errorCode).toBe(ErrorCode.NONE);
    expect((await beat(generationId + 1)).errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
    const leave = () => client.request(ApiKey.LeaveGroup, 0, { groupId: "g-v0", memberId });
    expect((await leave()).errorCode).toBe(ErrorCode.NONE);
    expect((await leave()).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  } finally {
    client.close();
  }
});

test("highest: JoinGroup v9, SyncGroup v5, Heartbeat v4, batched LeaveGroup v5", async () => {
  const client = await KafkaClient.connect(b.port);
  try {
    const first = await client.request(ApiKey.JoinGroup, 9, {
      groupId: "g-v9",
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 5_000,
      memberId: "",
      protocolType: "consumer",
      protocols: [{ name: "range", metadata: SUBSCRIPTION }],
    });
    expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    expect(first.protocolName).toBeNull();
    const { memberId, generationId, joined, synced } = await joinAlone(client, "g-v9", 9, 5);
    expect(joined.protocolType).toBe("consumer");
    expect(synced.protocolName).toBe("range");
    const heartbeat = { groupId: "g-v9", generationId, memberId };
    const beat = await client.request(ApiKey.Heartbeat, 4, heartbeat);
    expect(beat.errorCode).toBe(ErrorCode.NONE);
    const left = await client.request(ApiKey.LeaveGroup, 5, {
      groupId: "g-v9",
      members: [
        { memberId, groupInstanceId: null, reason: "done" },
        { memberId: "nobody", groupInstanceId: null, reason: null },
      ],
    });
    expect(left.errorCode).toBe(ErrorCode.NONE);
    const codes = left.members.map((m) => m.errorCode);
    expect(codes).toEqual([ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]);
  } finally {
    client.close();
  }
});

test("INVALID_SESSION_TIMEOUT below group.min.session.timeout.ms", async () => {
  const res = await requestOnce(b.port, ApiKey.JoinGroup, 5, {
    groupId: "g-bad",
    sessionTimeoutMs: 10,
    rebalanceTimeoutMs: 5_000,
    memberId: "",
    protocolType: "consumer",
    protocols: [{ name: "range", metadata: SUBSCRIPTION }],
  });
  expect(res.errorCode).toBe(ErrorCode.INVALID_SESSION_TIMEOUT);
});

test("ApiVersions advertises the group API ranges", async () => {
  const res = await requestOnce(b.port, ApiKey.ApiVersions, 3, {
    clientSoftwareName: "t",
    clientSoftwareVersion: "1",
  });
  const ranges = Object.fromEntries(
    res.apiKeys.map((k) => [k.apiKey, [k.minVersion, k.maxVersion]]),
  );
  expect(ranges).toMatchObject({
    8: [0, 10],
    9: [0, 10],
    10: [0, 6],
    11: [0, 9],
    12: [0, 4],
    13: [0, 5],
    14: [0, 5],
    15: [0, 6],
    16: [0, 5],
    42: [0, 3],
    47: [0, 0],
    68: [0, 1],
    69: [0, 1],
  });
});
