import { expect, test } from "bun:test";
import { topicPartitionKey as tp } from "../../src/common/topic-partition.ts";
import { DelayedFetchPurgatory } from "../../src/server/delayed-fetch-purgatory.ts";

test("an append of enough bytes wakes the fetch at once", async () => {
  const purgatory = new DelayedFetchPurgatory(10);
  const op = purgatory.park([tp("t", 0), tp("t", 1)], 100, 60_000);
  purgatory.onAppend(tp("t", 1), 60);
  expect(purgatory.size).toBe(1);
  purgatory.onAppend(tp("t", 0), 40);
  expect(await op.done).toBe("data");
  expect(purgatory.size).toBe(0);
});

test("appends to other partitions do not wake it; the timer does", async () => {
  const purgatory = new DelayedFetchPurgatory(10);
  const started = performance.now();
  const op = purgatory.park([tp("t", 0)], 1, 50);
  purgatory.onAppend(tp("t", 9), 1000);
  expect(await op.done).toBe("timeout");
  expect(performance.now() - started).toBeGreaterThanOrEqual(45);
  expect(purgatory.size).toBe(0);
});

test("beyond the limit a fetch is answered at once instead of parked", async () => {
  const purgatory = new DelayedFetchPurgatory(1);
  const first = purgatory.park([tp("t", 0)], 1, 60_000);
  const second = purgatory.park([tp("t", 0)], 1, 60_000);
  expect(await second.done).toBe("full");
  expect(purgatory.size).toBe(1);
  purgatory.completeAll();
  expect(await first.done).toBe("timeout");
  expect(purgatory.size).toBe(0);
});

test("cancelling (connection closed) removes the watcher", async () => {
  const purgatory = new DelayedFetchPurgatory(4);
  const op = purgatory.park([tp("t", 0)], 1, 60_000);
  op.complete("cancelled");
  expect(await op.done).toBe("cancelled");
  purgatory.onAppend(tp("t", 0), 10);
  expect(purgatory.size).toBe(0);
});
