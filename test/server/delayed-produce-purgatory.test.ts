import { expect, test } from "bun:test";
import {
  type TopicPartitionKey,
  topicPartitionKey as tp,
} from "../../src/common/topic-partition.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import {
  DelayedProducePurgatory,
  type ProduceWait,
} from "../../src/server/delayed-produce-purgatory.ts";

/** A wait on `key` that is done (with `code`) once `state.done` is set. */
function waitOn(key: TopicPartitionKey, state: { done: boolean; code: number }): ProduceWait {
  return {
    partitionKey: key,
    check: () =>
      state.done
        ? { outcome: "done", errorCode: state.code }
        : { outcome: "waiting", errorCode: ErrorCode.NONE },
  };
}

test("a produce completes once all its partitions are done, checked on their events", async () => {
  const purgatory = new DelayedProducePurgatory(10);
  const a = { done: false, code: ErrorCode.NONE };
  const b = { done: false, code: ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND };
  const pending = purgatory.park([waitOn(tp("a", 0), a), waitOn(tp("b", 0), b)], 30_000);
  expect(purgatory.size).toBe(1);
  a.done = true;
  purgatory.checkAndComplete(tp("a", 0));
  b.done = true;
  purgatory.checkAndComplete(tp("other", 0)); // Not watched: nothing happens.
  expect(purgatory.size).toBe(1);
  purgatory.checkAndComplete(tp("b", 0));
  expect(await pending).toEqual([ErrorCode.NONE, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND]);
  expect(purgatory.size).toBe(0);
});

test("partitions waiting at the timeout get REQUEST_TIMED_OUT; done ones keep theirs", async () => {
  const purgatory = new DelayedProducePurgatory(10);
  const a = { done: false, code: ErrorCode.NONE };
  const pending = purgatory.park(
    [waitOn(tp("a", 0), a), waitOn(tp("b", 0), { done: false, code: 0 })],
    50,
  );
  a.done = true;
  purgatory.checkAndComplete(tp("a", 0));
  expect(await pending).toEqual([ErrorCode.NONE, ErrorCode.REQUEST_TIMED_OUT]);
  expect(purgatory.size).toBe(0);
});

test("done at once takes no slot; full answers REQUEST_TIMED_OUT; expireAll ends all", async () => {
  const purgatory = new DelayedProducePurgatory(1);
  expect(await purgatory.park([waitOn(tp("a", 0), { done: true, code: 0 })], 30_000)).toEqual([0]);
  const parked = purgatory.park([waitOn(tp("a", 0), { done: false, code: 0 })], 30_000);
  expect(await purgatory.park([waitOn(tp("b", 0), { done: false, code: 0 })], 30_000)).toEqual([
    ErrorCode.REQUEST_TIMED_OUT,
  ]);
  purgatory.expireAll();
  expect(await parked).toEqual([ErrorCode.REQUEST_TIMED_OUT]);
  expect(purgatory.size).toBe(0);
});
