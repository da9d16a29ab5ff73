// OffsetCommit, OffsetFetch and OffsetDelete at their lowest and highest versions, as raw
// requests over TCP.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { KafkaClient, requestOnce, type TestBroker } from "../support/kafka-client.ts";
import { firstCode, joinAlone, simpleCommit, startGroupBroker } from "./group-api-support.ts";

let b: TestBroker;
beforeAll(async () => {
  b = await startGroupBroker();
}, 60_000);
afterAll(async () => {
  await b.stop();
});

test("OffsetCommit v0 and OffsetFetch v1 (the lowest that names partitions)", async () => {
  expect(firstCode(await simpleCommit(b.port, 0, "simple-v0", 42n))).toBe(ErrorCode.NONE);
  const fetched = await requestOnce(b.port, ApiKey.OffsetFetch, 1, {
    groupId: "simple-v0",
    topics: [{ name: "t", partitionIndexes: [0, 1] }],
  });
  const rows = fetched.topics[0]!.partitions.map((p) => [p.committedOffset, p.metadata]);
  expect(rows).toEqual([
    [42n, "md"],
    [-1n, ""],
  ]);
});

test("OffsetCommit v9; OffsetFetch v7 of all partitions, v8 and v9 of several groups", async () => {
  await simpleCommit(b.port, 0, "simple-v0", 42n);
  await simpleCommit(b.port, 9, "simple-v9", 5n, 1);
  const all = await requestOnce(b.port, ApiKey.OffsetFetch, 7, {
    groupId: "simple-v9",
    topics: null,
    requireStable: true,
  });
  expect(all.errorCode).toBe(ErrorCode.NONE);
  expect(all.topics).toEqual([
    {
      name: "t",
      partitions: [
        {
          partitionIndex: 1,
          committedOffset: 5n,
          committedLeaderEpoch: 4,
          metadata: "md",
          errorCode: 0,
        },
      ],
    },
  ]);
  for (const version of [8, 9]) {
    const many = await requestOnce(b.port, ApiKey.OffsetFetch, version, {
      groups: [
        { groupId: "simple-v9", memberId: null, memberEpoch: -1, topics: null },
        {
          groupId: "simple-v0",
          memberId: null,
          memberEpoch: -1,
          topics: [{ name: "t", partitionIndexes: [0] }],
        },
      ],
    });
    const rows = many.groups.map((g) => [
      g.groupId,
      g.errorCode,
      g.topics[0]!.partitions[0]!.committedOffset,
    ]);
    expect(rows).toEqual([
      ["simple-v9", 0, 5n],
      ["simple-v0", 0, 42n],
    ]);
  }
});

test("OffsetCommit to an unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION", async () => {
  const unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
  const toUnknownTopic = await simpleCommit(b.port, 8, "g-unknown", 1n, 0, "no-such-topic");
  expect(firstCode(toUnknownTopic)).toBe(unknown);
  expect(firstCode(await simpleCommit(b.port, 8, "g-unknown", 1n, 9))).toBe(unknown);
});

test("OffsetCommit from a stale generation gets ILLEGAL_GENERATION", async () => {
  const client = await KafkaClient.connect(b.port);
  try {
    const { memberId, generationId } = await joinAlone(client, "g-commit", 5, 3);
    const commitAt = (generation: number) =>
      client.request(ApiKey.OffsetCommit, 7, {
        groupId: "g-commit",
        generationIdOrMemberEpoch: generation,
        memberId,
        groupInstanceId: null,
        topics: [{ name: "t", partitions: [{ partitionIndex: 0, committedOffset: 1n }] }],
      });
    expect(firstCode(await commitAt(generationId + 1))).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect(firstCode(await commitAt(generationId))).toBe(ErrorCode.NONE);
  } finally {
    client.close();
  }
});

test("OffsetDelete v0 deletes offsets of an Empty group", async () => {
  await simpleCommit(b.port, 8, "g-delete-offsets", 3n);
  const res = await requestOnce(b.port, ApiKey.OffsetDelete, 0, {
    groupId: "g-delete-offsets",
    topics: [{ name: "t", partitions: [{ partitionIndex: 0 }] }],
  });
  expect(res.errorCode).toBe(ErrorCode.NONE);
  expect(firstCode(res)).toBe(ErrorCode.NONE);
  const fetched = await requestOnce(b.port, ApiKey.OffsetFetch, 5, {
    groupId: "g-delete-offsets",
    topics: [{ name: "t", partitionIndexes: [0] }],
  });
  expect(fetched.topics[0]!.partitions[0]!.committedOffset).toBe(-1n);
  const missing = await requestOnce(b.port, ApiKey.OffsetDelete, 0, {
    groupId: "nope",
    topics: [],
  });
  expect(missing.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
});
