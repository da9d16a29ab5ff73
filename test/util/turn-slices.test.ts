import { expect, test } from "bun:test";
import { TurnSlices } from "../../src/util/turn-slices.ts";

function busyMs(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // Holds the loop, as a slice of synchronous work does.
  }
}

test("a slice is due once it has run sliceMs, and next() starts a new one", async () => {
  const slices = new TurnSlices(20);
  expect(slices.due()).toBe(false);
  busyMs(25);
  expect(slices.due()).toBe(true);
  await slices.next();
  expect(slices.due()).toBe(false);
});

test("a timer due during a slice runs before the slice after next starts", async () => {
  const slices = new TurnSlices(0);
  let fired = false;
  setTimeout(() => {
    fired = true;
  }, 1);
  busyMs(5);
  // Bun runs a turn's immediates before its timers: the slice right after the first next()
  // still precedes the timer.
  await slices.next();
  await slices.next();
  expect(fired).toBe(true);
});
