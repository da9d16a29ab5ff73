import { heapStats } from "bun:jsc";
import { afterEach, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Socket } from "bun";
import type { NetworkLimits } from "../../src/network/network-limits.ts";
import type {
  ConnectionContext,
  RequestHandler,
  Response,
} from "../../src/network/request-handler.ts";
import { SocketServer } from "../../src/network/socket-server.ts";
import type { FileRange } from "../../src/protocol/records.ts";
import {
  FrameClient,
  frame,
  RecordingLogger,
  requestBody,
  requests,
  sleep,
  waitFor,
} from "./frame-client.ts";

const servers: SocketServer[] = [];
const clients: FrameClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const server of servers.splice(0)) await server.drainAndClose(100);
});

async function start(
  handler: RequestHandler,
  limits: Partial<NetworkLimits> = {},
  sendfileEnabled = true,
) {
  const logger = new RecordingLogger();
  const host = "127.0.0.1";
  const server = new SocketServer({ host, port: 0, handler, limits, logger, sendfileEnabled });
  servers.push(server);
  const { port } = await server.start();
  return { server, port, logger };
}

async function connect(port: number): Promise<FrameClient> {
  const client = await FrameClient.connect(port);
  clients.push(client);
  return client;
}

const echo: RequestHandler = { handle: (f) => ({ chunks: [f] }) };
const correlationId = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset).getInt32(0);
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

describe("SocketServer framing and order", () => {
  test("start binds port 0 to a real port and counts connections", async () => {
    const { server, port } = await start(echo);
    expect(port).toBeGreaterThan(0);
    await connect(port);
    await waitFor(() => server.connectionCount === 1);
    expect(server.connectionCount).toBe(1);
  });

  test("a request split at every byte boundary across TCP writes is answered whole", async () => {
    const { port } = await start(echo);
    const client = await connect(port);
    const body = requestBody(42, 7, 12);
    const bytes = frame(body);
    for (let split = 1; split < bytes.length; split++) {
      client.write(bytes.subarray(0, split));
      await sleep(2);
      client.write(bytes.subarray(split));
      const [response] = await client.readFrames(1);
      expect(response).toEqual(body);
    }
  });

  test("many frames in one packet are all answered in order", async () => {
    const { port } = await start(echo);
    const client = await connect(port);
    const bodies = Array.from({ length: 2000 }, (_, i) => requestBody(i, 0, i % 50));
    client.write(Buffer.concat(bodies.map(frame)));
    const responses = await client.readFrames(bodies.length);
    expect(responses).toEqual(bodies);
  });

  test("pipelined responses keep request order when handlers finish out of order", async () => {
    const handler: RequestHandler = {
      handle: async (f) => {
        await sleep(Math.floor(Math.random() * 20));
        return { chunks: [f] };
      },
    };
    const { port } = await start(handler);
    const client = await connect(port);
    const ids = Array.from({ length: 300 }, (_, i) => i);
    client.write(Buffer.concat(ids.map((i) => frame(requestBody(i, 0)))));
    const responses = await client.readFrames(ids.length);
    expect(responses.map(correlationId)).toEqual(ids);
  });

  test("null responses are skipped and later responses keep their order", async () => {
    const handler: RequestHandler = {
      handle: async (f) => (correlationId(f) % 3 === 0 ? null : { chunks: [f] }),
    };
    const { port } = await start(handler);
    const client = await connect(port);
    const ids = Array.from({ length: 30 }, (_, i) => i);
    client.write(Buffer.concat(ids.map((i) => frame(requestBody(i, 0)))));
    const responses = await client.readFrames(20);
    expect(responses.map(correlationId)).toEqual(ids.filter((i) => i % 3 !== 0));
  });

  test("a close response closes the connection after the earlier responses", async () => {
    const handler: RequestHandler = {
      handle: async (f) => {
        const id = correlationId(f);
        if (id === 5) return "close";
        await sleep(id < 5 ? 30 - id * 5 : 0);
        return { chunks: [f] };
      },
    };
    const { server, port } = await start(handler);
    const client = await connect(port);
    client.write(requests(10));
    const responses = await client.readFrames(5);
    expect(responses.map(correlationId)).toEqual([0, 1, 2, 3, 4]);
    await client.closedPromise;
    expect(client.bufferedBytes).toBe(0);
    await waitFor(() => server.connectionCount === 0);
  });

  test("responses made of several chunks arrive as one frame each", async () => {
    const handler: RequestHandler = {
      handle: (f) => ({
        chunks: [f.subarray(0, 4), new Uint8Array(0), f.subarray(4), new Uint8Array(40000).fill(9)],
      }),
    };
    const { port } = await start(handler);
    const client = await connect(port);
    client.write(Buffer.concat([frame(requestBody(1, 2)), frame(requestBody(3, 4))]));
    const responses = await client.readFrames(2);
    expect(responses[0]).toEqual(Buffer.concat([requestBody(1, 2), Buffer.alloc(40000, 9)]));
    expect(responses[1]).toEqual(Buffer.concat([requestBody(3, 4), Buffer.alloc(40000, 9)]));
  });
});

