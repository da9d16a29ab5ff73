/**
 * ZooKeeperMetadataStore against a real ZooKeeper (one JVM for this file): what it writes is
 * Kafka's layout, what others write shows up through watches, conditional writes lose cleanly
 * to concurrent writers, and an unavailable ZooKeeper gives retriable errors, never a hang.
 */

import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import type { TopicRecord } from "../../src/metadata/metadata-store.ts";
import { ZooKeeperMetadataStore } from "../../src/metadata/zookeeper-metadata-store.ts";
import { ErrorCode, isRetriable, KafkaError } from "../../src/protocol/errors.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { LineLogger } from "../support/line-logger.ts";
import { waitUntil } from "../support/wait-until.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import { TcpProxy } from "../zookeeper/tcp-proxy.ts";

const CLIENT_OPTIONS = { sessionTimeoutMs: 2_000, connectTimeoutMs: 5_000 };
const text = (b: Uint8Array) => new TextDecoder().decode(b);
const bytes = (s: string) => new TextEncoder().encode(s);

let server: ZooKeeperServer;
let chrootCount = 0;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  server = await startZooKeeper();
}, 60_000);

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  await server.stop();
});

/** A fresh chroot per test, so tests do not see each other's topics. */
function freshConnectString(): string {
  chrootCount++;
  return `${server.connectString}/store-test-${chrootCount}`;
}

async function client(connectString: string): Promise<ZooKeeperClient> {
  const zk = await ZooKeeperClient.connect(connectString, CLIENT_OPTIONS);
  cleanups.push(() => zk.close());
  return zk;
}

interface OpenedStore {
  readonly store: ZooKeeperMetadataStore;
  readonly zk: ZooKeeperClient;
  readonly logLines: string[];
  /** How many times onChange fired. */
  changes(): number;
  /** Every topic onChange reported deleted, in order. */
  readonly deleted: string[];
}

async function openStore(connectString: string, deleteTopicEnable = true): Promise<OpenedStore> {
  const zk = await client(connectString);
  const logLines: string[] = [];
  const log = new LineLogger(logLines);
  const store = await ZooKeeperMetadataStore.open(zk, {
    requestTimeoutMs: 1_000,
    deleteTopicEnable,
    log,
  });
  cleanups.push(() => store.close());
  let changeCount = 0;
  const deleted: string[] = [];
  store.onChange((change) => {
    changeCount++;
    deleted.push(...change.deletedTopics);
  });
  return { store, zk, logLines, changes: () => changeCount, deleted };
}

function record(name: string, extra: Partial<TopicRecord> = {}): TopicRecord {
  return {
    name,
    topicIdHex: "15da5eca914f99b99c0517fce58c6aa8",
    assignment: [[0], [0]],
    configs: {},
    ...extra,
  };
}

const until = (condition: () => boolean | Promise<boolean>, timeoutMs = 5_000) =>
  waitUntil(condition, timeoutMs, "condition", 20);

async function json(zk: ZooKeeperClient, path: string): Promise<unknown> {
  return JSON.parse(text((await zk.getData(path)).data));
}

async function kafkaErrorOf(promise: Promise<unknown>): Promise<KafkaError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(KafkaError);
  return error as KafkaError;
}

