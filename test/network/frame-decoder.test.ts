import { describe, expect, test } from "bun:test";
import { FrameDecoder, type FrameError } from "../../src/network/frame-decoder.ts";
import { frame, requestBody } from "./frame-client.ts";

const hex = (f: Uint8Array | FrameError) => Buffer.from(f as Uint8Array).toString("hex");

/** Pulls every frame the decoder can produce now. */
function drain(decoder: FrameDecoder): (Uint8Array | FrameError)[] {
  const out: (Uint8Array | FrameError)[] = [];
  for (let next = decoder.next(); next !== null; next = decoder.next()) {
    out.push(next);
    if (!(next instanceof Uint8Array)) break;
  }
  return out;
}

describe("FrameDecoder", () => {
  const bodies = [requestBody(1, 10, 3), requestBody(2, 20, 0), requestBody(3, 30, 40)];
  const stream = Buffer.concat(bodies.map(frame));

  test("decodes frames split at every byte boundary, in order", () => {
    for (let split = 0; split <= stream.length; split++) {
      const decoder = new FrameDecoder(1024);
      decoder.push(stream.subarray(0, split));
      const frames = drain(decoder);
      decoder.push(stream.subarray(split));
      frames.push(...drain(decoder));
      expect(frames.map(hex)).toEqual(bodies.map(hex));
      expect(decoder.hasBufferedInput).toBe(false);
    }
  });

  test("decodes a stream delivered one byte per buffer", () => {
    const decoder = new FrameDecoder(1024);
    const frames: (Uint8Array | FrameError)[] = [];
    for (let i = 0; i < stream.length; i++) {
      decoder.push(stream.subarray(i, i + 1));
      frames.push(...drain(decoder));
    }
    expect(frames.map(hex)).toEqual(bodies.map(hex));
  });

  test("a frame inside one buffer is a view; a split frame is assembled at its size", () => {
    const decoder = new FrameDecoder(1024);
    decoder.push(stream);
    const whole = drain(decoder) as Uint8Array[];
    expect(whole.every((f) => f.buffer === stream.buffer)).toBe(true);
    decoder.push(stream.subarray(0, 10));
    expect(drain(decoder)).toEqual([]);
    decoder.push(stream.subarray(10));
    const [split] = drain(decoder) as Uint8Array[];
    expect(split!.buffer).not.toBe(stream.buffer);
    expect(split!.buffer.byteLength).toBe(bodies[0]!.length);
  });

  test("many frames in one buffer come out one at a time, leaving the rest buffered", () => {
    const many = Buffer.concat(Array.from({ length: 1000 }, (_, i) => frame(requestBody(i, i))));
    const decoder = new FrameDecoder(1024);
    decoder.push(many);
    const first = decoder.next() as Uint8Array;
    expect(Buffer.from(first).readInt32BE(0)).toBe(0);
    expect(decoder.hasBufferedInput).toBe(true);
    const rest = drain(decoder) as Uint8Array[];
    expect(rest.length).toBe(999);
    const ids = rest.map((f) => Buffer.from(f).readInt32BE(0));
    expect(ids).toEqual(Array.from({ length: 999 }, (_, i) => i + 1));
  });

  test("rejects sizes above the maximum, negative sizes and sizes below the header", () => {
    const cases: [number, string][] = [
      [1025, "above"],
      [0x7fffffff, "above"],
      [-1, "below"],
      [-0x80000000, "below"],
      [7, "below"],
    ];
    for (const [sizeBytes, word] of cases) {
      const decoder = new FrameDecoder(1024);
      const prefix = Buffer.alloc(4);
      prefix.writeInt32BE(sizeBytes, 0);
      // Split the prefix too, to check the split path reads the sign correctly.
      decoder.push(prefix.subarray(0, 1));
      expect(decoder.next()).toBeNull();
      decoder.push(prefix.subarray(1));
      const result = decoder.next() as FrameError;
      expect(result.sizeBytes).toBe(sizeBytes);
      expect(result.reason).toContain(word);
    }
  });

  test("accepts a frame of exactly the maximum size", () => {
    const decoder = new FrameDecoder(64);
    decoder.push(frame(new Uint8Array(64).fill(7)));
    const result = decoder.next() as Uint8Array;
    expect(result.length).toBe(64);
    expect(result.every((b) => b === 7)).toBe(true);
  });
});