describe("SocketServer writes to slow readers", () => {
  test("a 64 MiB response to a client that stops reading arrives byte-identical", async () => {
    const big = randomBytes(64 * 1024 * 1024);
    const handler: RequestHandler = {
      handle: (f) => (correlationId(f) === 1 ? { chunks: [f, big] } : { chunks: [f] }),
    };
    const { port } = await start(handler);
    const client = await connect(port);
    client.pause();
    client.write(Buffer.concat([0, 1, 2].map((i) => frame(requestBody(i, 0)))));
    await sleep(300);
    client.resume();
    const responses = await client.readFrames(3);
    expect(responses.map(correlationId)).toEqual([0, 1, 2]);
    expect(responses[1]!.length).toBe(8 + big.length);
    expect(sha256(responses[1]!.subarray(8))).toBe(sha256(big));
  }, 20000);

  test("hundreds of thousands of tiny responses to a paused client all arrive intact", async () => {
    // Tiny responses make short writes likely to split a size prefix, not only a body.
    const handler: RequestHandler = { handle: (f) => ({ chunks: [f, f.subarray(0, 5)] }) };
    const { port } = await start(handler);
    const client = await connect(port);
    client.pause();
    const requestCount = 400_000;
    client.write(requests(requestCount));
    await sleep(300);
    // Reading in short bursts makes many short writes, at varied offsets.
    let reading = false;
    const toggle = setInterval(() => ((reading = !reading) ? client.resume() : client.pause()), 2);
    const responses = await client.readFrames(requestCount).finally(() => clearInterval(toggle));
    const wrong: number[] = [];
    for (let i = 0; i < requestCount; i++) {
      const response = responses[i]!;
      const expected = Buffer.concat([requestBody(i, 0), requestBody(i, 0).subarray(0, 5)]);
      if (!response.equals(expected)) wrong.push(i);
    }
    expect(responses.length).toBe(requestCount);
    expect(wrong).toEqual([]);
  }, 20000);

  test("queued response bytes over the limit pause reading until the client reads", async () => {
    let handledCount = 0;
    const response = new Uint8Array(1024 * 1024).fill(1);
    const handler: RequestHandler = {
      handle: (f) => {
        handledCount++;
        return { chunks: [f.subarray(0, 4), response] };
      },
    };
    const { port } = await start(handler, { maxQueuedResponseBytesPerConnection: 4 * 1024 * 1024 });
    const client = await connect(port);
    client.pause();
    const requestCount = 200;
    client.write(requests(requestCount));
    await sleep(300);
    // The kernel socket buffers take some responses; the server itself queues at most ~4 MiB.
    expect(handledCount).toBeLessThan(requestCount / 2);
    client.resume();
    const responses = await client.readFrames(requestCount);
    expect(responses.map(correlationId)).toEqual(Array.from({ length: requestCount }, (_, i) => i));
    expect(handledCount).toBe(requestCount);
  }, 20000);
});