describe("opening", () => {
  test("creates Kafka's top-level paths and one cluster id that every broker reads", async () => {
    const connectString = freshConnectString();
    const [a, b] = await Promise.all([openStore(connectString), openStore(connectString)]);
    expect(a.store.clusterId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(b.store.clusterId).toBe(a.store.clusterId);
    expect(await json(a.zk, "/cluster/id")).toEqual({ version: "1", id: a.store.clusterId });
    for (const path of [
      "/brokers/ids",
      "/brokers/topics",
      "/config/topics",
      "/admin/delete_topics",
      "/consumers",
      "/isr_change_notification",
    ]) {
      expect(await a.zk.exists(path)).not.toBeNull();
    }
  }, 20_000);

  test("loads topics already in ZooKeeper", async () => {
    const connectString = freshConnectString();
    const first = await openStore(connectString);
    await first.store.createTopic(record("kept", { configs: { "retention.ms": "100" } }));
    const second = await openStore(connectString);
    expect(second.store.topics()).toEqual([record("kept", { configs: { "retention.ms": "100" } })]);
  }, 20_000);
});

describe("writes", () => {
  test("createTopic writes assignment, partition states and config in Kafka's JSON", async () => {
    const { store, zk, changes } = await openStore(freshConnectString());
    const topic = record("orders", {
      assignment: [[0], [0], [0]],
      configs: { "cleanup.policy": "compact" },
    });
    await store.createTopic(topic);
    expect(store.topic("orders")).toEqual(topic);
    expect(await json(zk, "/brokers/topics/orders")).toEqual({
      version: 3,
      partitions: { 0: [0], 1: [0], 2: [0] },
      topic_id: "FdpeypFPmbmcBRf85YxqqA",
      adding_replicas: {},
      removing_replicas: {},
    });
    expect(await json(zk, "/brokers/topics/orders/partitions/2/state")).toEqual({
      controller_epoch: 1,
      leader: 0,
      version: 1,
      leader_epoch: 0,
      isr: [0],
    });
    expect(await json(zk, "/config/topics/orders")).toEqual({
      version: 1,
      config: { "cleanup.policy": "compact" },
    });
    await Bun.sleep(200);
    expect(changes()).toBe(0);
  }, 20_000);

  test("updateTopic adds partitions and changes configs with conditional writes", async () => {
    const { store, zk } = await openStore(freshConnectString());
    await store.createTopic(record("grow"));
    await store.updateTopic(record("grow", { assignment: [[0], [0], [0]] }));
    expect(await zk.exists("/brokers/topics/grow/partitions/2/state")).not.toBeNull();
    expect((await zk.exists("/brokers/topics/grow"))?.version).toBe(1);
    const configs = { "retention.ms": "7" };
    await store.updateTopic(record("grow", { assignment: [[0], [0], [0]], configs }));
    expect(await json(zk, "/config/topics/grow")).toEqual({ version: 1, config: configs });
    expect((await zk.exists("/config/topics/grow"))?.version).toBe(1);
    expect(store.topic("grow")?.configs).toEqual({ "retention.ms": "7" });
  }, 20_000);

  test("two brokers change one topic at once: one wins, one gets a retriable error", async () => {
    const connectString = freshConnectString();
    const a = await openStore(connectString);
    const b = await openStore(connectString);
    await a.store.createTopic(record("raced"));
    await until(() => b.store.topic("raced") !== undefined);
    // Both writes start from config version 0 before either hears of the other.
    const results = await Promise.allSettled([
      a.store.updateTopic(record("raced", { configs: { "retention.ms": "1" } })),
      b.store.updateTopic(record("raced", { configs: { "retention.ms": "2" } })),
    ]);
    const rejected = results.filter((r) => r.status === "rejected");
    expect(rejected).toHaveLength(1);
    const error = (rejected[0] as PromiseRejectedResult).reason as KafkaError;
    expect(error.code).toBe(ErrorCode.NOT_CONTROLLER);
    expect(isRetriable(error.code)).toBe(true);
    const winner = results[0]!.status === "fulfilled" ? "1" : "2";
    expect(await json(a.zk, "/config/topics/raced")).toEqual({
      version: 1,
      config: { "retention.ms": winner },
    });
    // The loser's copy catches up with the winner's write.
    await until(() => a.store.topic("raced")?.configs["retention.ms"] === winner);
    await until(() => b.store.topic("raced")?.configs["retention.ms"] === winner);
  }, 20_000);

  test("creating a topic another process created meanwhile: TOPIC_ALREADY_EXISTS", async () => {
    const connectString = freshConnectString();
    const a = await openStore(connectString);
    const b = await openStore(connectString);
    // Both race for the same name; exactly one wins.
    const results = await Promise.allSettled([
      a.store.createTopic(record("contested")),
      b.store.createTopic(record("contested", { topicIdHex: "ab".repeat(16) })),
    ]);
    const rejected = results.filter((r) => r.status === "rejected");
    expect(rejected).toHaveLength(1);
    const reason = (rejected[0] as PromiseRejectedResult).reason as KafkaError;
    expect(reason.code).toBe(ErrorCode.TOPIC_ALREADY_EXISTS);
  }, 20_000);

  test("updating a topic another process deleted or replaced is a Kafka error", async () => {
    const connectString = freshConnectString();
    const a = await openStore(connectString);
    const b = await openStore(connectString);
    await a.store.createTopic(record("moving"));
    await until(() => b.store.topic("moving") !== undefined);
    const stale = b.store.topic("moving")!;
    await a.store.deleteTopic("moving");
    await until(() => b.store.topic("moving") === undefined);
    const update = { ...stale, configs: { "retention.ms": "1" } };
    const missing = await kafkaErrorOf(b.store.updateTopic(update));
    expect(missing.code).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    await a.store.createTopic(record("moving", { topicIdHex: "cd".repeat(16) }));
    await until(() => b.store.topic("moving") !== undefined);
    const replaced = await kafkaErrorOf(b.store.updateTopic(update));
    expect(replaced.code).toBe(ErrorCode.NOT_CONTROLLER);
    const exists = await kafkaErrorOf(b.store.createTopic(record("moving")));
    expect(exists.code).toBe(ErrorCode.TOPIC_ALREADY_EXISTS);
  }, 20_000);

  test("deleteTopic removes the topic's znodes, its config and the marker", async () => {
    const { store, zk } = await openStore(freshConnectString());
    const assignment = [[0], [0], [0], [0]];
    await store.createTopic(record("gone", { assignment, configs: { "retention.ms": "1" } }));
    await store.deleteTopic("gone");
    expect(store.topic("gone")).toBeUndefined();
    expect(await zk.exists("/brokers/topics/gone")).toBeNull();
    expect(await zk.exists("/config/topics/gone")).toBeNull();
    expect(await zk.getChildren("/admin/delete_topics")).toEqual([]);
    // The name can be used again at once.
    await store.createTopic(record("gone"));
    expect(store.topic("gone")?.assignment).toEqual([[0], [0]]);
  }, 20_000);

  test("two brokers deleting one topic at once both succeed, and nothing is left", async () => {
    const connectString = freshConnectString();
    const a = await openStore(connectString);
    const b = await openStore(connectString);
    const assignment = Array.from({ length: 50 }, () => [0]);
    await a.store.createTopic(record("doubly", { assignment, configs: { "retention.ms": "1" } }));
    await until(() => b.store.topic("doubly") !== undefined);
    await Promise.all([a.store.deleteTopic("doubly"), b.store.deleteTopic("doubly")]);
    expect(await a.zk.exists("/brokers/topics/doubly")).toBeNull();
    expect(await a.zk.exists("/config/topics/doubly")).toBeNull();
    expect(await a.zk.getChildren("/admin/delete_topics")).toEqual([]);
    expect(a.store.topic("doubly")).toBeUndefined();
    expect(b.store.topic("doubly")).toBeUndefined();
  }, 20_000);

  test("ZooKeeper unreachable: writes fail with REQUEST_TIMED_OUT, reads answer", async () => {
    const proxy = await TcpProxy.start(server.port);
    cleanups.push(() => proxy.close());
    const chroot = freshConnectString().slice(server.connectString.length);
    const { store } = await openStore(`${proxy.connectString}${chroot}`);
    await store.createTopic(record("before"));
    proxy.setMode("blackhole");
    const startedMs = Date.now();
    const error = await kafkaErrorOf(store.createTopic(record("during")));
    expect(error.code).toBe(ErrorCode.REQUEST_TIMED_OUT);
    expect(Date.now() - startedMs).toBeLessThan(3_000);
    expect(store.topic("before")).toBeDefined();
    proxy.setMode("forward");
  }, 20_000);
});

describe("changes made by others", () => {
  test("a topic created in another store appears, with onChange", async () => {
    const connectString = freshConnectString();
    const a = await openStore(connectString);
    const b = await openStore(connectString);
    await a.store.createTopic(record("shared", { configs: { "retention.ms": "9" } }));
    await until(() => b.store.topic("shared") !== undefined);
    expect(b.store.topic("shared")).toEqual(record("shared", { configs: { "retention.ms": "9" } }));
    expect(b.changes()).toBeGreaterThan(0);
    const configs = { "retention.ms": "9" };
    await b.store.updateTopic(record("shared", { assignment: [[0], [0], [0]], configs }));
    await until(() => a.store.topic("shared")?.assignment.length === 3);
  }, 20_000);

  test("znodes written by hand (no topic id, old version) become a topic with an id", async () => {
    const { store, zk, changes, logLines } = await openStore(freshConnectString());
    const v1 = '{"version":1,"partitions":{"0":[0],"1":[0]}}';
    await zk.create("/brokers/topics/manual", bytes(v1));
    await until(() => store.topic("manual") !== undefined);
    const topic = store.topic("manual")!;
    expect(topic.assignment).toEqual([[0], [0]]);
    expect(topic.topicIdHex).toMatch(/^[0-9a-f]{32}$/);
    const written = (await json(zk, "/brokers/topics/manual")) as { topic_id: string };
    expect(Buffer.from(written.topic_id, "base64url").toString("hex")).toBe(topic.topicIdHex);
    expect(changes()).toBeGreaterThan(0);
    expect(logLines.some((l) => l.includes("gave topic manual the id"))).toBe(true);
  }, 20_000);

  test("config znodes created, changed and removed by others are followed", async () => {
    const { store, zk } = await openStore(freshConnectString());
    await store.createTopic(record("configured"));
    const segmentBytes = '{"version":1,"config":{"segment.bytes":"4096"}}';
    await zk.setData("/config/topics/configured", bytes(segmentBytes));
    await until(() => store.topic("configured")?.configs["segment.bytes"] === "4096");
    await zk.delete("/config/topics/configured");
    await until(() => Object.keys(store.topic("configured")!.configs).length === 0);
    const retention = '{"version":1,"config":{"retention.ms":"5"}}';
    await zk.create("/config/topics/configured", bytes(retention));
    await until(() => store.topic("configured")?.configs["retention.ms"] === "5");
  }, 20_000);

  test("a deletion marker written by another process deletes the topic", async () => {
    const { store, zk, changes, deleted } = await openStore(freshConnectString());
    await store.createTopic(record("marked", { configs: { "retention.ms": "3" } }));
    const before = changes();
    await zk.create("/admin/delete_topics/marked");
    await until(() => store.topic("marked") === undefined);
    await until(async () => (await zk.exists("/admin/delete_topics/marked")) === null);
    expect(await zk.exists("/brokers/topics/marked")).toBeNull();
    expect(await zk.exists("/config/topics/marked")).toBeNull();
    expect(changes()).toBe(before + 1);
    expect(deleted).toEqual(["marked"]);
  }, 20_000);

  test("topic znodes removed by hand or replaced by another id are reported deleted", async () => {
    const { store, zk, deleted } = await openStore(freshConnectString());
    await store.createTopic(record("removed"));
    await store.createTopic(record("replaced"));
    for (const path of await zk.listSubtree("/brokers/topics/removed").then((p) => p.reverse())) {
      await zk.delete(path);
    }
    await until(() => store.topic("removed") === undefined);
    const otherId = '{"version":3,"partitions":{"0":[0]},"topic_id":"AAAAAAAAAAAAAAAAAAAAAQ"}';
    await zk.setData("/brokers/topics/replaced", bytes(otherId));
    await until(() => store.topic("replaced")?.topicIdHex === `${"00".repeat(15)}01`);
    expect(deleted).toEqual(["removed", "replaced"]);
  }, 20_000);

  test("with delete.topic.enable=false a marker is removed and the topic kept", async () => {
    const { store, zk } = await openStore(freshConnectString(), false);
    await store.createTopic(record("protected"));
    await zk.create("/admin/delete_topics/protected");
    await until(async () => (await zk.exists("/admin/delete_topics/protected")) === null);
    expect(store.topic("protected")).toBeDefined();
    expect(await zk.exists("/brokers/topics/protected")).not.toBeNull();
  }, 20_000);

  test("malformed and illegally named znodes are logged and skipped, not fatal", async () => {
    const { store, zk, logLines } = await openStore(freshConnectString());
    await zk.create("/brokers/topics/broken", bytes("{not json"));
    await zk.create("/brokers/topics/bad name");
    await store.createTopic(record("fine"));
    await until(() => logLines.some((l) => l.includes("ignoring topic broken")));
    await until(() => logLines.some((l) => l.includes("bad name")));
    expect(store.topics().map((t) => t.name)).toEqual(["fine"]);
    // Fixing the znode makes the topic appear: its watch stayed set.
    await zk.setData("/brokers/topics/broken", bytes('{"version":1,"partitions":{"0":[0]}}'));
    await until(() => store.topic("broken") !== undefined);
  }, 20_000);

  test("after the session expires, everything is read again and watched anew", async () => {
    const proxy = await TcpProxy.start(server.port);
    cleanups.push(() => proxy.close());
    const connectString = freshConnectString();
    const chroot = connectString.slice(server.connectString.length);
    const { store, zk, deleted, logLines } = await openStore(`${proxy.connectString}${chroot}`);
    const observer = await client(connectString);
    await store.createTopic(record("vanishes"));
    const oldSession = zk.sessionId;
    proxy.setMode("refuse");
    // Gone while nobody watched: as after a ZooKeeper restored from an old snapshot.
    const vanishing = await observer.listSubtree("/brokers/topics/vanishes");
    for (const path of vanishing.reverse()) await observer.delete(path);
    // While the store is cut off, another process creates a topic.
    const topic = bytes('{"version":1,"partitions":{"0":[0]}}');
    await observer.create("/brokers/topics/while-away", topic);
    await Bun.sleep(3_000);
    proxy.setMode("forward");
    await until(() => zk.sessionId !== oldSession, 10_000);
    await until(() => store.topic("while-away") !== undefined, 10_000);
    expect(store.topic("vanishes")).toBeUndefined();
    expect(deleted).toEqual([]);
    const warning = "kept on disk but no longer served: vanishes";
    expect(logLines.some((l) => l.includes(warning))).toBe(true);
    // The new session's watches work: a later change is seen too.
    await observer.create("/brokers/topics/after", topic);
    await until(() => store.topic("after") !== undefined);
  }, 30_000);
});
