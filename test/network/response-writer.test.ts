import { dlopen, FFIType } from "bun:ffi";
import { afterAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type OutputSocket, ResponseWriter } from "../../src/network/response-writer.ts";
import type { RecordsChunk } from "../../src/protocol/records.ts";
import { FrameClient } from "./frame-client.ts";

// A tiny kernel send buffer makes the socket take a few KB per write, so nearly every write is
// short and cuts land at varied offsets: inside size prefixes, buffers and file ranges.
const libc = dlopen("libc.so.6", {
  setsockopt: {
    args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.u32],
    returns: FFIType.i32,
  },
}).symbols;
const SOL_SOCKET = 1;
const SO_SNDBUF = 7;

function shrinkSendBuffer(fd: number): void {
  const value = new Int32Array([4096]);
  expect(libc.setsockopt(fd, SOL_SOCKET, SO_SNDBUF, value, 4)).toBe(0);
}

const dir = mkdtempSync(join(tmpdir(), "quill-writer-"));
const fileBytes = randomBytes(256 * 1024);
const filePath = join(dir, "segment.log");
writeSync(openSync(filePath, "w"), fileBytes);
const fileFd = openSync(filePath, "r");
afterAll(() => {
  closeSync(fileFd);
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Response i: runs of 40000 empty (prefix only) or small responses, gathered into writes larger
 * than Linux takes whole, so cuts land inside prefixes and buffers; then 2000 with file ranges:
 * small ones (read into the gathered writes) and, every fifth, ranges over 32 KiB (sendfile).
 */
function responseChunks(i: number, onRelease: () => void): RecordsChunk[] {
  const small = new Uint8Array(i % 23).fill(i & 0xff);
  if (i % 42000 < 40000) return i % 3 === 0 ? [small] : [];
  const position = (i * 997) % 200000;
  const sizeBytes = i % 5 === 0 ? 33000 + ((i * 31) % 20000) : (i * 31) % 5000;
  const range = { fd: fileFd, position, sizeBytes, release: onRelease };
  return i % 2 === 0 ? [range] : [small, range, small];
}

function expectedBody(i: number): Buffer {
  return Buffer.concat(
    responseChunks(i, () => {}).map((c) =>
      c instanceof Uint8Array ? c : fileBytes.subarray(c.position, c.position + c.sizeBytes),
    ),
  );
}

describe.each([true, false])("ResponseWriter on a 4 KiB send buffer (sendfile %p)", (sendfile) => {
  test("every response arrives whole and in order, and every range is released once", async () => {
    const responseCount = 84000;
    let releaseCount = 0;
    let shortWriteCount = 0;
    let partialWriteCount = 0;
    const listener = Bun.listen<ResponseWriter | undefined>({
      hostname: "127.0.0.1",
      port: 0,
      data: undefined,
      socket: {
        open: (socket) => {
          const raw = socket as unknown as OutputSocket;
          shrinkSendBuffer(raw.fd);
          const counting: OutputSocket = {
            fd: raw.fd,
            write: (data, offset, length) => {
              const written = raw.write(data, offset, length);
              if (written < (length ?? data.length)) shortWriteCount++;
              if (written > 0 && written < (length ?? data.length)) partialWriteCount++;
              return written;
            },
          };
          const writer = new ResponseWriter(counting, sendfile);
          for (let i = 0; i < responseCount; i++) {
            writer.enqueue(responseChunks(i, () => releaseCount++));
          }
          socket.data = writer;
          writer.flush();
        },
        drain: (socket) => {
          socket.data!.flush();
        },
      },
    });
    try {
      const client = await FrameClient.connect(listener.port);
      const responses = await client.readFrames(responseCount);
      client.close();
      const wrong = responses.flatMap((r, i) => (r.equals(expectedBody(i)) ? [] : [i]));
      expect(wrong).toEqual([]);
      expect(releaseCount).toBe(4000);
      expect(shortWriteCount).toBeGreaterThan(100);
      expect(partialWriteCount).toBeGreaterThan(5);
    } finally {
      listener.stop(true);
    }
  });
});

describe("ResponseWriter gathers small file ranges", () => {
  test("a header and a small range leave in one write; a large range by itself", async () => {
    const writes: number[] = [];
    let releaseCount = 0;
    const header = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const smallRange = {
      fd: fileFd,
      position: 1000,
      sizeBytes: 1024,
      release: () => releaseCount++,
    };
    const largeRange = {
      fd: fileFd,
      position: 5000,
      sizeBytes: 100_000,
      release: () => releaseCount++,
    };
    const listener = Bun.listen<undefined>({
      hostname: "127.0.0.1",
      port: 0,
      data: undefined,
      socket: {
        open: (socket) => {
          const raw = socket as unknown as OutputSocket;
          const counting: OutputSocket = {
            fd: raw.fd,
            write: (data, offset, length) => {
              writes.push(length ?? data.length);
              return raw.write(data, offset, length);
            },
          };
          const writer = new ResponseWriter(counting, true);
          writer.enqueue([header, smallRange]);
          expect(writer.flush()).toBe("drained");
          writer.enqueue([header, largeRange]);
          expect(writer.flush()).toBe("drained");
        },
        data: () => {},
      },
    });
    try {
      const client = await FrameClient.connect(listener.port);
      const [first, second] = await client.readFrames(2);
      client.close();
      expect(first).toEqual(Buffer.concat([header, fileBytes.subarray(1000, 2024)]));
      expect(second).toEqual(Buffer.concat([header, fileBytes.subarray(5000, 105_000)]));
      // One write for prefix, header and small range; one for the second prefix and header,
      // after which the large range goes by sendfile, not write.
      expect(writes).toEqual([4 + 10 + 1024, 4 + 10]);
      expect(releaseCount).toBe(2);
    } finally {
      listener.stop(true);
    }
  });
});
