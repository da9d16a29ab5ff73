import { afterEach, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { Connection, type ConnectionSocket } from "../../src/network/connection.ts";
import { resolveNetworkLimits } from "../../src/network/network-limits.ts";
import type { RequestHandler } from "../../src/network/request-handler.ts";
import {
  defaultLimitBytes,
  minimumLimitBytes,
  RequestMemoryPool,
} from "../../src/network/request-memory-pool.ts";
import { SocketServer } from "../../src/network/socket-server.ts";
import { waitUntil } from "../support/wait-until.ts";
import { FrameClient, frame, RecordingLogger, requestBody, sleep } from "./frame-client.ts";

const MiB = 1024 * 1024;
const servers: SocketServer[] = [];
const clients: FrameClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const server of servers.splice(0)) await server.drainAndClose(100);
});

/** Answers each request, after `delayMs`, with its correlation id and the SHA-256 of the frame. */
function hashingHandler(delayMs: number): RequestHandler {
  return {
    handle: async (f) => {
      await sleep(delayMs);
      const out = new Uint8Array(4 + 32);
      out.set(f.subarray(0, 4), 0);
      out.set(createHash("sha256").update(f).digest(), 4);
      return { chunks: [out] };
    },
  };
}

async function startServer(limits: { socketRequestMaxBytes: number; queued: number }) {
  const server = new SocketServer({
    host: "127.0.0.1",
    port: 0,
    handler: hashingHandler(30),
    limits: {
      socketRequestMaxBytes: limits.socketRequestMaxBytes,
      queuedMaxRequestBytes: limits.queued,
    },
    logger: new RecordingLogger(),
  });
  servers.push(server);
  const { port } = await server.start();
  return { server, port, pool: server.memoryPool! };
}

async function connect(port: number): Promise<FrameClient> {
  const client = await FrameClient.connect(port);
  clients.push(client);
  return client;
}

/** Writes `bytes` in `pieceBytes` pieces, `pauseMs` apart: a slow client. */
async function writeSlowly(client: FrameClient, bytes: Uint8Array, pieceBytes: number) {
  for (let at = 0; at < bytes.length; at += pieceBytes) {
    client.write(bytes.subarray(at, at + pieceBytes));
    await sleep(10);
  }
}

const digest = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

