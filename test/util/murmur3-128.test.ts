import { describe, expect, test } from "bun:test";
import { murmur3Words, murmur3x86128 } from "../../src/util/murmur3-128.ts";

describe("murmur3x86128", () => {
  test("SMHasher's verification value for MurmurHash3_x86_128 (0xB3ECE62A)", () => {
    // Keys of 0..255 bytes (key[i] = i) hashed with seed 256 - length; the hashes, as 16
    // little-endian bytes each, hashed with seed 0; the first word is the verification value.
    const key = new Uint8Array(256);
    const hashes = new Uint8Array(256 * 16);
    for (let length = 0; length < 256; length++) {
      key[length] = length;
      murmur3x86128(key, 0, length, 256 - length);
      hashes.set(new Uint8Array(murmur3Words.buffer), length * 16);
    }
    murmur3x86128(hashes, 0, hashes.length, 0);
    expect(murmur3Words[0]).toBe(0xb3ece62a);
  });

  test("hashes the range only, wherever it lies", () => {
    const bytes = new TextEncoder().encode("xxkey-12345yy");
    murmur3x86128(new TextEncoder().encode("key-12345"), 0, 9, 0);
    const alone = [...murmur3Words];
    murmur3x86128(bytes, 2, 9, 0);
    expect([...murmur3Words]).toEqual(alone);
    murmur3x86128(bytes, 2, 8, 0);
    expect([...murmur3Words]).not.toEqual(alone);
  });
});
