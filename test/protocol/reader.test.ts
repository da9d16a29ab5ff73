import { describe, expect, test } from "bun:test";
import { DecodeError } from "../../src/protocol/errors.ts";
import { Reader } from "../../src/protocol/reader.ts";

const bytes = (...b: number[]) => new Uint8Array(b);

describe("Reader primitives", () => {
  test("reads big-endian integers, floats and bools", () => {
    const r = new Reader(bytes(0xff, 0x80, 0x00, 0xff, 0xff, 0xff, 0xfe, 0x01, 0x02));
    expect(r.int8()).toBe(-1);
    expect(r.int16()).toBe(-32768);
    expect(r.uint16()).toBe(0xffff);
    expect(r.int32()).toBe(0xfffe0102 - 2 ** 32);
    expect(r.remaining()).toBe(0);
    const r2 = new Reader(bytes(0x80, 0, 0, 0, 0, 0, 0, 1, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 2, 0));
    expect(r2.int64()).toBe(-0x7fffffffffffffffn);
    expect(r2.float64()).toBe(1);
    expect(r2.bool()).toBe(true);
    expect(r2.bool()).toBe(false);
  });

  test("varints follow Kafka's zigzag and LEB128 encoding", () => {
    expect(new Reader(bytes(0x96, 0x01)).unsignedVarint()).toBe(150);
    expect(new Reader(bytes(0xff, 0xff, 0xff, 0xff, 0x0f)).unsignedVarint()).toBe(0xffffffff);
    expect(new Reader(bytes(0x01)).varint()).toBe(-1);
    expect(new Reader(bytes(0x02)).varint()).toBe(1);
    expect(new Reader(bytes(0xff, 0xff, 0xff, 0xff, 0x0f)).varint()).toBe(-2147483648);
    const max = bytes(0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
    expect(new Reader(max).varlong()).toBe(0x7fffffffffffffffn);
    expect(new Reader(bytes(0x03)).varlong()).toBe(-2n);
  });

  test("strings and bytes, plain and compact, nullable", () => {
    const r = new Reader(bytes(0, 2, 0x68, 0x69, 0xff, 0xff, 3, 0x6f, 0x6b, 0, 0, 0, 0, 1, 9, 0));
    expect(r.string()).toBe("hi");
    expect(r.nullableString()).toBeNull();
    expect(r.compactString()).toBe("ok");
    expect(r.compactNullableString()).toBeNull();
    const b = r.bytes();
    expect(Array.from(b)).toEqual([9]);
    expect(b.buffer).toBe(r.buf.buffer); // A view, not a copy.
    expect(r.compactNullableBytes()).toBeNull();
  });

  test("uuid is a 16-byte view", () => {
    const buf = new Uint8Array(20).map((_, i) => i);
    const r = new Reader(buf, 2);
    const u = r.uuid();
    expect(u.length).toBe(16);
    expect(u[0]).toBe(2);
    expect(r.remaining()).toBe(2);
  });
});

describe("Reader rejects malformed input with DecodeError", () => {
  const cases: [string, (r: Reader) => unknown, Uint8Array][] = [
    ["truncated int32", (r) => r.int32(), bytes(0, 0, 1)],
    ["truncated int64", (r) => r.int64(), bytes(0, 0, 1, 0, 0, 0, 0)],
    ["empty uuid", (r) => r.uuid(), bytes()],
    ["varint that never ends", (r) => r.unsignedVarint(), new Uint8Array(100).fill(0x80)],
    ["truncated varint", (r) => r.varint(), bytes(0x80, 0x80)],
    ["varlong that never ends", (r) => r.varlong(), new Uint8Array(100).fill(0xff)],
    ["negative string length", (r) => r.string(), bytes(0xff, 0xfe, 0x61)],
    ["null non-nullable string", (r) => r.string(), bytes(0xff, 0xff)],
    ["string beyond the frame", (r) => r.string(), bytes(0, 5, 0x61)],
    ["null compact string", (r) => r.compactString(), bytes(0)],
    ["compact string beyond frame", (r) => r.compactString(), bytes(10, 0x61)],
    ["negative bytes length", (r) => r.nullableBytes(), bytes(0x80, 0, 0, 0)],
    ["bytes beyond the frame", (r) => r.bytes(), bytes(0x7f, 0xff, 0xff, 0xff)],
    ["huge array count", (r) => r.arrayLength(false), bytes(0x7f, 0xff, 0xff, 0xff, 1)],
    ["huge compact array count", (r) => r.arrayLength(true), bytes(0xff, 0xff, 0xff, 0xff, 0x0f)],
    ["negative array count", (r) => r.arrayLength(false), bytes(0xff, 0xff, 0xff, 0xfe)],
    ["endless tagged fields", (r) => r.skipTaggedFields(), bytes(0xff, 0xff, 0xff, 0xff, 0x0f)],
  ];
  for (const [name, read, input] of cases) {
    test(name, () => {
      expect(() => read(new Reader(input))).toThrow(DecodeError);
    });
  }

  test("a reader never reads past its end even when the buffer goes on", () => {
    const r = new Reader(bytes(1, 2, 3, 4, 5, 6), 1, 3);
    expect(r.int16()).toBe(0x0203);
    expect(() => r.int8()).toThrow(DecodeError);
  });

  test("the error carries the offset where decoding failed", () => {
    const r = new Reader(bytes(0, 1, 0, 9));
    r.int16();
    try {
      r.string();
      throw new Error("unreachable");
    } catch (e) {
      expect(e).toBeInstanceOf(DecodeError);
      expect((e as DecodeError).offset).toBe(4);
    }
  });

  test("array counts within the remaining bytes are accepted", () => {
    expect(new Reader(bytes(0, 0, 0, 2, 0, 0)).arrayLength(false)).toBe(2);
    expect(new Reader(bytes(0xff, 0xff, 0xff, 0xff)).arrayLength(false)).toBe(-1);
    expect(new Reader(bytes(0)).arrayLength(true)).toBe(-1);
  });
});
