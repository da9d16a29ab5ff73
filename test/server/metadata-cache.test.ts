// What the metadata cache names as a partition's leader before the controller has said. Found by
// the client compatibility matrix on three brokers: Metadata named a new topic's first replica as
// leader before its LeaderAndIsr arrived, that broker answered NOT_LEADER_OR_FOLLOWER, and kcat's
// retried first batches landed after later ones, so records of a key came back out of order.
import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config/load-config.ts";
import { LocalMetadataStore } from "../../src/metadata/local-metadata-store.ts";
import { MetadataCache } from "../../src/server/metadata-cache.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const self = { nodeId: 1, host: "127.0.0.1", port: 9092, rack: null };

/** A cache over a store holding topic "t" with partitions on brokers [1, 2] and [2, 1]. */
async function cacheWith(settings: Record<string, string>): Promise<MetadataCache> {
  const dir = mkdtempSync(join(tmpdir(), "quill-metadata-cache-"));
  dirs.push(dir);
  const store = LocalMetadataStore.open(dir);
  await store.createTopic({
    name: "t",
    topicIdHex: "11".repeat(16),
    assignment: [
      [1, 2],
      [2, 1],
    ],
    configs: {},
  });
  const flags = Object.entries(settings).map(([key, value]) => ({ key, value, flag: "--set" }));
  return new MetadataCache(store, self, loadConfig({ flags }).config);
}

test("topic names for regex subscriptions: internal topics left out, a new version per change of the set", async () => {
  const dir = mkdtempSync(join(tmpdir(), "quill-metadata-cache-"));
  dirs.push(dir);
  const store = LocalMetadataStore.open(dir);
  const create = (name: string, id: string) =>
    store.createTopic({ name, topicIdHex: id.repeat(16), assignment: [[1]], configs: {} });
  await create("t", "11");
  const cache = new MetadataCache(store, self, loadConfig({ flags: [] }).config);
  const first = cache.topicNames();
  expect(first.names).toEqual(["t"]);
  await create("__transaction_state", "22");
  await create("b", "33");
  cache.reload();
  const second = cache.topicNames();
  expect(second.names).toEqual(["b", "t"]);
  expect(second.version).toBeGreaterThan(first.version);
  cache.reload();
  expect(cache.topicNames()).toBe(second);
  await store.deleteTopic("b");
  cache.reload();
  expect(cache.topicNames().names).toEqual(["t"]);
});

const leaders = (cache: MetadataCache) => cache.topic("t")!.partitions.map((p) => p.leaderId);

test("embedded, each partition is led by its first replica at once", async () => {
  expect(leaders(await cacheWith({}))).toEqual([1, 2]);
});

test("in a cluster, a partition has no leader until the controller states one", async () => {
  const cache = await cacheWith({ "zookeeper.connect": "127.0.0.1:2181" });
  expect(leaders(cache)).toEqual([-1, -1]);
  cache.applyLeaderStates([
    {
      topic: "t",
      topicId: new Uint8Array(16).fill(0x11),
      partition: 1,
      leader: 2,
      leaderEpoch: 0,
      partitionEpoch: 0,
      isr: [2, 1],
      replicas: [2, 1],
    },
  ]);
  expect(leaders(cache)).toEqual([-1, 2]);
});

test("broker epochs: any epoch is stale before registration, then only older ones; -1 never", async () => {
  const cache = await cacheWith({ "zookeeper.connect": "127.0.0.1:2181" });
  expect(cache.isStaleBrokerEpoch(-1n)).toBe(false);
  expect(cache.isStaleBrokerEpoch(40n)).toBe(true);
  const known = cache.whenBrokerEpochKnown(10_000);
  cache.setBrokerEpoch(50n);
  await known;
  expect(cache.brokerEpoch).toBe(50n);
  expect(cache.isStaleBrokerEpoch(40n)).toBe(true);
  expect(cache.isStaleBrokerEpoch(50n)).toBe(false);
  expect(cache.isStaleBrokerEpoch(60n)).toBe(false);
  expect(cache.isStaleBrokerEpoch(-1n)).toBe(false);
  expect(() => cache.setBrokerEpoch(45n)).toThrow();
});
