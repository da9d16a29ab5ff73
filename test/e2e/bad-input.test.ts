// Bad input on raw sockets against a broker running as a child process: garbage, absurd and
// negative length prefixes, a truncated frame, an unknown API key, an unsupported version. Each
// bad connection is closed with at most one log line, the process keeps running, and the next
// client (a raw ApiVersions on a new socket, and kcat) is answered normally.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import net from "node:net";
import { ChildBroker } from "../support/child-broker.ts";
import { kcatOk, stdoutText } from "./kcat-process.ts";

const API_VERSIONS = 18;
const METADATA = 3;
const UNSUPPORTED_VERSION = 35;
const CLOSE_TIMEOUT_MS = 5_000;

let broker: ChildBroker;

beforeAll(async () => {
  broker = await ChildBroker.start();
}, 60_000);
afterAll(async () => {
  expect(await broker.terminate()).toBe(0);
  await broker.remove();
});

/** A raw TCP client that collects every byte the broker sends and notices when it closes. */
class RawClient {
  private received: Buffer[] = [];
  readonly closed: Promise<void>;
  private wakeReader: () => void = () => {};

  private constructor(private readonly socket: net.Socket) {
    socket.on("data", (data: Buffer) => {
      this.received.push(data);
      this.wakeReader();
    });
    socket.on("error", () => {});
    this.closed = new Promise((resolve) =>
      socket.on("close", () => {
        this.wakeReader();
        resolve();
      }),
    );
  }

  static connect(port: number): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: "127.0.0.1", port }, () => resolve(new RawClient(socket)));
      socket.once("error", reject);
    });
  }

  write(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** Resolves true if the broker closes the connection within the deadline. */
  async closedByBroker(): Promise<boolean> {
    const timeout = Bun.sleep(CLOSE_TIMEOUT_MS).then(() => false);
    return await Promise.race([this.closed.then(() => true), timeout]);
  }

  /** Reads one size-prefixed response frame (without the prefix). */
  async readFrame(): Promise<Buffer> {
    const deadline = Date.now() + CLOSE_TIMEOUT_MS;
    for (;;) {
      const all = Buffer.concat(this.received);
      if (all.length >= 4 && all.length >= 4 + all.readInt32BE(0)) {
        const size = all.readInt32BE(0);
        this.received = [all.subarray(4 + size)];
        return all.subarray(4, 4 + size);
      }
      if (Date.now() > deadline) {
        throw new Error(`no complete response frame; have ${all.length} bytes`);
      }
      const woken = new Promise<void>((resolve) => (this.wakeReader = resolve));
      await Promise.race([woken, Bun.sleep(50)]);
    }
  }
}

/** A request header v1 (v2 adds an empty tagged-field section) and body, with its size prefix. */
function requestFrame(
  apiKey: number,
  apiVersion: number,
  correlationId: number,
  flexible: boolean,
  body: Uint8Array = new Uint8Array(0),
): Buffer {
  const clientId = Buffer.from("bad-input-test");
  const header = Buffer.alloc(10 + clientId.length + (flexible ? 1 : 0));
  header.writeInt16BE(apiKey, 0);
  header.writeInt16BE(apiVersion, 2);
  header.writeInt32BE(correlationId, 4);
  header.writeInt16BE(clientId.length, 8);
  clientId.copy(header, 10);
  const payload = Buffer.concat([header, body]);
  const size = Buffer.alloc(4);
  size.writeInt32BE(payload.length, 0);
  return Buffer.concat([size, payload]);
}

interface ApiVersionsV0 {
  correlationId: number;
  errorCode: number;
  apiKeys: Map<number, [number, number]>;
}

/** ApiVersions response v0: correlation id, error code, [api_key min max]; nothing else. */
function parseApiVersionsV0(frame: Buffer): ApiVersionsV0 {
  const count = frame.readInt32BE(6);
  const apiKeys = new Map<number, [number, number]>();
  for (let i = 0; i < count; i++) {
    const at = 10 + i * 6;
    apiKeys.set(frame.readInt16BE(at), [frame.readInt16BE(at + 2), frame.readInt16BE(at + 4)]);
  }
  expect(frame.length).toBe(10 + count * 6);
  return { correlationId: frame.readInt32BE(0), errorCode: frame.readInt16BE(4), apiKeys };
}

/** A good client on a new socket: ApiVersions v0 is answered with no error. */
async function expectHealthyApiVersions(): Promise<void> {
  const client = await RawClient.connect(broker.port);
  client.write(requestFrame(API_VERSIONS, 0, 4242, false));
  const response = parseApiVersionsV0(await client.readFrame());
  client.destroy();
  expect(response.correlationId).toBe(4242);
  expect(response.errorCode).toBe(0);
  expect(response.apiKeys.get(API_VERSIONS)?.[0]).toBe(0);
}