/** A file of random bytes and a FileRange factory that counts releases. */
class SegmentFile {
  readonly dir = mkdtempSync(join(tmpdir(), "quill-network-"));
  readonly path = join(this.dir, "00000000000000000000.log");
  readonly fd: number;
  releaseCount = 0;

  constructor(readonly bytes: Uint8Array) {
    const fd = openSync(this.path, "w");
    const pieceBytes = 16 << 20;
    for (let o = 0; o < bytes.length; o += pieceBytes) {
      writeSync(fd, bytes.subarray(o, o + pieceBytes));
    }
    closeSync(fd);
    this.fd = openSync(this.path, "r");
  }

  range(position: number, sizeBytes: number): FileRange {
    let released = false;
    return {
      fd: this.fd,
      position,
      sizeBytes,
      release: () => {
        expect(released).toBe(false);
        released = true;
        this.releaseCount++;
      },
    };
  }

  close(): void {
    closeSync(this.fd);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

describe.each([true, false])("SocketServer file ranges (sendfile %p)", (sendfileEnabled) => {
  test("a 100+ MiB range to a paused client is byte-identical and released once", async () => {
    const file = new SegmentFile(randomBytes(110 * 1024 * 1024 + 12345));
    try {
      const position = 777;
      const sizeBytes = file.bytes.length - position - 1000;
      const handler: RequestHandler = {
        handle: (f) => ({ chunks: [f, file.range(position, sizeBytes), f.subarray(0, 4)] }),
      };
      const { server, port } = await start(handler, {}, sendfileEnabled);
      expect(server.sendfileEnabled).toBe(sendfileEnabled);
      const client = await connect(port);
      client.pause();
      client.write(frame(requestBody(9, 0)));
      await sleep(300);
      expect(file.releaseCount).toBe(0);
      client.resume();
      const [response] = await client.readFrames(1);
      expect(response!.length).toBe(8 + sizeBytes + 4);
      expect(correlationId(response!)).toBe(9);
      const data = response!.subarray(8, 8 + sizeBytes);
      expect(sha256(data)).toBe(sha256(file.bytes.subarray(position, position + sizeBytes)));
      expect(correlationId(response!.subarray(8 + sizeBytes))).toBe(9);
      expect(file.releaseCount).toBe(1);
    } finally {
      file.close();
    }
  }, 30000);

  test("many small ranges interleaved with buffers come back in order", async () => {
    const file = new SegmentFile(randomBytes(1024 * 1024));
    try {
      const handler: RequestHandler = {
        handle: async (f) => {
          const id = correlationId(f);
          await sleep(id % 7);
          const empty = file.range(0, 0);
          return { chunks: [f, file.range(id * 100, 100 + id), empty, f.subarray(0, 4)] };
        },
      };
      const { port } = await start(handler, {}, sendfileEnabled);
      const client = await connect(port);
      const ids = Array.from({ length: 500 }, (_, i) => i);
      client.write(Buffer.concat(ids.map((i) => frame(requestBody(i, 0)))));
      const responses = await client.readFrames(ids.length);
      for (const id of ids) {
        const range = file.bytes.subarray(id * 100, id * 100 + 100 + id);
        const body = requestBody(id, 0);
        const expected = Buffer.concat([body, range, body.subarray(0, 4)]);
        expect(responses[id]!.length).toBe(expected.length);
        expect(responses[id]).toEqual(expected);
      }
      expect(file.releaseCount).toBe(ids.length * 2);
    } finally {
      file.close();
    }
  });

  test("a range past the end of its file closes the connection instead of spinning", async () => {
    const file = new SegmentFile(randomBytes(64 * 1024));
    try {
      const handler: RequestHandler = {
        handle: (f) => ({ chunks: [f, file.range(60 * 1024, 8 * 1024)] }),
      };
      const { server, port, logger } = await start(handler, {}, sendfileEnabled);
      const client = await connect(port);
      client.write(frame(requestBody(1, 0)));
      await client.closedPromise;
      await waitFor(() => server.connectionCount === 0);
      expect(logger.lines.length).toBe(1);
      expect(logger.lines[0]).toContain("past the end");
      expect(file.releaseCount).toBe(1);
    } finally {
      file.close();
    }
  });

  // Ranges under 32 KiB are read into the gathered write (pread: EBADF); larger ones go by
  // sendfile when it is enabled (errno 9).
  test.each([10, 64 * 1024])(
    "a %p-byte range on a bad fd closes the connection with one log line",
    async (sizeBytes) => {
      let releaseCount = 0;
      const release = () => releaseCount++;
      const badRange: FileRange = { fd: 987654, position: 0, sizeBytes, release };
      const handler: RequestHandler = { handle: (f) => ({ chunks: [f, badRange] }) };
      const { server, port, logger } = await start(handler, {}, sendfileEnabled);
      const client = await connect(port);
      client.write(frame(requestBody(1, 0)));
      await client.closedPromise;
      await waitFor(() => server.connectionCount === 0);
      expect(logger.lines.length).toBe(1);
      const viaSendfile = sendfileEnabled && sizeBytes > 32 * 1024;
      expect(logger.lines[0]).toMatch(viaSendfile ? /errno 9/ : /EBADF/);
      expect(releaseCount).toBe(1);
    },
  );

  test("ranges of a connection that dies are released exactly once", async () => {
    const file = new SegmentFile(randomBytes(8 * 1024 * 1024));
    try {
      let late: ((r: Response) => void) | null = null;
      const handler: RequestHandler = {
        handle: (f) => {
          if (correlationId(f) === 1) return new Promise<Response>((resolve) => (late = resolve));
          return { chunks: [f, file.range(0, file.bytes.length)] };
        },
      };
      const { server, port, logger } = await start(handler, {}, sendfileEnabled);
      const client = await connect(port);
      client.pause();
      client.write(Buffer.concat([0, 1, 2].map((i) => frame(requestBody(i, 0)))));
      await waitFor(() => late !== null);
      client.close();
      await waitFor(() => server.connectionCount === 0);
      // A client going away is routine: no log line.
      expect(logger.lines).toEqual([]);
      // Response 0 was queued (partly sent) and response 2 waited behind response 1.
      expect(file.releaseCount).toBe(2);
      late!({ chunks: [file.range(0, 10)] });
      await sleep(10);
      expect(file.releaseCount).toBe(3);
    } finally {
      file.close();
    }
  });
});

describe("SocketServer bad input", () => {
  const badStreams: [string, Buffer][] = [
    ["a 2 GiB size prefix", Buffer.from([0x7f, 0xff, 0xff, 0xff, 1, 2, 3, 4])],
    ["a size just over socket.request.max.bytes", Buffer.from([0x00, 0x10, 0x00, 0x01])],
    ["a negative size", Buffer.from([0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 0])],
    ["a size below the request header", Buffer.from([0, 0, 0, 3, 1, 2, 3])],
    ["garbage", Buffer.from("GET / HTTP/1.1\r\nHost: quill\r\n\r\n")],
  ];
  for (const [name, bytes] of badStreams) {
    test(`${name} closes that connection with one log line; others keep working`, async () => {
      const { server, port, logger } = await start(echo, { socketRequestMaxBytes: 1024 * 1024 });
      const good = await connect(port);
      const bad = await connect(port);
      good.write(frame(requestBody(1, 0)));
      expect(await good.readFrames(1)).toEqual([requestBody(1, 0)]);
      bad.write(bytes);
      await bad.closedPromise;
      await waitFor(() => server.connectionCount === 1);
      expect(logger.lines.length).toBe(1);
      expect(logger.lines[0]).toContain("127.0.0.1:");
      expect(logger.lines[0]).toContain(`request size ${bytes.readInt32BE(0)}`);
      good.write(frame(requestBody(2, 0)));
      expect(await good.readFrames(1)).toEqual([requestBody(2, 0)]);
    });
  }

  test("a truncated frame then a disconnect leaves the server serving others", async () => {
    let handledCount = 0;
    const handler: RequestHandler = {
      handle: (f) => {
        handledCount++;
        return { chunks: [f] };
      },
    };
    const { server, port, logger } = await start(handler);
    const good = await connect(port);
    const bad = await connect(port);
    bad.write(frame(requestBody(1, 0, 1000)).subarray(0, 500));
    await sleep(20);
    bad.close();
    await waitFor(() => server.connectionCount === 1);
    expect(handledCount).toBe(0);
    expect(logger.lines).toEqual([]);
    good.write(frame(requestBody(2, 0)));
    expect(await good.readFrames(1)).toEqual([requestBody(2, 0)]);
  });

  test("a handler that throws closes that connection with one log line", async () => {
    const handler: RequestHandler = {
      handle: (f) => {
        const id = correlationId(f);
        if (id === 13) throw new Error("unparseable request");
        if (id === 14) return Promise.reject(new Error("async failure"));
        return { chunks: [f] };
      },
    };
    const { port, logger } = await start(handler);
    for (const badId of [13, 14]) {
      const client = await connect(port);
      client.write(Buffer.concat([frame(requestBody(badId, 0)), frame(requestBody(2, 0))]));
      await client.closedPromise;
      expect(logger.lines.length).toBe(1);
      expect(logger.lines.pop()).toContain(badId === 13 ? "unparseable request" : "async failure");
    }
  });
});

describe("SocketServer limits and lifecycle", () => {
  test("the in-flight limit pauses reading while a client floods", async () => {
    const limit = 10;
    let handledCount = 0;
    let maxInFlight = 0;
    const waiting: (() => void)[] = [];
    const handler: RequestHandler = {
      handle: (f) => {
        handledCount++;
        maxInFlight = Math.max(maxInFlight, waiting.length + 1);
        return new Promise<Response>((resolve) => waiting.push(() => resolve({ chunks: [f] })));
      },
    };
    const { port } = await start(handler, { maxInFlightRequestsPerConnection: limit });
    const client = await connect(port);
    const requestCount = 1000;
    client.write(requests(requestCount));
    await sleep(100);
    expect(handledCount).toBe(limit);
    const responses: Buffer[] = [];
    while (responses.length < requestCount) {
      await waitFor(() => waiting.length > 0);
      const released = waiting.splice(0);
      for (const release of released) release();
      responses.push(...(await client.readFrames(released.length)));
    }
    expect(maxInFlight).toBe(limit);
    expect(handledCount).toBe(requestCount);
    expect(responses.map(correlationId)).toEqual(Array.from({ length: requestCount }, (_, i) => i));
  });

  test("drainAndClose writes an in-flight slow response before closing", async () => {
    let handledCount = 0;
    const handler: RequestHandler = {
      handle: async (f) => {
        handledCount++;
        await sleep(200);
        return { chunks: [f] };
      },
    };
    const { server, port } = await start(handler);
    const client = await connect(port);
    client.write(frame(requestBody(5, 0)));
    await waitFor(() => handledCount === 1);
    const started = Date.now();
    await server.drainAndClose(5000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    expect(server.connectionCount).toBe(0);
    expect(await client.readFrames(1)).toEqual([requestBody(5, 0)]);
    await client.closedPromise;
    await expect(FrameClient.connect(port)).rejects.toThrow();
  });

  test("drainAndClose gives up on a handler that never finishes after the timeout", async () => {
    const handler: RequestHandler = { handle: () => new Promise<Response>(() => {}) };
    const { server, port, logger } = await start(handler);
    const client = await connect(port);
    client.write(frame(requestBody(5, 0)));
    await sleep(20);
    await server.drainAndClose(100);
    await client.closedPromise;
    expect(logger.lines.length).toBe(1);
    expect(logger.lines[0]).toContain("still busy");
  });

  test("a parked request learns its connection closed; per-connection state is kept", async () => {
    const seen: ConnectionContext[] = [];
    let closedCount = 0;
    const handler: RequestHandler = {
      handle: (f, conn) => {
        conn.state.set("requests", ((conn.state.get("requests") as number) ?? 0) + 1);
        seen.push(conn);
        if (correlationId(f) === 0) return { chunks: [f] };
        return new Promise<Response>((resolve) => {
          conn.onClose(() => {
            closedCount++;
            resolve(null);
          });
        });
      },
    };
    const { server, port } = await start(handler);
    const client = await connect(port);
    client.write(Buffer.concat([frame(requestBody(0, 0)), frame(requestBody(1, 0))]));
    await client.readFrames(1);
    await waitFor(() => seen.length === 2);
    expect(seen[0]).toBe(seen[1]!);
    expect(seen[0]!.state.get("requests")).toBe(2);
    expect(seen[0]!.remoteAddress).toBe("127.0.0.1");
    expect(seen[0]!.closed).toBe(false);
    client.close();
    await waitFor(() => server.connectionCount === 0);
    expect(closedCount).toBe(1);
    expect(seen[0]!.closed).toBe(true);
  });

  test("connections over max.connections are refused", async () => {
    const { server, port, logger } = await start(echo, { maxConnections: 2 });
    const a = await connect(port);
    await connect(port);
    const refused = await connect(port);
    await refused.closedPromise;
    expect(server.connectionCount).toBe(2);
    expect(logger.lines.length).toBe(1);
    expect(logger.lines[0]).toContain("max.connections 2");
    a.write(frame(requestBody(1, 0)));
    expect(await a.readFrames(1)).toEqual([requestBody(1, 0)]);
  });

  test("connections idle for connections.max.idle.ms are closed, busy ones are not", async () => {
    const handler: RequestHandler = { handle: () => new Promise<Response>(() => {}) };
    const { server, port } = await start(handler, { connectionsMaxIdleMs: 100 });
    const idle = await connect(port);
    const busy = await connect(port);
    busy.write(frame(requestBody(1, 0)));
    await idle.closedPromise;
    await sleep(150);
    expect(busy.closed).toBe(false);
    expect(server.connectionCount).toBe(1);
  });
});

describe("SocketServer memory", () => {
  test("an idle connection holds no closures or maps of its own", async () => {
    // 5,000 idle connections is a scale workload: per connection, Quill keeps its Connection,
    // decoder and writer, and nothing made per connection that could be shared or made later.
    const handler: RequestHandler = { handle: (f) => ({ chunks: [f] }), responseSent() {} };
    const { server, port } = await start(handler);
    const count = 200;
    const answered = { count: 0 };
    const socketHandlers = { data: () => void answered.count++ };
    const counts = () => {
      Bun.gc(true);
      const types = heapStats().objectTypeCounts;
      return { functions: types.Function ?? 0, maps: types.Map ?? 0 };
    };
    const sockets: Socket[] = [];
    const open = async (n: number) => {
      const target = sockets.length + n;
      while (sockets.length < target) {
        const socket = await Bun.connect({ hostname: "127.0.0.1", port, socket: socketHandlers });
        socket.write(frame(requestBody(sockets.length, 0, 8)));
        sockets.push(socket);
      }
      await waitFor(() => answered.count === target && server.connectionCount === target);
    };
    await open(10); // the first connections make what every later one shares
    const before = counts();
    await open(count);
    const after = counts();
    for (const socket of sockets) socket.end();
    // Before: three closures and a Map per connection (600 and 200 here).
    expect(after.functions - before.functions).toBeLessThan(count / 4);
    expect(after.maps - before.maps).toBeLessThan(count / 4);
  });
});
