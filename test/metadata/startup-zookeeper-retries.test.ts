/**
 * Start-up writes survive a lost connection (a real ZooKeeper behind a proxy that cuts the link
 * right after a write reaches the server, so the write is applied but its reply is lost): the
 * metadata store's persistent paths and cluster id, and a generated broker id, are retried
 * rather than failing the broker's start.
 */
import { afterAll, afterEach, beforeAll, expect, test } from "bun:test";
import { generateBrokerId } from "../../src/metadata/broker-id.ts";
import { PERSISTENT_PATHS } from "../../src/metadata/kafka-znodes.ts";
import { ZooKeeperMetadataStore } from "../../src/metadata/zookeeper-metadata-store.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";
import { type SessionEvent, ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import { TcpProxy } from "../zookeeper/tcp-proxy.ts";

const OP_CREATE = 1;
const OP_SET_DATA = 5;

let server: ZooKeeperServer;
let chroots = 0;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  server = await startZooKeeper();
}, 60_000);

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  await server?.stop();
});

/** A client through a fresh proxy, in its own chroot; `events` records its session events. */
async function clientThroughProxy() {
  const proxy = await TcpProxy.start(server.port);
  cleanups.push(() => proxy.close());
  const client = await ZooKeeperClient.connect(`${proxy.connectString}/retries-${++chroots}`, {
    sessionTimeoutMs: 6_000,
    connectTimeoutMs: 5_000,
  });
  cleanups.push(() => client.close());
  const events: SessionEvent[] = [];
  client.onSessionEvent((event) => events.push(event));
  return { proxy, client, events };
}

test("the store's top-level paths and cluster id are written despite a connection lost mid-write", async () => {
  const { proxy, client, events } = await clientThroughProxy();
  proxy.cutAfterRequest(OP_CREATE);
  const store = await ZooKeeperMetadataStore.open(client, {
    requestTimeoutMs: 5_000,
    deleteTopicEnable: true,
    log: SILENT_LOGGER,
  });
  cleanups.push(() => store.close());
  expect(events).toContain("disconnected");
  expect(await client.exists("/log_dir_event_notification")).not.toBeNull();
  const { data } = await client.getData("/cluster/id");
  expect(JSON.parse(new TextDecoder().decode(data)).id).toBe(store.clusterId);
}, 30_000);

test("the cluster id is created once despite a connection lost after its create", async () => {
  const { proxy, client, events } = await clientThroughProxy();
  for (const path of PERSISTENT_PATHS) await client.mkdirp(path);
  // Each top-level path is one create (answered "exists"); the next create is /cluster/id's.
  proxy.cutAfterRequest(OP_CREATE, PERSISTENT_PATHS.length);
  const options = { requestTimeoutMs: 5_000, deleteTopicEnable: true, log: SILENT_LOGGER };
  const store = await ZooKeeperMetadataStore.open(client, options);
  cleanups.push(() => store.close());
  expect(events).toContain("disconnected");
  const { data } = await client.getData("/cluster/id");
  expect(JSON.parse(new TextDecoder().decode(data)).id).toBe(store.clusterId);
}, 30_000);

test("a generated broker id survives a connection lost after its sequence write", async () => {
  const { proxy, client, events } = await clientThroughProxy();
  await client.mkdirp("/brokers/seqid");
  proxy.cutAfterRequest(OP_SET_DATA);
  const id = await generateBrokerId(client);
  expect(events).toContain("disconnected");
  // The lost write was applied, so the retry took the next version: ids stay unique.
  expect(id).toBeGreaterThanOrEqual(1001);
  expect(await generateBrokerId(client)).toBe(id + 1);
}, 30_000);
