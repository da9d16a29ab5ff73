import { describe, expect, test } from "bun:test";
import { OffsetMap } from "../../src/storage/offset-map.ts";

const encoder = new TextEncoder();

/** Keys `key-0` .. laid end to end in one buffer, as records lie in a batch. */
function keysIn(count: number): { bytes: Uint8Array; starts: number[]; lengths: number[] } {
  const parts = Array.from({ length: count }, (_, i) => encoder.encode(`key-${i}`));
  const bytes = new Uint8Array(parts.reduce((sum, part) => sum + part.length + 1, 0));
  const starts: number[] = [];
  const lengths: number[] = [];
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at + 1); // a byte before each key: keys are found by position
    starts.push(at + 1);
    lengths.push(part.length);
    at += part.length + 1;
  }
  return { bytes, starts, lengths };
}

describe("OffsetMap", () => {
  test("keeps the latest offset of every key while the table grows, and forgets on clear", () => {
    const keys = 200_000;
    const { bytes, starts, lengths } = keysIn(keys);
    const map = new OffsetMap(64 << 20, 0.9);
    map.clear(3 * keys);
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < keys; i++) map.put(bytes, starts[i], lengths[i], round * keys + i);
    }
    expect(map.size).toBe(keys);
    expect(map.isFull).toBe(false);
    for (let i = 0; i < keys; i++) {
      if (map.get(bytes, starts[i], lengths[i]) !== 2 * keys + i) {
        throw new Error(`key-${i}: ${map.get(bytes, starts[i], lengths[i])}`);
      }
    }
    const other = encoder.encode("key-200000");
    expect(map.get(other, 0, other.length)).toBe(-1);
    map.clear(keys);
    expect(map.size).toBe(0);
    expect(map.get(bytes, starts[7], lengths[7])).toBe(-1);
  });

  test("is full at the load factor of the slots the cleaning may use", () => {
    const { bytes, starts, lengths } = keysIn(100);
    const map = new OffsetMap(24 * 1000, 0.5);
    map.clear(20); // 41 slots: full at 20 keys
    let put = 0;
    while (!map.isFull) map.put(bytes, starts[put], lengths[put], put++);
    expect(put).toBe(20);
    // A key already in a full map still takes a newer offset.
    map.put(bytes, starts[3], lengths[3], 99);
    expect(map.get(bytes, starts[3], lengths[3])).toBe(99);
    expect(map.size).toBe(20);
  });
});
