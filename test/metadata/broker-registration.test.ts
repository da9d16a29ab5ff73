/**
 * BrokerRegistration against a real ZooKeeper: the ephemeral `/brokers/ids/<id>` znode, refusal
 * when a live broker holds the id, waiting out a crashed predecessor's session, and
 * registering again after this broker's own session expired.
 */

import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type Server } from "node:net";
import {
  BrokerIdConflictError,
  BrokerRegistration,
  type BrokerRegistrationOptions,
} from "../../src/metadata/broker-registration.ts";
import { encodeBrokerRegistration } from "../../src/metadata/kafka-znodes.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { LineLogger } from "../support/line-logger.ts";
import { waitUntil } from "../support/wait-until.ts";
import { freePorts, startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import { TcpProxy } from "../zookeeper/tcp-proxy.ts";

const CLIENT_OPTIONS = { sessionTimeoutMs: 2_000, connectTimeoutMs: 5_000 };
const text = (b: Uint8Array) => new TextDecoder().decode(b);

let server: ZooKeeperServer;
let chrootCount = 0;
const cleanups: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  server = await startZooKeeper();
}, 60_000);

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  await server.stop();
});

function freshChroot(): string {
  chrootCount++;
  return `/registration-test-${chrootCount}`;
}

async function client(connectString: string): Promise<ZooKeeperClient> {
  const zk = await ZooKeeperClient.connect(connectString, CLIENT_OPTIONS);
  cleanups.push(() => zk.close());
  return zk;
}

/** A TCP listener standing in for a live broker's Kafka port. */
async function listener(): Promise<{ server: Server; port: number }> {
  const tcp = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => tcp.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise<void>((resolve) => tcp.close(() => resolve())));
  const address = tcp.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return { server: tcp, port: address.port };
}

function options(port: number, lines: string[], extra: Partial<BrokerRegistrationOptions> = {}) {
  const log = new LineLogger(lines);
  return { brokerId: 1, host: "127.0.0.1", port, rack: null, expiryWaitMs: 10_000, log, ...extra };
}

/** Registers `/brokers/ids/1` from another session, as a broker at `port` would. */
async function holder(connectString: string, port: number): Promise<ZooKeeperClient> {
  const zk = await client(connectString);
  await zk.mkdirp("/brokers/ids");
  const info = { brokerId: 1, host: "127.0.0.1", port, rack: null, timestampMs: 1 };
  const data = encodeBrokerRegistration(info);
  await zk.create("/brokers/ids/1", data, { mode: "ephemeral" });
  return zk;
}

async function register(zk: ZooKeeperClient, opts: BrokerRegistrationOptions) {
  const registration = await BrokerRegistration.register(zk, opts);
  cleanups.push(() => registration.deregister());
  return registration;
}

const until = (condition: () => boolean | Promise<boolean>, timeoutMs = 5_000) =>
  waitUntil(condition, timeoutMs, "condition", 20);

describe("registering", () => {
  test("an ephemeral znode of the session, in Kafka's JSON; deregister removes it", async () => {
    const connectString = `${server.connectString}${freshChroot()}`;
    const zk = await client(connectString);
    await zk.mkdirp("/brokers/ids");
    const lines: string[] = [];
    const registration = await register(zk, options(9092, lines, { rack: "r1" }));
    const { data, stat } = await zk.getData("/brokers/ids/1");
    expect(stat.ephemeralOwner).toBe(zk.sessionId);
    const json = JSON.parse(text(data));
    expect(json).toMatchObject({
      version: 5,
      host: "127.0.0.1",
      port: 9092,
      rack: "r1",
      jmx_port: -1,
      endpoints: ["PLAINTEXT://127.0.0.1:9092"],
    });
    expect(Math.abs(Number(json.timestamp) - Date.now())).toBeLessThan(60_000);
    await registration.deregister();
    expect(await zk.exists("/brokers/ids/1")).toBeNull();
  }, 20_000);

  test("an id held by a live broker elsewhere is refused at once, naming it", async () => {
    const connectString = `${server.connectString}${freshChroot()}`;
    const live = await listener();
    await holder(connectString, live.port);
    const zk = await client(connectString);
    const startedMs = Date.now();
    const attempt = BrokerRegistration.register(zk, options(9092, []));
    const error = await attempt.then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BrokerIdConflictError);
    expect(String(error)).toContain(`registered by a live broker at 127.0.0.1:${live.port}`);
    expect(String(error)).toContain("--broker-id");
    expect(Date.now() - startedMs).toBeLessThan(3_000);
  }, 20_000);
});

