import { expect, test } from "bun:test";
import { mapLimit } from "../../src/util/map-limit.ts";

test("keeps the order of results and never has more than `limit` calls in flight", async () => {
  let inFlight = 0;
  let inFlightMax = 0;
  const items = Array.from({ length: 50 }, (_, i) => i);
  const results = await mapLimit(items, 4, async (i) => {
    inFlight++;
    inFlightMax = Math.max(inFlightMax, inFlight);
    await Bun.sleep((i * 7) % 5);
    inFlight--;
    return i * 2;
  });
  expect(results).toEqual(items.map((i) => i * 2));
  expect(inFlightMax).toBe(4);
});

test("an empty list maps to an empty list; a rejection rejects the whole map", async () => {
  expect(await mapLimit([], 8, async () => 1)).toEqual([]);
  const failing = mapLimit([1, 2, 3], 2, async (i) => {
    if (i === 2) throw new Error("boom");
    return i;
  });
  await expect(failing).rejects.toThrow("boom");
});
