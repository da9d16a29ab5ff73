import { expect, test } from "bun:test";
import { murmur2, partitionForKey } from "../../src/client/murmur2.ts";

test("murmur2 gives the values of Kafka's Utils.murmur2 (UtilsTest's cases)", () => {
  const cases: [Uint8Array, number][] = [
    [new TextEncoder().encode("21"), -973932308],
    [new TextEncoder().encode("foobar"), -790332482],
    [new TextEncoder().encode("a-little-bit-long-string"), -985981536],
    [new TextEncoder().encode("a-little-bit-longer-string"), -1486304829],
    [new TextEncoder().encode("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"), -58897971],
    [new Uint8Array([97, 98, 99]), 479470107],
  ];
  for (const [key, expected] of cases) expect(murmur2(key)).toBe(expected);
  expect(partitionForKey(new TextEncoder().encode("foobar"), 6)).toBe(
    (-790332482 & 0x7fffffff) % 6,
  );
});
