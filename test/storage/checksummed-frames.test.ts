// Checksummed frames: what reads back is what was written, and every kind of torn tail
// (short, failing its CRC, zeros, a corrupt length) ends the valid prefix.
import { expect, test } from "bun:test";
import { concatFrames, encodeFrame, readFrames } from "../../src/storage/checksummed-frames.ts";

const PAYLOAD_BYTES_MAX = 1 << 10;
const text = new TextEncoder();

function read(bytes: Uint8Array): { payloads: string[]; validBytes: number } {
  const payloads: string[] = [];
  const validBytes = readFrames(bytes, PAYLOAD_BYTES_MAX, (payload) => {
    payloads.push(new TextDecoder().decode(payload));
  });
  return { payloads, validBytes };
}

const frames = [encodeFrame(text.encode('{"a":1}')), encodeFrame(text.encode('{"b":22}'))];
const whole = concatFrames(frames);

test("frames read back in order, each at its position", () => {
  const positions: number[] = [];
  expect(readFrames(whole, PAYLOAD_BYTES_MAX, (_, at) => positions.push(at))).toBe(whole.length);
  expect(positions).toEqual([0, frames[0]!.length]);
  expect(read(whole).payloads).toEqual(['{"a":1}', '{"b":22}']);
});

test("a torn tail ends the valid prefix: short, bad CRC, zeros, corrupt length", () => {
  const first = frames[0]!.length;
  const tails = [
    frames[1]!.subarray(0, frames[1]!.length - 1),
    frames[1]!.map((b, i) => (i === frames[1]!.length - 1 ? b ^ 1 : b)),
    new Uint8Array(64),
    Uint8Array.of(0, 0, 0x10, 0, 0, 0, 0, 0),
  ];
  for (const tail of tails) {
    expect(read(concatFrames([frames[0]!, tail]))).toEqual({
      payloads: ['{"a":1}'],
      validBytes: first,
    });
  }
});

test("an empty payload is never framed (it would read as zeros)", () => {
  expect(() => encodeFrame(new Uint8Array(0))).toThrow();
});
