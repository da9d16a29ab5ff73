import { describe, expect, test } from "bun:test";
import { EncodeError } from "../../src/protocol/errors.ts";
import { Reader } from "../../src/protocol/reader.ts";
import type { FileRange } from "../../src/protocol/records.ts";
import { isFileRange } from "../../src/protocol/records.ts";
import { WRITER_ZERO_COPY_MIN_BYTES, Writer } from "../../src/protocol/writer.ts";

const fileRange = (sizeBytes: number): FileRange => ({
  fd: 99,
  position: 0,
  sizeBytes,
  release: () => {},
});

describe("Writer", () => {
  test("writes what Reader reads back, for every primitive", () => {
    const w = new Writer(8); // Tiny, so the buffer grows several times.
    w.int8(-5);
    w.int16(-300);
    w.uint16(65000);
    w.int32(-70000);
    w.uint32(0xfffffff0);
    w.int64(-(2n ** 63n));
    w.float64(Math.PI);
    w.bool(true);
    w.uuid(new Uint8Array(16).fill(7));
    w.unsignedVarint(0xffffffff);
    w.varint(-2147483648);
    w.varlong(2n ** 63n - 1n);
    w.varlong(-1n);
    w.string("héllo");
    w.nullableString(null);
    w.compactString("x".repeat(300));
    w.compactString("ünï");
    w.compactNullableString(null);
    w.bytes(new Uint8Array([1, 2]));
    w.nullableBytes(null);
    w.compactBytes(new Uint8Array(0));
    w.compactNullableBytes(null);
    const r = new Reader(w.toBytes());
    expect(r.int8()).toBe(-5);
    expect(r.int16()).toBe(-300);
    expect(r.uint16()).toBe(65000);
    expect(r.int32()).toBe(-70000);
    expect(r.uint32()).toBe(0xfffffff0);
    expect(r.int64()).toBe(-(2n ** 63n));
    expect(r.float64()).toBe(Math.PI);
    expect(r.bool()).toBe(true);
    expect(r.uuid()).toEqual(new Uint8Array(16).fill(7));
    expect(r.unsignedVarint()).toBe(0xffffffff);
    expect(r.varint()).toBe(-2147483648);
    expect(r.varlong()).toBe(2n ** 63n - 1n);
    expect(r.varlong()).toBe(-1n);
    expect(r.string()).toBe("héllo");
    expect(r.nullableString()).toBeNull();
    expect(r.compactString()).toBe("x".repeat(300));
    expect(r.compactString()).toBe("ünï");
    expect(r.compactNullableString()).toBeNull();
    expect(r.bytes()).toEqual(new Uint8Array([1, 2]));
    expect(r.nullableBytes()).toBeNull();
    expect(r.compactBytes().length).toBe(0);
    expect(r.compactNullableBytes()).toBeNull();
    expect(r.remaining()).toBe(0);
  });

  test("a FileRange becomes its own chunk with the length prefix before it", () => {
    const w = new Writer();
    w.int32(7);
    w.records([new Uint8Array([1, 2, 3]), fileRange(1000)], true);
    w.int16(9);
    const chunks = w.finish();
    expect(chunks.length).toBe(3);
    expect(Array.from(chunks[0] as Uint8Array)).toEqual([0, 0, 0, 7, 0xec, 0x07, 1, 2, 3]);
    expect(isFileRange(chunks[1]!)).toBe(true);
    expect(Array.from(chunks[2] as Uint8Array)).toEqual([0, 9]);
    expect(w.length).toBe(9 + 1000 + 2);
    expect(() => w.toBytes()).toThrow(EncodeError);
  });

  test("large byte records are not copied; small ones are", () => {
    const big = new Uint8Array(WRITER_ZERO_COPY_MIN_BYTES).fill(5);
    const w = new Writer();
    w.records(big, false);
    const chunks = w.finish();
    expect(chunks[1]).toBe(big);
    w.reset();
    w.records(new Uint8Array([4]), false);
    w.records(null, false);
    expect(Array.from(w.toBytes())).toEqual([0, 0, 0, 1, 4, 0xff, 0xff, 0xff, 0xff]);
  });

  test("startNext writes the next message behind the last; earlier chunks keep their bytes", () => {
    const w = new Writer(16); // Small, so the third message grows the buffer.
    w.int32(1);
    const first = w.finish();
    w.startNext();
    w.int16(2);
    w.records([fileRange(10)], false);
    w.int8(3);
    const second = w.finish();
    const freeBefore = w.freeBytes;
    w.startNext();
    w.string("x".repeat(40));
    const third = w.finish();
    w.startNext();
    w.int8(4);
    w.startNext(); // Abandons the unfinished message.
    w.int8(5);
    const fifth = w.finish();
    expect(freeBefore).toBeLessThan(16);
    expect(Array.from(first[0] as Uint8Array)).toEqual([0, 0, 0, 1]);
    expect(Array.from(second[0] as Uint8Array)).toEqual([0, 2, 0, 0, 0, 10]);
    expect(isFileRange(second[1]!)).toBe(true);
    expect(Array.from(second[2] as Uint8Array)).toEqual([3]);
    expect(third.length).toBe(1);
    expect(new Reader(third[0] as Uint8Array).string()).toBe("x".repeat(40));
    expect(Array.from(fifth[0] as Uint8Array)).toEqual([5]);
    expect(w.length).toBe(1);
  });

  test("reset reuses the buffer and forgets earlier writes", () => {
    const w = new Writer(16);
    w.string("a".repeat(100));
    w.finish();
    w.reset();
    w.int8(1);
    expect(Array.from(w.toBytes())).toEqual([1]);
  });

  test("tagged fields get a varint size, moved when it needs more than a byte", () => {
    const w = new Writer(4);
    const small = w.beginTaggedField(3);
    w.int32(1);
    w.endTaggedField(small);
    const big = w.beginTaggedField(200);
    w.raw(new Uint8Array(300).fill(8));
    w.endTaggedField(big);
    const r = new Reader(w.toBytes());
    expect(r.unsignedVarint()).toBe(3);
    expect(r.unsignedVarint()).toBe(4);
    expect(r.int32()).toBe(1);
    expect(r.unsignedVarint()).toBe(200);
    expect(r.unsignedVarint()).toBe(300);
    expect(r.remaining()).toBe(300);
  });

  test("reserve and patch a frame size", () => {
    const w = new Writer();
    const at = w.reserve(4);
    w.string("abc");
    w.patchInt32(at, w.length - 4);
    expect(Array.from(w.toBytes())).toEqual([0, 0, 0, 5, 0, 3, 97, 98, 99]);
  });

  test("refuses values the wire cannot carry", () => {
    expect(() => new Writer().uuid(new Uint8Array(15))).toThrow(EncodeError);
    expect(() => new Writer().string("x".repeat(40000))).toThrow(EncodeError);
    expect(() => new Writer().compactString("x".repeat(40000))).toThrow(EncodeError);
    expect(() => new Writer(16, 64).raw(new Uint8Array(65))).toThrow(EncodeError);
  });
});