describe("queued.max.request.bytes (RequestMemoryPool)", () => {
  test("slow large frames from 20 clients stay within the limit, all answered, small client served", async () => {
    const frameMaxBytes = 4 * MiB;
    const limitBytes = minimumLimitBytes(frameMaxBytes) + 4 * MiB;
    const { port, pool } = await startServer({
      socketRequestMaxBytes: frameMaxBytes,
      queued: limitBytes,
    });
    let overLimitSamples = 0;
    let waitingSeen = 0;
    const sampler = setInterval(() => {
      if (pool.usedBytes > limitBytes) overLimitSamples++;
      waitingSeen = Math.max(waitingSeen, pool.waitingCount);
    }, 2);
    const bigClients = await Promise.all(Array.from({ length: 20 }, () => connect(port)));
    const bodies = bigClients.map((_, i) => {
      const body = Buffer.concat([requestBody(i, 1), randomBytes(frameMaxBytes - 8 - 4096 * i)]);
      return body;
    });
    const big = bigClients.map(async (client, i) => {
      await writeSlowly(client, frame(bodies[i]!), 256 * 1024);
      const [response] = await client.readFrames(1);
      return response!;
    });
    // A small client keeps asking while the large frames queue: each answer must come back.
    const small = await connect(port);
    let smallAnswered = 0;
    let bigDone = 0;
    for (const p of big) void p.then(() => bigDone++);
    let smallWhileBigPending = 0;
    for (let i = 0; i < 20; i++) {
      const body = requestBody(1000 + i, 2, 100);
      small.write(frame(body));
      const [answer] = await small.readFrames(1);
      expect(answer!.readInt32BE(0)).toBe(1000 + i);
      expect(answer!.subarray(4).toString("hex")).toBe(digest(body));
      smallAnswered++;
      if (bigDone < big.length) smallWhileBigPending++;
      await sleep(20);
    }
    const responses = await Promise.all(big);
    clearInterval(sampler);
    responses.forEach((response, i) => {
      expect(response.readInt32BE(0)).toBe(i);
      expect(response.subarray(4).toString("hex")).toBe(digest(bodies[i]!));
    });
    expect(smallAnswered).toBe(20);
    expect(smallWhileBigPending).toBeGreaterThan(0);
    // The limit was reached (frames waited for memory) and never passed.
    expect(waitingSeen).toBeGreaterThan(0);
    expect(overLimitSamples).toBe(0);
    expect(pool.peakUsedBytes).toBeLessThanOrEqual(limitBytes);
    expect(pool.peakUsedBytes).toBeGreaterThan(limitBytes / 2);
    // Every byte is given back once the requests are answered.
    await waitUntil(() => pool.usedBytes === 0, 5000, "pool back to 0");
  }, 60_000);

  test("pipelined frames that each arrive in one read stop reading at the limit, none lost", async () => {
    const frameMaxBytes = MiB;
    const limitBytes = 16 * MiB;
    const { port, pool } = await startServer({
      socketRequestMaxBytes: frameMaxBytes,
      queued: limitBytes,
    });
    let overLimitSamples = 0;
    const sampler = setInterval(() => {
      if (pool.usedBytes > limitBytes) overLimitSamples++;
    }, 1);
    const perClient = 100;
    const all = await Promise.all(
      Array.from({ length: 40 }, async (_, c) => {
        const client = await connect(port);
        const bodies = Array.from({ length: perClient }, (_, i) =>
          Buffer.concat([requestBody(c * 1000 + i, 3), randomBytes(8 * 1024)]),
        );
        client.write(Buffer.concat(bodies.map((b) => frame(b))));
        const answers = await client.readFrames(perClient);
        return answers.map((a, i) => [a, bodies[i]!] as const);
      }),
    );
    clearInterval(sampler);
    for (const [answer, body] of all.flat()) {
      expect(answer.readInt32BE(0)).toBe(body.readInt32BE(0));
      expect(answer.subarray(4).toString("hex")).toBe(digest(body));
    }
    expect(overLimitSamples).toBe(0);
    expect(pool.peakUsedBytes).toBeLessThanOrEqual(limitBytes);
    expect(pool.peakUsedBytes).toBeGreaterThan(limitBytes / 2);
    await waitUntil(() => pool.usedBytes === 0, 5000, "pool back to 0");
  }, 60_000);

  test("when the pool fills, every connection without a reservation stops reading at once", async () => {
    const limits = resolveNetworkLimits({
      socketRequestMaxBytes: MiB,
      queuedMaxRequestBytes: 16 * MiB,
    });
    const pool = new RequestMemoryPool({ limitBytes: 16 * MiB, frameMaxBytes: MiB });
    const paused = new Set<number>();
    const answers: (() => void)[] = [];
    const never: RequestHandler = {
      handle: () => new Promise((resolve) => answers.push(() => resolve(null))),
    };
    const connections = Array.from({ length: 40 }, (_, id) => {
      const socket: ConnectionSocket = {
        fd: -1,
        write: () => 0,
        pause: () => paused.add(id),
        resume: () => paused.delete(id),
        end: () => {},
      };
      const peer = { id, remoteAddress: "127.0.0.1", remotePort: id };
      return new Connection(socket, peer, {
        listenerName: "PLAINTEXT",
        securityProtocol: "PLAINTEXT",
        handler: never,
        limits,
        logger: new RecordingLogger(),
        sendfileEnabled: false,
        memoryPool: pool,
      });
    });
    // One read of 512 KiB of whole 8 KiB frames per connection, while reading is allowed.
    const read = Buffer.concat(
      Array.from({ length: 64 }, (_, i) => frame(requestBody(i, 0, 8180))),
    );
    let reads = 0;
    for (const [id, connection] of connections.entries()) {
      if (paused.has(id)) continue;
      connection.onData(read);
      reads++;
      expect(pool.usedBytes).toBeLessThanOrEqual(pool.limitBytes);
    }
    expect(pool.readingOpen).toBe(false);
    expect(paused.size).toBe(40);
    expect(reads).toBe(Math.floor((16 * MiB - pool.readChunkMaxBytes) / read.length) + 1);
    // Closed connections give back their unread bytes; frames go back when their handlers end.
    for (const connection of connections) connection.onClosed();
    expect(pool.usedBytes).toBe(answers.length * (8 + 8180));
    for (const answer of answers) answer();
    await sleep(0);
    expect(pool.usedBytes).toBe(0);
  });

  test("a client that closes in the middle of a frame gives its memory back", async () => {
    const frameMaxBytes = 4 * MiB;
    const { port, pool } = await startServer({
      socketRequestMaxBytes: frameMaxBytes,
      queued: minimumLimitBytes(frameMaxBytes),
    });
    const client = await connect(port);
    const bytes = frame(Buffer.concat([requestBody(1, 1), randomBytes(3 * MiB)]));
    client.write(bytes.subarray(0, 2 * MiB));
    await waitUntil(() => pool.usedBytes >= 3 * MiB, 5000, "frame reserved");
    client.close();
    await waitUntil(() => pool.usedBytes === 0, 5000, "pool back to 0");
    expect(pool.waitingCount).toBe(0);
  });

  test("the default is 1/16 of memory between 256 MiB and 1 GiB, and fits the largest frame", () => {
    expect(defaultLimitBytes(24 * 1024 * MiB, 100 * MiB)).toBe(1024 * MiB);
    expect(defaultLimitBytes(8 * 1024 * MiB, 100 * MiB)).toBe(512 * MiB);
    expect(defaultLimitBytes(1024 * MiB, 100 * MiB)).toBe(256 * MiB);
    expect(defaultLimitBytes(1024 * MiB, 1000 * MiB)).toBe(minimumLimitBytes(1000 * MiB));
    const limits = resolveNetworkLimits({});
    expect(limits.queuedMaxRequestBytes).toBeGreaterThanOrEqual(256 * MiB);
    expect(resolveNetworkLimits({ queuedMaxRequestBytes: -1 }).queuedMaxRequestBytes).toBe(-1);
    expect(() => resolveNetworkLimits({ queuedMaxRequestBytes: 50 * MiB })).toThrow(
      /queued.max.request.bytes/,
    );
  });

  test("reservations are granted oldest first and leave room for small requests", () => {
    const pool = new RequestMemoryPool({ limitBytes: 64 * MiB, frameMaxBytes: 8 * MiB });
    const calls: string[] = [];
    const member = (name: string) => ({
      onReadingChanged: () => {},
      onMemoryAvailable: () => calls.push(name),
    });
    const a = member("a");
    const b = member("b");
    const room = 64 * MiB - pool.smallRequestReserveBytes;
    expect(pool.tryReserve(a, room)).toBe(true);
    expect(pool.readingOpen).toBe(true);
    expect(pool.tryReserve(b, MiB)).toBe(false);
    pool.addLoose(pool.limitBytes - pool.usedBytes - pool.readChunkMaxBytes + 1);
    expect(pool.readingOpen).toBe(false);
    pool.addLoose(-(pool.usedBytes - room));
    pool.release(room);
    expect(pool.readingOpen).toBe(true);
    return Promise.resolve().then(() => expect(calls).toEqual(["b"]));
  });
});