const CLOSE_LINE = /closing connection/i;
const closeLines = () => broker.stderrText.split("\n").filter((line) => CLOSE_LINE.test(line));

/** Sends `bytes` on a new socket, expects the broker to close it with exactly one new log line. */
async function expectClosedWithOneLine(bytes: Uint8Array, reason: RegExp): Promise<void> {
  const before = closeLines().length;
  const client = await RawClient.connect(broker.port);
  client.write(bytes);
  expect(await client.closedByBroker()).toBe(true);
  const deadline = Date.now() + CLOSE_TIMEOUT_MS;
  while (closeLines().length === before && Date.now() < deadline) await Bun.sleep(10);
  await Bun.sleep(50); // A second line for the same connection would show up by now.
  const added = closeLines().slice(before);
  expect(added.length).toBe(1);
  expect(added[0]).toMatch(reason);
  expect(broker.running).toBe(true);
  await expectHealthyApiVersions();
}

const sizePrefix = (size: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(size >>> 0, 0);
  return b;
};

describe("bad input on a raw socket", () => {
  test("garbage (an HTTP request) reads as a size above the limit: closed, one line", async () => {
    await expectClosedWithOneLine(Buffer.from("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), /1195725856/);
  }, 20_000);

  test("random bytes behind a small plausible size: an unreadable header, closed", async () => {
    const junk = Buffer.alloc(20, 0xff);
    await expectClosedWithOneLine(Buffer.concat([sizePrefix(20), junk]), /API key -1/);
  }, 20_000);

  test("a 2 GiB length prefix is refused without allocating it", async () => {
    const bytes = Buffer.concat([sizePrefix(0x7fffffff), Buffer.alloc(64)]);
    await expectClosedWithOneLine(bytes, /2147483647/);
  }, 20_000);

  test("one byte over socket.request.max.bytes (100 MiB) is refused", async () => {
    await expectClosedWithOneLine(sizePrefix(100 * 1024 * 1024 + 1), /104857601/);
  }, 20_000);

  test("a negative length prefix is refused", async () => {
    const bytes = Buffer.concat([sizePrefix(-1), Buffer.alloc(16)]);
    await expectClosedWithOneLine(bytes, /request size -1 /);
  }, 20_000);

  test("an unknown API key closes the connection", async () => {
    await expectClosedWithOneLine(requestFrame(9999, 0, 1, false), /9999/);
  }, 20_000);

  test("an unsupported version of a known API (Metadata v99) closes the connection", async () => {
    await expectClosedWithOneLine(requestFrame(METADATA, 99, 1, true), /version 99/);
  }, 20_000);

  test("a truncated frame, then a disconnect: at most one line, nothing else breaks", async () => {
    const before = closeLines().length;
    const client = await RawClient.connect(broker.port);
    const partial = requestFrame(API_VERSIONS, 0, 7, false).subarray(4);
    client.write(Buffer.concat([sizePrefix(100), partial]));
    await Bun.sleep(100);
    client.destroy();
    await Bun.sleep(100);
    expect(closeLines().length).toBeLessThanOrEqual(before + 1);
    expect(broker.running).toBe(true);
    await expectHealthyApiVersions();
  }, 20_000);

  test("ApiVersions v99 is answered in v0 with UNSUPPORTED_VERSION and the API list", async () => {
    const client = await RawClient.connect(broker.port);
    // A flexible v3+ body: client software name and version (compact strings), no tags.
    const body = Buffer.from([5, ...Buffer.from("test"), 2, 0x31, 0]);
    client.write(requestFrame(API_VERSIONS, 99, 77, true, body));
    const response = parseApiVersionsV0(await client.readFrame());
    expect(response.correlationId).toBe(77);
    expect(response.errorCode).toBe(UNSUPPORTED_VERSION);
    for (const key of [0, 1, 2, 3, 18]) expect(response.apiKeys.has(key)).toBe(true);
    expect(response.apiKeys.get(API_VERSIONS)).toEqual([0, 5]);
    // The connection stays usable: the client retries with a version the broker listed.
    client.write(requestFrame(API_VERSIONS, 0, 78, false));
    const retried = parseApiVersionsV0(await client.readFrame());
    expect(retried.correlationId).toBe(78);
    expect(retried.errorCode).toBe(0);
    client.destroy();
  }, 20_000);

  test("after all of that, kcat still lists metadata and round-trips a record", async () => {
    expect(broker.running).toBe(true);
    await kcatOk(broker.bootstrap, ["-P", "-t", "after-bad-input"], { stdin: "still here\n" });
    const back = await kcatOk(broker.bootstrap, [
      "-C",
      "-e",
      "-q",
      "-t",
      "after-bad-input",
      "-f",
      "%s\n",
    ]);
    expect(stdoutText(back)).toBe("still here\n");
    expect(stdoutText(await kcatOk(broker.bootstrap, ["-L"]))).toContain("(controller)");
  }, 30_000);
});
