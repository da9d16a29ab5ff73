import { expect, test } from "bun:test";
import type { LeaderEpoch, Offset } from "../../src/common/branded.ts";
import {
  type CachedPartition,
  EVICTION_MS,
  FetchSessionCache,
} from "../../src/server/fetch-session-cache.ts";

const parts = (n: number): CachedPartition[] =>
  Array.from({ length: n }, (_, i) => ({
    key: `t:${i}`,
    topic: "t",
    topicId: new Uint8Array(16),
    partition: i,
    fetchOffset: 0n as Offset,
    partitionMaxBytes: 1024,
    currentLeaderEpoch: -1 as LeaderEpoch,
    logStartOffset: -1n as Offset,
    highWatermark: -1n,
    leaderLogStartOffset: -1n,
  }));

test("a full cache evicts a session unused for longer than the eviction time", () => {
  let now = 1_000_000;
  const cache = new FetchSessionCache(2, () => now);
  const a = cache.maybeCreate(false, false, parts(5))!;
  const b = cache.maybeCreate(false, false, parts(5))!;
  now += 1_000;
  cache.touch(a);
  expect(cache.maybeCreate(false, false, parts(1))).toBeNull();
  now += EVICTION_MS; // b unused since creation, a touched 1 s later: b goes first
  const c = cache.maybeCreate(false, false, parts(1))!;
  expect(cache.get(b.id)).toBeUndefined();
  expect(cache.get(a.id)).toBe(a);
  expect(cache.get(c.id)).toBe(c);
  expect(cache.incrementalFetchSessionEvictions).toBe(1);
});

test("old sessions give way to bigger ones; followers' new sessions to consumers' at once", () => {
  let now = 0;
  const cache = new FetchSessionCache(2, () => now);
  const small = cache.maybeCreate(false, false, parts(2))!;
  const big = cache.maybeCreate(false, false, parts(9))!;
  // Not stale (both touched now), too young to be evictable by a consumer.
  now = EVICTION_MS + 1;
  cache.touch(small);
  cache.touch(big);
  expect(cache.maybeCreate(false, false, parts(2))).toBeNull(); // not worth more than `small`
  const three = cache.maybeCreate(false, false, parts(3))!;
  expect(cache.get(small.id)).toBeUndefined();
  // A follower's session evicts the smallest consumer session even when it is young.
  now += 1;
  cache.touch(three);
  cache.touch(big);
  const follower = cache.maybeCreate(true, false, parts(1))!;
  expect(follower).not.toBeNull();
  expect(cache.get(three.id)).toBeUndefined();
  expect(cache.get(big.id)).toBe(big);
  expect(cache.size).toBe(2);
});

test("no slots: never a session", () => {
  expect(new FetchSessionCache(0).maybeCreate(true, true, parts(1))).toBeNull();
});
