// Kafka's TokenBucket as controller_mutation_rate meters it (KIP-599): full at first with
// samples x sample length x rate tokens, overdrawn by one take, throttled for the time the refill
// needs to reach zero, capped at the burst, and idle (droppable) only once full again.
import { expect, test } from "bun:test";
import { TokenBucket } from "../../src/server/token-bucket.ts";

const T0 = 1_800_000_000_000;

test("a bucket starts full with Kafka's burst and refills at the rate, up to the burst", () => {
  const bucket = new TokenBucket(11, 1000);
  // 11 one-second samples at 2 per second: 22 tokens.
  expect(bucket.measure(T0, 2)).toBe(22);
  bucket.take(20, T0, 2);
  expect(bucket.measure(T0, 2)).toBe(2);
  expect(bucket.measure(T0 + 5000, 2)).toBe(12);
  expect(bucket.measure(T0 + 60_000, 2)).toBe(22);
});

test("one take may overdraw the bucket; the throttle is the refill time back to zero", () => {
  const bucket = new TokenBucket(1, 1000);
  expect(bucket.throttleMs(T0, 4)).toBe(0);
  // 4 tokens less 10: -6 at 4 per second is 1.5 s.
  expect(bucket.recordAndThrottleMs(10, T0, 4)).toBe(1500);
  expect(bucket.throttleMs(T0 + 500, 4)).toBe(1000);
  expect(bucket.throttleMs(T0 + 1500, 4)).toBe(0);
});

test("a bucket is idle only once it has refilled, however long ago it was used", () => {
  const bucket = new TokenBucket(1, 1000);
  expect(bucket.isIdle(T0)).toBe(true);
  // 1 token less 100 at 1 per second: negative for 99 s, far past the one-second window.
  bucket.take(100, T0, 1);
  expect(bucket.isIdle(T0 + 2000)).toBe(false);
  expect(bucket.isIdle(T0 + 99_000)).toBe(false);
  expect(bucket.isIdle(T0 + 100_000)).toBe(true);
});
