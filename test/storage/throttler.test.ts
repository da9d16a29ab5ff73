import { expect, test } from "bun:test";
import { Throttler } from "../../src/storage/throttler.ts";

test("sleeps long enough to bring the observed rate down to the desired one", async () => {
  let nowMs = 0;
  const throttler = new Throttler(
    () => 1_000_000,
    () => nowMs,
  );
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

test("no sleep below the rate; the period starts when the throttler is made", async () => {
  // A minute after the clock's start, then a burst: a period counted from 0 would pass it
  // unthrottled.
  let nowMs = 60_000;
  const throttler = new Throttler(
    () => 1_000_000,
    () => nowMs,
  );
  nowMs += 500;
  await throttler.maybeThrottle(400_000);
  expect(throttler.sleptMs).toBe(0);
  nowMs += 500;
  await throttler.maybeThrottle(2_000_000);
  expect(throttler.sleptMs).toBe(1500);
});

test("the rate is read at each check: a change applies at the next one", async () => {
  let nowMs = 0;
  let rate = Number.POSITIVE_INFINITY;
  const throttler = new Throttler(
    () => rate,
    () => nowMs,
  );
  nowMs = 400;
  await throttler.maybeThrottle(1_000_000);
  expect(throttler.sleptMs).toBe(0);
  // Limited from here; the period runs from the last check while unlimited (400 ms), so the
  // megabyte read unlimited does not count.
  rate = 1_000_000;
  nowMs = 900;
  await throttler.maybeThrottle(1_000_000);
  // 1 MB in 500 ms at 1 MB/s: sleep until a second would have passed, 500 ms more.
  expect(throttler.sleptMs).toBe(500);
});
