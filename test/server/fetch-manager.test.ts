import { expect, test } from "bun:test";
import type { LeaderEpoch, Offset } from "../../src/common/branded.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { FetchManager } from "../../src/server/fetch-manager.ts";
import {
  type CachedPartition,
  FetchSessionCache,
  UNKNOWN_TOPIC_NAME,
} from "../../src/server/fetch-session-cache.ts";

const TOPIC_ID = new Uint8Array(16).fill(7);
const ID_KEY = Buffer.from(TOPIC_ID).toString("hex");

const partition = (topic: string, fetchOffset = 0n): CachedPartition => ({
  key: `${ID_KEY}:0`,
  topic,
  topicId: TOPIC_ID,
  partition: 0,
  fetchOffset: fetchOffset as Offset,
  partitionMaxBytes: 1024,
  currentLeaderEpoch: 0 as LeaderEpoch,
  logStartOffset: 0n as Offset,
  highWatermark: -1n,
  leaderLogStartOffset: -1n,
});

const unknownIdAnswer = {
  errorCode: ErrorCode.UNKNOWN_TOPIC_ID,
  highWatermark: -1n,
  logStartOffset: -1n,
  recordsBytes: 0,
  preferredReadReplica: -1,
};

test("a follower's session resolves a topic id the broker learns after the session began", () => {
  const manager = new FetchManager(new FetchSessionCache(10));
  let known: string | undefined;
  const meta = (sessionId: number, epoch: number) => ({
    sessionId,
    epoch,
    privileged: true,
    usesTopicIds: true,
    topicNameById: () => known,
  });
  // The first (full) fetch arrives before the broker has read the topic from ZooKeeper.
  const full = manager.newContext(meta(0, 0), [partition(UNKNOWN_TOPIC_NAME)], []);
  const { sessionId } = full.respond([unknownIdAnswer]);
  expect(sessionId).not.toBe(0);
  // Still unknown: the incremental fetch (nothing listed, nothing moved) keeps the error.
  const second = manager.newContext(meta(sessionId, 1), [], []);
  expect(second.partitions.map((p) => p.topic)).toEqual([UNKNOWN_TOPIC_NAME]);
  second.respond([unknownIdAnswer]);
  // Now known: the next incremental fetch reads the partition by its name.
  known = "orders";
  const third = manager.newContext(meta(sessionId, 2), [], []);
  expect(third.partitions.map((p) => p.topic)).toEqual(["orders"]);
});

test("a partition listed again takes the name resolved for this request", () => {
  const manager = new FetchManager(new FetchSessionCache(10));
  const meta = (sessionId: number, epoch: number, known?: string) => ({
    sessionId,
    epoch,
    privileged: false,
    usesTopicIds: true,
    topicNameById: () => known,
  });
  const full = manager.newContext(meta(0, 0), [partition(UNKNOWN_TOPIC_NAME)], []);
  const { sessionId } = full.respond([unknownIdAnswer]);
  const next = manager.newContext(meta(sessionId, 1, "orders"), [partition("orders", 5n)], []);
  expect(next.partitions).toHaveLength(1);
  expect(next.partitions[0]!.topic).toBe("orders");
  expect(next.partitions[0]!.fetchOffset).toBe(5n as Offset);
});
