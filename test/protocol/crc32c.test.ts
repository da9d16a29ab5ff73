import { describe, expect, test } from "bun:test";
import { crc32c, crc32cRange, tableCrc32cRange } from "../../src/protocol/crc32c.ts";

const ascii = (s: string) => new TextEncoder().encode(s);

/** Bit-at-a-time reference, independent of the table-driven implementation under test. */
function referenceCrc32c(data: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of data) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return ~crc >>> 0;
}

describe("crc32c", () => {
  test("standard check value: 123456789 gives 0xE3069283", () => {
    expect(crc32c(ascii("123456789"))).toBe(0xe3069283);
  });

  test("RFC 3720 (iSCSI) vectors", () => {
    expect(crc32c(new Uint8Array(0))).toBe(0);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43);
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i))).toBe(0x46dd794e);
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => 31 - i))).toBe(0x113fdb5c);
    expect(crc32c(ascii("The quick brown fox jumps over the lazy dog"))).toBe(0x22620404);
  });

  test("matches a bit-at-a-time reference for every length 0..300 and unaligned views", () => {
    const data = Uint8Array.from({ length: 307 }, (_, i) => (i * 131 + 7) & 0xff);
    for (let length = 0; length <= 300; length++) {
      for (const start of [0, 1, 3, 7]) {
        const slice = data.subarray(start, start + length);
        expect(crc32c(slice)).toBe(referenceCrc32c(slice));
      }
    }
  });

  test("continues across pieces and ranges", () => {
    const data = Uint8Array.from({ length: 10_000 }, (_, i) => (i * 7919) & 0xff);
    const whole = crc32c(data);
    expect(crc32c(data.subarray(4321), crc32c(data.subarray(0, 4321)))).toBe(whole);
    expect(crc32cRange(data, 0, data.length)).toBe(whole);
    expect(crc32cRange(data, 100, 200)).toBe(crc32c(data.subarray(100, 200)));
  });

  test("ranges outside the buffer are refused", () => {
    const data = new Uint8Array(10);
    expect(() => crc32cRange(data, 5, 11)).toThrow(RangeError);
    expect(() => crc32cRange(data, -1, 5)).toThrow(RangeError);
    expect(() => crc32cRange(data, 6, 5)).toThrow(RangeError);
  });
});

test("the native path (large inputs) agrees with the table path at every size around the switch", () => {
  const data = new Uint8Array(70_000);
  for (let i = 0; i < data.length; i++) data[i] = (i * 2654435761) >>> 24;
  for (const sizeBytes of [1023, 1024, 1025, 4099, 65_536, 69_990]) {
    for (const start of [0, 1, 7]) {
      const end = start + sizeBytes;
      expect(crc32cRange(data, start, end)).toBe(tableCrc32cRange(data, start, end));
      expect(crc32cRange(data, start, end, 0x1234_5678)).toBe(
        tableCrc32cRange(data, start, end, 0x1234_5678),
      );
    }
  }
});
