import { expect, test } from "bun:test";
import { Throttler } from "../../src/storage/throttler.ts";

test("sleeps long enough to bring the observed rate down to the desired one", async () => {
  let nowMs = 0;
  const throttler = new Throttler(1_000_000, () => nowMs);
  // 1 MB in the first 100 ms: within the check interval, no decision yet.
  await throttler.maybeThrottle(1_000_000);
  expect(throttler.sleptMs).toBe(0);
  nowMs = 400;
  // 1.5 MB after 400 ms is 3.75 MB/s: sleep until 1.5 s would have passed, 1.1 s more.
  const started = performance.now();
  await throttler.maybeThrottle(500_000);
  expect(throttler.sleptMs).toBe(1100);
  expect(performance.now() - started).toBeGreaterThanOrEqual(1000);
});

test("no sleep below the rate, and a restarted period forgets idle time", async () => {
  let nowMs = 0;
  const throttler = new Throttler(1_000_000, () => nowMs);
  nowMs = 60_000; // a minute idle, then a burst: without a restart it would pass unthrottled
  throttler.restartPeriod();
  nowMs += 500;
  await throttler.maybeThrottle(400_000);
  expect(throttler.sleptMs).toBe(0);
  nowMs += 500;
  await throttler.maybeThrottle(2_000_000);
  expect(throttler.sleptMs).toBe(1500);
});
