/**
 * ZooKeeperClient against a real ZooKeeper (one JVM shared by this file): CRUD, typed errors,
 * multi, the read barrier, watches, chroot, ephemeral and sequential znodes.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { WatchEvent } from "../../src/zookeeper/znode.ts";
import { MAX_REQUEST_BYTES, ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import {
  BadVersionError,
  NodeExistsError,
  NoNodeError,
  NotEmptyError,
  ZooKeeperCode,
  ZooKeeperError,
  ZooKeeperUnavailableError,
} from "../../src/zookeeper/zookeeper-errors.ts";
import { freePorts, startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";

const OPTIONS = { sessionTimeoutMs: 4_000, connectTimeoutMs: 5_000, requestTimeoutMs: 2_000 };
const text = (s: string) => new TextEncoder().encode(s);
const str = (b: Uint8Array) => new TextDecoder().decode(b);

let server: ZooKeeperServer;
let zk: ZooKeeperClient;
const clients: ZooKeeperClient[] = [];

async function connect(connectString = server.connectString): Promise<ZooKeeperClient> {
  const client = await ZooKeeperClient.connect(connectString, OPTIONS);
  clients.push(client);
  return client;
}

function nextEvent(): {
  watch: (e: WatchEvent) => void;
  event: Promise<WatchEvent>;
  count: () => number;
} {
  let resolve!: (e: WatchEvent) => void;
  let count = 0;
  const event = new Promise<WatchEvent>((r) => (resolve = r));
  const watch = (e: WatchEvent) => {
    count += 1;
    resolve(e);
  };
  return { watch, event, count: () => count };
}

beforeAll(async () => {
  server = await startZooKeeper();
  zk = await connect();
}, 30_000);

afterAll(async () => {
  for (const client of clients) await client.close();
  await server.stop();
});

describe("znode CRUD", () => {
  test("create, getData, setData with versions, exists, getChildren, delete", async () => {
    expect(await zk.create("/crud", text("v0"))).toBe("/crud");
    const first = await zk.getData("/crud");
    expect(str(first.data)).toBe("v0");
    expect(first.stat.version).toBe(0);
    const stat = await zk.setData("/crud", text("v1"), { version: 0 });
    expect(stat.version).toBe(1);
    await expect(zk.setData("/crud", text("stale"), { version: 0 })).rejects.toBeInstanceOf(
      BadVersionError,
    );
    expect(str((await zk.getData("/crud")).data)).toBe("v1");
    await zk.create("/crud/a");
    await zk.create("/crud/b");
    expect((await zk.getChildren("/crud")).sort()).toEqual(["a", "b"]);
    expect((await zk.exists("/crud"))?.numChildren).toBe(2);
    await expect(zk.delete("/crud")).rejects.toBeInstanceOf(NotEmptyError);
    await zk.delete("/crud/a");
    await zk.delete("/crud/b", { version: 0 });
    await zk.delete("/crud", { version: 1 });
    expect(await zk.exists("/crud")).toBeNull();
  });

  test("typed errors carry the op and path", async () => {
    const missing = await zk.getData("/nope").catch((e) => e);
    expect(missing).toBeInstanceOf(NoNodeError);
    expect(missing.code).toBe(ZooKeeperCode.NO_NODE);
    expect(missing.path).toBe("/nope");
    expect(missing.op).toBe("getData");
    await zk.create("/dup");
    const dup = await zk.create("/dup").catch((e) => e);
    expect(dup).toBeInstanceOf(NodeExistsError);
    expect(dup.path).toBe("/dup");
    await expect(zk.create("/no/parent")).rejects.toBeInstanceOf(NoNodeError);
  });

  test("createParents and mkdirp create missing ancestors; mkdirp is idempotent", async () => {
    expect(await zk.create("/deep/a/b/leaf", text("x"), { createParents: true })).toBe(
      "/deep/a/b/leaf",
    );
    expect(str((await zk.getData("/deep/a/b/leaf")).data)).toBe("x");
    expect((await zk.getData("/deep/a")).data.byteLength).toBe(0);
    await zk.mkdirp("/deep/a/b/c");
    await zk.mkdirp("/deep/a/b/c");
    expect(await zk.exists("/deep/a/b/c")).not.toBeNull();
    const subtree = await zk.listSubtree("/deep");
    expect(subtree.slice(0, 3)).toEqual(["/deep", "/deep/a", "/deep/a/b"]);
    expect(subtree.slice(3).sort()).toEqual(["/deep/a/b/c", "/deep/a/b/leaf"]);
  });

  test("sequential znodes get increasing 10-digit suffixes", async () => {
    await zk.create("/seq");
    const a = await zk.create("/seq/n-", text(""), { mode: "persistent-sequential" });
    const b = await zk.create("/seq/n-", text(""), { mode: "persistent-sequential" });
    expect(a).toMatch(/^\/seq\/n-\d{10}$/);
    expect(Number(b.slice(-10))).toBe(Number(a.slice(-10)) + 1);
  });
});

describe("multi", () => {
  test("applies every operation in one transaction and returns per-op results", async () => {
    await zk.create("/m", text("old"));
    await zk.create("/m/gone");
    const results = await zk.multi([
      { type: "check", path: "/m", version: 0 },
      { type: "create", path: "/m/new", data: text("n") },
      { type: "setData", path: "/m", data: text("new"), version: 0 },
      { type: "delete", path: "/m/gone" },
    ]);
    expect(results.map((r) => r.type)).toEqual(["check", "create", "setData", "delete"]);
    expect(results[1]).toEqual({ type: "create", path: "/m/new" });
    expect(results[2].type === "setData" && results[2].stat.version).toBe(1);
    expect(await zk.getChildren("/m")).toEqual(["new"]);
    expect(str((await zk.getData("/m")).data)).toBe("new");
  });

  test("a failing operation rolls back the others and is named by index and path", async () => {
    await zk.create("/mf", text("a"));
    const error = await zk
      .multi([
        { type: "create", path: "/mf/x" },
        { type: "setData", path: "/mf", data: text("b") },
        { type: "create", path: "/mf" },
      ])
      .catch((e) => e);
    expect(error).toBeInstanceOf(NodeExistsError);
    expect(error.opIndex).toBe(2);
    expect(error.path).toBe("/mf");
    expect(await zk.exists("/mf/x")).toBeNull();
    expect(str((await zk.getData("/mf")).data)).toBe("a");
  });

  test("an expected version of 0 is enforced (the library alone treats 0 as 'any')", async () => {
    await zk.create("/v0");
    await zk.setData("/v0", text("1"));
    const error = await zk
      .multi([{ type: "setData", path: "/v0", data: text("2"), version: 0 }])
      .catch((e) => e);
    expect(error).toBeInstanceOf(BadVersionError);
    await expect(zk.multi([{ type: "delete", path: "/v0", version: 0 }])).rejects.toBeInstanceOf(
      BadVersionError,
    );
    await expect(zk.multi([{ type: "check", path: "/v0", version: 0 }])).rejects.toBeInstanceOf(
      BadVersionError,
    );
    expect(str((await zk.getData("/v0")).data)).toBe("1");
  });

  test("a request over the size limit is refused before it is sent; the session stays usable", async () => {
    const big = new Uint8Array(MAX_REQUEST_BYTES);
    const error = await zk.multi([{ type: "create", path: "/big", data: big }]).catch((e) => e);
    expect(error).toBeInstanceOf(ZooKeeperError);
    expect(error.code).toBe(ZooKeeperCode.BAD_ARGUMENTS);
    expect(await zk.exists("/big")).toBeNull();
    expect(zk.isConnected).toBe(true);
  });
});

describe("barrier", () => {
  test("is one write that changes nothing; barriers asked together share it", async () => {
    const czxid = async (path: string) => {
      await zk.create(path);
      return (await zk.exists(path))!.czxid;
    };
    const rootBefore = (await zk.exists("/"))!;
    const first = await czxid("/barrier-a");
    await Promise.all([zk.barrier(), zk.barrier(), zk.barrier()]);
    const second = await czxid("/barrier-b");
    // One transaction between the two creates: the three barriers were one write.
    expect(second - first).toBe(2n);
    await zk.barrier();
    await zk.barrier();
    expect((await czxid("/barrier-c")) - second).toBe(3n);
    const rootAfter = (await zk.exists("/"))!;
    expect(rootAfter.version).toBe(rootBefore.version);
    expect(rootAfter.mzxid).toBe(rootBefore.mzxid);
    // Under a chroot the barrier checks the chroot's root.
    const chrooted = await connect(`${server.connectString}/barrier-chroot`);
    await chrooted.barrier();
  });
});

describe("watches", () => {
  test("a data watch fires once with data-changed", async () => {
    await zk.create("/w", text("0"));
    const w = nextEvent();
    await zk.getData("/w", { watch: w.watch });
    await zk.setData("/w", text("1"));
    expect(await w.event).toEqual({ type: "data-changed", path: "/w" });
    await zk.setData("/w", text("2"));
    await zk.exists("/w");
    expect(w.count()).toBe(1);
  });

  test("a children watch fires on a new child; an exists watch fires on create and delete", async () => {
    await zk.create("/wc");
    const children = nextEvent();
    await zk.getChildren("/wc", { watch: children.watch });
    const created = nextEvent();
    expect(await zk.exists("/wc/kid", { watch: created.watch })).toBeNull();
    await zk.create("/wc/kid");
    expect(await children.event).toEqual({ type: "children-changed", path: "/wc" });
    expect(await created.event).toEqual({ type: "created", path: "/wc/kid" });
    const deleted = nextEvent();
    await zk.exists("/wc/kid", { watch: deleted.watch });
    await zk.delete("/wc/kid");
    expect(await deleted.event).toEqual({ type: "deleted", path: "/wc/kid" });
  });
});

describe("sessions", () => {
  test("an ephemeral znode vanishes when its session closes, and a watcher sees it go", async () => {
    const owner = await connect();
    await owner.create("/eph", text("me"), { mode: "ephemeral" });
    const stat = await zk.exists("/eph");
    expect(stat?.ephemeralOwner).toBe(owner.sessionId);
    expect(owner.sessionId).not.toBe(0n);
    const gone = nextEvent();
    await zk.exists("/eph", { watch: gone.watch });
    await owner.close();
    expect(await gone.event).toEqual({ type: "deleted", path: "/eph" });
    expect(await zk.exists("/eph")).toBeNull();
  });

  test("connecting to a port where nothing listens fails within the connect timeout", async () => {
    const [port] = await freePorts(1);
    const startedMs = Date.now();
    const options = { ...OPTIONS, connectTimeoutMs: 500 };
    const error = await ZooKeeperClient.connect(`127.0.0.1:${port}`, options).catch((e) => e);
    expect(error).toBeInstanceOf(ZooKeeperUnavailableError);
    expect(Date.now() - startedMs).toBeLessThan(2_000);
  });

  test("calls after close reject at once", async () => {
    const client = await connect();
    await client.close();
    await expect(client.exists("/")).rejects.toBeInstanceOf(ZooKeeperUnavailableError);
  });
});

describe("chroot", () => {
  test("a chrooted client works under its chroot, which is created when missing", async () => {
    const chrooted = await connect(`${server.connectString}/quill/cluster-a`);
    expect(await chrooted.create("/brokers", text("b"))).toBe("/brokers");
    expect(str((await zk.getData("/quill/cluster-a/brokers")).data)).toBe("b");
    expect(await chrooted.getChildren("/")).toEqual(["brokers"]);
    const results = await chrooted.multi([
      { type: "create", path: "/brokers/ids", data: text("") },
    ]);
    expect(results[0]).toEqual({ type: "create", path: "/brokers/ids" });
    const seq = await chrooted.create("/brokers/seq-", text(""), { mode: "ephemeral-sequential" });
    expect(seq).toMatch(/^\/brokers\/seq-\d{10}$/);
    const w = nextEvent();
    await chrooted.getData("/brokers", { watch: w.watch });
    await zk.setData("/quill/cluster-a/brokers", text("changed outside"));
    expect(await w.event).toEqual({ type: "data-changed", path: "/brokers" });
  });
});