describe("waiting for a crashed predecessor", () => {
  test("a holder whose endpoint does not answer is waited for, then the id is taken", async () => {
    const connectString = `${server.connectString}${freshChroot()}`;
    const [deadPort] = await freePorts(1);
    const old = await holder(connectString, deadPort!);
    const zk = await client(connectString);
    const lines: string[] = [];
    const registering = register(zk, options(9092, lines));
    await until(() => lines.some((l) => l.includes("waiting up to")));
    expect(lines.join("\n")).toContain(`(127.0.0.1:${deadPort}, which does not answer)`);
    // The old session ends (as it would by expiring after a kill -9).
    await old.close();
    await registering;
    expect((await zk.getData("/brokers/ids/1")).stat.ephemeralOwner).toBe(zk.sessionId);
    expect(lines.some((l) => l.includes("released /brokers/ids/1"))).toBe(true);
  }, 20_000);

  test("a holder at this broker's own endpoint is waited for, though it answers", async () => {
    const connectString = `${server.connectString}${freshChroot()}`;
    // This broker already listens on its port, so the probe would reach itself.
    const own = await listener();
    const old = await holder(connectString, own.port);
    const zk = await client(connectString);
    const lines: string[] = [];
    const registering = register(zk, options(own.port, lines));
    await until(() => lines.some((l) => l.includes("this broker's own endpoint")));
    await old.close();
    await registering;
    expect((await zk.getData("/brokers/ids/1")).stat.ephemeralOwner).toBe(zk.sessionId);
  }, 20_000);

  test("a holder that never goes away fails the start after the expiry wait", async () => {
    const connectString = `${server.connectString}${freshChroot()}`;
    const [deadPort] = await freePorts(1);
    await holder(connectString, deadPort!);
    const zk = await client(connectString);
    const attempt = BrokerRegistration.register(zk, options(9092, [], { expiryWaitMs: 500 }));
    const error = await attempt.then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BrokerIdConflictError);
    expect(String(error)).toContain("still registered");
    expect(String(error)).toContain("after 500 ms");
  }, 20_000);
});

test("after this broker's session expires, it registers again in the new session", async () => {
  const chroot = freshChroot();
  const proxy = await TcpProxy.start(server.port);
  cleanups.push(() => proxy.close());
  const zk = await client(`${proxy.connectString}${chroot}`);
  const observer = await client(`${server.connectString}${chroot}`);
  await zk.mkdirp("/brokers/ids");
  const lines: string[] = [];
  const epochs: bigint[] = [];
  await register(zk, options(9092, lines, { onRegistered: (epoch) => epochs.push(epoch) }));
  const oldSession = zk.sessionId;
  const first = await observer.getData("/brokers/ids/1");
  expect(epochs).toEqual([first.stat.czxid]);
  proxy.setMode("refuse");
  await until(async () => (await observer.exists("/brokers/ids/1")) === null, 10_000);
  proxy.setMode("forward");
  await until(async () => (await observer.exists("/brokers/ids/1")) !== null, 10_000);
  const { stat } = await observer.getData("/brokers/ids/1");
  expect(stat.ephemeralOwner).not.toBe(oldSession);
  expect(stat.ephemeralOwner).toBe(zk.sessionId);
  // The broker epoch (KIP-380) is the new registration's czxid, reported once it is read back.
  await until(() => lines.some((l) => l.includes("registered broker 1 again")));
  expect(epochs).toEqual([first.stat.czxid, stat.czxid]);
  expect(stat.czxid > first.stat.czxid).toBe(true);
}, 30_000);
