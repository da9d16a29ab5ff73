/**
 * The broker's store choice by config: local files without zookeeper.connect, Kafka's znodes on
 * the broker's one ZooKeeper session with it (metadata and committed offsets alike).
 */
import { afterAll, afterEach, beforeAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { openMetadataStores, openOffsetStore } from "../../src/broker/metadata-stores.ts";
import { loadConfig } from "../../src/config/load-config.ts";
import { LocalOffsetStore } from "../../src/coordinator/local-offset-store.ts";
import { ZooKeeperOffsetStore } from "../../src/coordinator/zookeeper-offset-store.ts";
import { LocalMetadataStore } from "../../src/metadata/local-metadata-store.ts";
import { ZooKeeperMetadataStore } from "../../src/metadata/zookeeper-metadata-store.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { LineLogger, removeDir, tempDir } from "../support/broker-harness.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";

let server: ZooKeeperServer;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  server = await startZooKeeper();
}, 60_000);

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  await server.stop();
});

function config(settings: Record<string, string>) {
  const dataDir = tempDir();
  cleanups.push(() => removeDir(dataDir));
  const flags = [
    { key: "log.dirs", value: dataDir, flag: "--data-dir" },
    ...Object.entries(settings).map(([key, value]) => ({ key, value, flag: "--set" })),
  ];
  return { config: loadConfig({ flags }).config, dataDir };
}

const committed = { offset: 42n, leaderEpoch: 1, metadata: null, commitTimestampMs: 1 };

test("without zookeeper.connect: the local metadata file and the local offset log", async () => {
  const { config: cfg, dataDir } = config({});
  const stores = await openMetadataStores(cfg, new LineLogger());
  cleanups.push(() => stores.close());
  expect(stores.metadataStore).toBeInstanceOf(LocalMetadataStore);
  expect(stores.zooKeeper).toBeNull();
  const offsets = openOffsetStore(stores, cfg, new LineLogger());
  cleanups.push(() => offsets.close());
  expect(offsets).toBeInstanceOf(LocalOffsetStore);
  await offsets.commit("g", [{ topic: "t", partition: 0, committed }]);
  expect(existsSync(join(dataDir, "__consumer_offsets"))).toBe(true);
  expect(existsSync(join(dataDir, "__quill_metadata.json"))).toBe(true);
});

test("with zookeeper.connect: both stores on one ZooKeeper session, under the chroot", async () => {
  const { config: cfg } = config({ "zookeeper.connect": `${server.connectString}/stores` });
  const stores = await openMetadataStores(cfg, new LineLogger());
  cleanups.push(() => stores.close());
  expect(stores.metadataStore).toBeInstanceOf(ZooKeeperMetadataStore);
  const offsets = openOffsetStore(stores, cfg, new LineLogger());
  expect(offsets).toBeInstanceOf(ZooKeeperOffsetStore);
  await offsets.commit("g", [{ topic: "t", partition: 0, committed }]);
  const observer = await ZooKeeperClient.connect(server.connectString, {
    sessionTimeoutMs: 4_000,
    connectTimeoutMs: 5_000,
  });
  cleanups.push(() => observer.close());
  const { data } = await observer.getData("/stores/consumers/g/offsets/t/0");
  expect(new TextDecoder().decode(data)).toBe("42");
  // Closing the offset store leaves the shared session to the metadata stores.
  await offsets.close();
  expect(stores.zooKeeper?.isConnected).toBe(true);
  await stores.close();
  expect(stores.zooKeeper?.isConnected).toBe(false);
}, 30_000);
