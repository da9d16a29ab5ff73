/**
 * ZooKeeperClient when ZooKeeper goes away: killed and restarted, unreachable behind a proxy
 * that drops every byte, or gone long enough for the session to expire. Nothing may hang, and
 * the client must come back by itself.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type SessionEvent, ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { ZooKeeperUnavailableError } from "../../src/zookeeper/zookeeper-errors.ts";
import { waitUntil } from "../support/wait-until.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import { TcpProxy } from "./tcp-proxy.ts";

/** The test server's minimum session timeout is 400 ms; 1 s keeps expiry tests short. */
const OPTIONS = { sessionTimeoutMs: 1_000, connectTimeoutMs: 5_000, requestTimeoutMs: 800 };
/** A session that survives the event loop's lags at load 30 while the test waits on it. */
const LOADED_SESSION_TIMEOUT_MS = 6_000;
const text = (s: string) => new TextEncoder().encode(s);

let server: ZooKeeperServer;
const cleanups: (() => Promise<void>)[] = [];

async function connect(
  connectString: string,
  options = OPTIONS,
): Promise<{ client: ZooKeeperClient; events: SessionEvent[] }> {
  const client = await ZooKeeperClient.connect(connectString, options);
  const events: SessionEvent[] = [];
  client.onSessionEvent((event) => events.push(event));
  cleanups.push(() => client.close());
  return { client, events };
}

const until = (condition: () => boolean | Promise<boolean>, timeoutMs: number) =>
  waitUntil(condition, timeoutMs, "condition", 20);

/** What a call settled with: its value or its error (a call that hangs fails the test). */
async function settled<T>(promise: Promise<T>): Promise<{ result: T | unknown }> {
  return { result: await promise.catch((error: unknown) => error) };
}

beforeAll(async () => {
  server = await startZooKeeper();
}, 30_000);

afterAll(async () => {
  for (const cleanup of cleanups) await cleanup();
  await server.stop();
});

describe("ZooKeeper killed and restarted", () => {
  test("calls reject within their deadline, then succeed after restart in the same session", async () => {
    // A session that outlives a restart on a loaded machine (the restarted server gives it a
    // full timeout, and the client must reconnect within it).
    const { client, events } = await connect(server.connectString, {
      ...OPTIONS,
      sessionTimeoutMs: LOADED_SESSION_TIMEOUT_MS,
    });
    await client.create("/survivor", text("x"), { mode: "ephemeral" });
    const sessionId = client.sessionId;
    await server.kill();
    const { result } = await settled(client.setData("/survivor", text("y")));
    expect(result).toBeInstanceOf(ZooKeeperUnavailableError);
    expect(events).toContain("disconnected");
    const many = await Promise.all(Array.from({ length: 20 }, () => settled(client.exists("/"))));
    for (const call of many) expect(call.result).toBeInstanceOf(ZooKeeperUnavailableError);
    await server.restart();
    await until(() => client.isConnected, 15_000);
    await client.setData("/survivor", text("back"));
    expect(client.sessionId).toBe(sessionId);
    expect(events.at(-1)).toBe("connected");
    expect(events).not.toContain("expired");
  }, 45_000);
});

describe("network that drops every byte", () => {
  test("calls time out, and the dead link is dropped and replaced before the session expires", async () => {
    const proxy = await TcpProxy.start(server.port);
    cleanups.push(() => proxy.close());
    // The probe must notice within half the session timeout, well before the server expires it.
    const { client, events } = await connect(proxy.connectString, {
      ...OPTIONS,
      sessionTimeoutMs: LOADED_SESSION_TIMEOUT_MS,
    });
    await client.create("/blackhole", text("x"));
    const sessionId = client.sessionId;
    proxy.setMode("blackhole");
    const { result } = await settled(client.getData("/blackhole"));
    expect(result).toBeInstanceOf(ZooKeeperUnavailableError);
    // Failed by its own deadline (requestTimeoutMs), not by the dead link's later detection:
    // both are timers, which fire in deadline order however late the event loop is.
    expect((result as Error).message).toContain("no reply from ZooKeeper before the deadline");
    // Dropped in time is what the unchanged session below shows (no "expired").
    await until(() => events.includes("disconnected"), 15_000);
    proxy.setMode("forward");
    await until(() => client.isConnected, 15_000);
    expect((await client.getData("/blackhole")).data).toEqual(text("x"));
    expect(client.sessionId).toBe(sessionId);
    expect(events).not.toContain("expired");
  }, 45_000);
});

describe("connection lost under a read", () => {
  test("the read is sent again once connected and answers within its deadline", async () => {
    const proxy = await TcpProxy.start(server.port);
    cleanups.push(() => proxy.close());
    const { client, events } = await connect(proxy.connectString, {
      ...OPTIONS,
      sessionTimeoutMs: LOADED_SESSION_TIMEOUT_MS,
    });
    await client.create("/lost-read", text("x"));
    proxy.setMode("blackhole");
    // In flight when the probe drops the dead link: the library fails it with connection loss.
    const read = settled(client.getData("/lost-read", { timeoutMs: 30_000 }));
    await until(() => events.includes("disconnected"), 15_000);
    proxy.setMode("forward");
    const { result } = await read;
    expect((result as { data: Uint8Array }).data).toEqual(text("x"));
  }, 45_000);
});

describe("session expiry", () => {
  test("a new session is made and announced; ephemerals of the old one are gone", async () => {
    const proxy = await TcpProxy.start(server.port);
    cleanups.push(() => proxy.close());
    const { client, events } = await connect(proxy.connectString);
    const { client: observer } = await connect(server.connectString);
    const register = () =>
      client.create("/member", text(String(client.sessionId)), { mode: "ephemeral" });
    await register();
    const oldSessionId = client.sessionId;
    let reregistered: Promise<string> | null = null;
    client.onSessionEvent((event) => {
      if (event === "session-recreated") reregistered = register();
    });
    proxy.setMode("refuse");
    await until(async () => (await observer.exists("/member")) === null, 15_000);
    await expect(client.exists("/")).rejects.toBeInstanceOf(ZooKeeperUnavailableError);
    proxy.setMode("forward");
    await until(() => events.includes("session-recreated"), 15_000);
    expect(events.slice(events.indexOf("expired"))).toEqual([
      "expired",
      "connected",
      "session-recreated",
    ]);
    expect(client.sessionId).not.toBe(oldSessionId);
    expect(reregistered).not.toBeNull();
    await reregistered;
    const { data, stat } = await observer.getData("/member");
    expect(new TextDecoder().decode(data)).toBe(String(client.sessionId));
    expect(stat.ephemeralOwner).toBe(client.sessionId);
  }, 45_000);
});
