/**
 * ZooKeeperOffsetStore against a real ZooKeeper (one JVM for this file): Kafka's znode layout,
 * one multi per commit, cache refresh when another writer changed the tree, and retriable
 * errors (never a hang) while ZooKeeper is down or the session expires.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as zookeeper from "node-zookeeper-client";
import { topicPartitionKey as tp } from "../../src/common/topic-partition.ts";
import type { CommittedOffset } from "../../src/coordinator/offset-store.ts";
import { ZooKeeperOffsetStore } from "../../src/coordinator/zookeeper-offset-store.ts";
import { ErrorCode, isRetriable, KafkaError } from "../../src/protocol/errors.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { waitUntil } from "../support/wait-until.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import { TcpProxy } from "../zookeeper/tcp-proxy.ts";

const CLIENT_OPTIONS = { sessionTimeoutMs: 4_000, connectTimeoutMs: 5_000 };
const STORE_OPTIONS = { offsetCommitTimeoutMs: 1_000 };
const decode = (b: Uint8Array) => new TextDecoder().decode(b);

let server: ZooKeeperServer;
let zk: ZooKeeperClient;
const closers: (() => Promise<void>)[] = [];

function committed(offset: number | bigint, extra: Partial<CommittedOffset> = {}): CommittedOffset {
  return {
    offset: BigInt(offset),
    leaderEpoch: 3,
    metadata: "meta",
    commitTimestampMs: 1_700_000_000_000,
    ...extra,
  };
}

function partitions(topic: string, count: number, offset: (p: number) => number) {
  return Array.from({ length: count }, (_, p) => ({
    topic,
    partition: p,
    committed: committed(offset(p)),
  }));
}

async function newStore(
  connectString = server.connectString,
  clientOptions = CLIENT_OPTIONS,
  storeOptions = STORE_OPTIONS,
): Promise<ZooKeeperOffsetStore> {
  const store = await ZooKeeperOffsetStore.connect(connectString, clientOptions, storeOptions);
  closers.push(() => store.close());
  return store;
}

async function kafkaErrorOf(promise: Promise<unknown>): Promise<KafkaError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(KafkaError);
  return error as KafkaError;
}

beforeAll(async () => {
  server = await startZooKeeper();
  zk = await ZooKeeperClient.connect(server.connectString, CLIENT_OPTIONS);
}, 30_000);

afterAll(async () => {
  for (const close of closers) await close();
  await zk?.close();
  await server?.stop();
});

describe("layout and round trip", () => {
  test("a commit loads back exactly, through a fresh store with an empty cache", async () => {
    const store = await newStore();
    await store.commit("round-trip", [
      { topic: "orders", partition: 0, committed: committed(42) },
      {
        topic: "orders",
        partition: 1,
        committed: committed(7, { metadata: null, leaderEpoch: -1 }),
      },
      { topic: "audit.log", partition: 5, committed: committed(9_007_199_254_740_993n) },
    ]);
    const loaded = await (await newStore()).loadGroup("round-trip");
    expect(loaded.size).toBe(3);
    expect(loaded.get(tp("orders", 0))).toEqual(committed(42));
    expect(loaded.get(tp("orders", 1))).toEqual(committed(7, { metadata: null, leaderEpoch: -1 }));
    expect(loaded.get(tp("audit.log", 5))?.offset).toBe(9_007_199_254_740_993n);
  });

  test("the offset znode holds the decimal offset, readable by a plain ZooKeeper client", async () => {
    const store = await newStore();
    await store.commit("plain", [{ topic: "t", partition: 0, committed: committed(4217) }]);
    const plain = zookeeper.createClient(server.connectString);
    plain.connect();
    const data = await new Promise<Buffer>((resolve, reject) => {
      plain.getData("/consumers/plain/offsets/t/0", (error, value) =>
        error ? reject(error) : resolve(value),
      );
    });
    plain.close();
    expect(data.toString("utf8")).toBe("4217");
    const meta = JSON.parse(decode((await zk.getData("/consumers/plain/offsets-meta/t/0")).data));
    expect(meta).toEqual({
      version: 1,
      offset: "4217",
      leaderEpoch: 3,
      metadata: "meta",
      commitTimestampMs: 1_700_000_000_000,
    });
  });

  test("100 partitions are written in one multi: one ZooKeeper transaction for creates, one for updates", async () => {
    const store = await newStore();
    await store.commit(
      "wide",
      partitions("wide-topic", 100, (p) => p),
    );
    const createZxids = new Set<bigint>();
    for (let p = 0; p < 100; p += 1) {
      createZxids.add((await zk.exists(`/consumers/wide/offsets/wide-topic/${p}`))!.czxid);
      createZxids.add((await zk.exists(`/consumers/wide/offsets-meta/wide-topic/${p}`))!.czxid);
    }
    expect(createZxids.size).toBe(1);
    await store.commit(
      "wide",
      partitions("wide-topic", 100, (p) => 1000 + p),
    );
    const updateZxids = new Set<bigint>();
    for (let p = 0; p < 100; p += 1) {
      const { data, stat } = await zk.getData(`/consumers/wide/offsets/wide-topic/${p}`);
      expect(decode(data)).toBe(String(1000 + p));
      updateZxids.add(stat.mzxid);
    }
    expect(updateZxids.size).toBe(1);
    expect([...updateZxids][0]).toBeGreaterThan([...createZxids][0]);
  });

  test("group ids that are not znode names are encoded, and listGroups decodes them", async () => {
    const store = await newStore();
    const odd = ["a/b", "..", "100%", "grüße"];
    for (const group of odd)
      await store.commit(group, [{ topic: "t", partition: 0, committed: committed(1) }]);
    expect(await zk.exists("/consumers/a%2Fb/offsets/t/0")).not.toBeNull();
    expect(await zk.exists("/consumers/grüße/offsets/t/0")).not.toBeNull();
    const groups = await store.listGroups();
    for (const group of odd) expect(groups).toContain(group);
    expect((await (await newStore()).loadGroup("a/b")).get(tp("t", 0))?.offset).toBe(1n);
    expect(
      (
        await kafkaErrorOf(
          store.commit(
            "",
            partitions("t", 1, () => 1),
          ),
        )
      ).code,
    ).toBe(ErrorCode.INVALID_GROUP_ID);
  });

  test("listGroupIds lists decoded ids by prefix in one listing, offsets or not", async () => {
    const store = await newStore();
    for (const group of ["__txn_pending:7:a/b", "__txn_pending:7:c", "__txn_pending:8:c", "c"])
      await store.commit(group, [{ topic: "t", partition: 0, committed: committed(1) }]);
    expect((await store.listGroupIds("__txn_pending:7:")).sort()).toEqual([
      "__txn_pending:7:a/b",
      "__txn_pending:7:c",
    ]);
    await store.deleteGroup("__txn_pending:7:c");
    expect(await store.listGroupIds("__txn_pending:7:")).toEqual(["__txn_pending:7:a/b"]);
  });

  test("a commit too big for one ZooKeeper request is split into several and all of it lands", async () => {
    // 1.2 MB through ZooKeeper's fsyncs: the 1 s deadline the other tests use to see
    // unavailability quickly is too short for that on a busy machine (CI missed it once).
    const store = await newStore(server.connectString, CLIENT_OPTIONS, {
      offsetCommitTimeoutMs: 15_000,
    });
    const metadata = "m".repeat(4096);
    const offsets = Array.from({ length: 300 }, (_, p) => ({
      topic: "big",
      partition: p,
      committed: committed(p, { metadata }),
    }));
    await store.commit("big-metadata", offsets);
    const loaded = await (await newStore()).loadGroup("big-metadata");
    expect(loaded.size).toBe(300);
    expect(loaded.get(tp("big", 299))?.metadata).toBe(metadata);
  });
});

describe("another writer changed the tree", () => {
  test("a znode deleted behind the cache's back: the commit reloads and retries", async () => {
    const store = await newStore();
    await store.commit(
      "drift",
      partitions("t", 4, () => 10),
    );
    await zk.delete("/consumers/drift/offsets-meta/t/3");
    await zk.delete("/consumers/drift/offsets/t/3");
    await store.commit(
      "drift",
      partitions("t", 4, () => 11),
    );
    expect(decode((await zk.getData("/consumers/drift/offsets/t/3")).data)).toBe("11");
  });

  test("a znode created behind the cache's back: the commit reloads and retries", async () => {
    const store = await newStore();
    await store.commit(
      "drift2",
      partitions("t", 1, () => 5),
    );
    await zk.create("/consumers/drift2/offsets/t/1", new TextEncoder().encode("99"));
    await store.commit(
      "drift2",
      partitions("t", 2, () => 6),
    );
    expect(decode((await zk.getData("/consumers/drift2/offsets/t/1")).data)).toBe("6");
  });

  test("an offset reset by an old tool wins over the stale metadata; garbage offsets are skipped", async () => {
    const store = await newStore();
    await store.commit(
      "reset",
      partitions("t", 2, () => 500),
    );
    const before = Date.now();
    await zk.setData("/consumers/reset/offsets/t/0", new TextEncoder().encode("7"));
    await zk.setData("/consumers/reset/offsets/t/1", new TextEncoder().encode("not a number"));
    const loaded = await store.loadGroup("reset");
    const after = Date.now();
    const reset = loaded.get(tp("t", 0))!;
    expect(reset.offset).toBe(7n);
    expect(reset.leaderEpoch).toBe(-1);
    expect(reset.metadata).toBe("");
    // The tool wrote no time: the znode's mtime, set by ZooKeeper (this machine's clock).
    expect(reset.commitTimestampMs).toBeGreaterThanOrEqual(before);
    expect(reset.commitTimestampMs).toBeLessThanOrEqual(after);
    expect(loaded.has(tp("t", 1))).toBe(false);
  });
});

describe("deletes and listing", () => {
  test("deleteOffsets removes the partitions' znodes in one multi and from loads", async () => {
    const store = await newStore();
    await store.commit("del", [...partitions("a", 3, () => 1), ...partitions("b", 1, () => 2)]);
    await store.deleteOffsets("del", [
      { topic: "a", partition: 0 },
      { topic: "a", partition: 2 },
      { topic: "never", partition: 9 },
    ]);
    expect(await zk.getChildren("/consumers/del/offsets/a")).toEqual(["1"]);
    expect(await zk.getChildren("/consumers/del/offsets-meta/a")).toEqual(["1"]);
    const offsetsDir = await zk.exists("/consumers/del/offsets/a");
    expect((await zk.exists("/consumers/del/offsets-meta/a"))?.pzxid).toBe(offsetsDir!.pzxid);
    const loaded = await (await newStore()).loadGroup("del");
    expect([...loaded.keys()].sort()).toEqual([tp("a", 1), tp("b", 0)]);
  });

  test("deleteGroup removes the whole subtree; listGroups lists only groups with offsets", async () => {
    const store = await newStore();
    await store.commit(
      "doomed",
      partitions("t", 3, () => 1),
    );
    await zk.create("/consumers/doomed/ids/consumer-1", new TextEncoder().encode("{}"), {
      createParents: true,
    });
    await zk.mkdirp("/consumers/no-offsets-group/ids");
    expect(await store.listGroups()).toContain("doomed");
    expect(await store.listGroups()).not.toContain("no-offsets-group");
    await store.deleteGroup("doomed");
    expect(await zk.exists("/consumers/doomed")).toBeNull();
    expect(await store.listGroups()).not.toContain("doomed");
    expect((await store.loadGroup("doomed")).size).toBe(0);
    await store.commit(
      "doomed",
      partitions("t", 1, () => 2),
    );
    expect(decode((await zk.getData("/consumers/doomed/offsets/t/0")).data)).toBe("2");
    await store.deleteGroup("never-existed");
  });

  test("the group znode keeps the protocol type, read back only for a group with offsets", async () => {
    const store = await newStore();
    await store.storeGroupMetadata("typed", { protocolType: "consumer" });
    expect(decode((await zk.getData("/consumers/typed")).data)).toBe(
      '{"version":1,"protocolType":"consumer"}',
    );
    expect(await store.describeStoredGroup("typed")).toBeNull();
    // The commit after it, and the rewrite after that, go through the same znode cache.
    await store.commit(
      "typed",
      partitions("t", 2, () => 9),
    );
    await store.storeGroupMetadata("typed", { protocolType: "connect" });
    const fresh = await newStore();
    expect(await fresh.describeStoredGroup("typed")).toEqual({ protocolType: "connect" });
    expect((await fresh.loadGroup("typed")).size).toBe(2);
    // Kafka's ZooKeeper-era consumers left the group znode empty.
    await zk.mkdirp("/consumers/old-style/offsets/t");
    await zk.create("/consumers/old-style/offsets/t/0", new TextEncoder().encode("3"));
    expect(await fresh.describeStoredGroup("old-style")).toEqual({ protocolType: null });
    expect(await fresh.describeStoredGroup("nobody")).toBeNull();
  });

  test("a chrooted store writes under its chroot", async () => {
    const store = await newStore(`${server.connectString}/quill/offsets-test`);
    await store.commit(
      "chrooted",
      partitions("t", 1, () => 77),
    );
    expect(
      decode((await zk.getData("/quill/offsets-test/consumers/chrooted/offsets/t/0")).data),
    ).toBe("77");
    expect(await store.listGroups()).toEqual(["chrooted"]);
  });
});

describe("ZooKeeper unavailable", () => {
  test("session expiry: commits fail retriably while cut off, then work on the new session", async () => {
    const proxy = await TcpProxy.start(server.port);
    closers.push(() => proxy.close());
    const client = await ZooKeeperClient.connect(proxy.connectString, {
      sessionTimeoutMs: 1_000,
      connectTimeoutMs: 5_000,
    });
    const events: string[] = [];
    client.onSessionEvent((event) => events.push(event));
    const store = new ZooKeeperOffsetStore(client, STORE_OPTIONS, true);
    closers.push(() => store.close());
    await store.commit(
      "expiry",
      partitions("t", 2, () => 1),
    );
    // The session's ephemeral tells when ZooKeeper has expired it, however late that comes.
    await client.create("/expiry-marker", new Uint8Array(0), { mode: "ephemeral" });
    proxy.setMode("refuse");
    const error = await kafkaErrorOf(
      store.commit(
        "expiry",
        partitions("t", 2, () => 2),
      ),
    );
    expect(error.code).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    await waitUntil(async () => (await zk.exists("/expiry-marker")) === null, 20_000, "expiry");
    proxy.setMode("forward");
    // Commits fail retriably until the new session is made; the test's timeout bounds the wait.
    for (;;) {
      const failure = await store
        .commit(
          "expiry",
          partitions("t", 2, () => 3),
        )
        .catch((e: unknown) => e);
      if (failure === undefined) break;
      expect(failure).toBeInstanceOf(KafkaError);
      await Bun.sleep(50);
    }
    expect(events).toContain("session-recreated");
    expect(decode((await zk.getData("/consumers/expiry/offsets/t/1")).data)).toBe("3");
  }, 45_000);

  test("ZooKeeper killed during commits: every commit settles quickly with a retriable error; restart recovers", async () => {
    const store = await newStore();
    await store.commit(
      "outage",
      partitions("t", 10, () => 0),
    );
    let committedOffset = 0;
    let stop = false;
    const writer = (async () => {
      const failures: KafkaError[] = [];
      for (let offset = 1; !stop; offset += 1) {
        // Each commit settles (none hangs: the loop would stop and the test time out).
        const result = await store
          .commit(
            "outage",
            partitions("t", 10, () => offset),
          )
          .catch((e: unknown) => e);
        if (result === undefined) committedOffset = offset;
        else failures.push(result as KafkaError);
      }
      return failures;
    })();
    await Bun.sleep(200);
    await server.kill();
    const burst = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        kafkaErrorOf(
          store.commit(
            `outage-${i}`,
            partitions("t", 1, () => i),
          ),
        ),
      ),
    );
    for (const error of burst) expect(error.code).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    await Bun.sleep(1_500);
    await server.restart();
    const okBefore = committedOffset;
    const recoveredDeadlineMs = Date.now() + 30_000;
    while (committedOffset <= okBefore + 5 && Date.now() < recoveredDeadlineMs) await Bun.sleep(50);
    stop = true;
    const failures = await writer;
    expect(committedOffset).toBeGreaterThan(okBefore + 5);
    expect(failures.length).toBeGreaterThan(0);
    for (const failure of failures) {
      expect(failure).toBeInstanceOf(KafkaError);
      expect(isRetriable(failure.code)).toBe(true);
    }
    const loaded = await (await newStore()).loadGroup("outage");
    expect(loaded.get(tp("t", 9))?.offset).toBe(BigInt(committedOffset));
  }, 60_000);
});
