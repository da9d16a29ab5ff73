/**
 * Broker ids and meta.properties. In ZooKeeper mode: generated from /brokers/seqid when
 * broker.id is -1, kept across restarts through meta.properties, and a data dir that belongs to
 * another broker or cluster refused at startup. The embedded broker records the file too.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ClusterStartupError } from "../../src/metadata/zookeeper-connection.ts";
import { removeDir, startInProcessBroker, tempDir } from "../support/broker-harness.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";

let zkServer: ZooKeeperServer;

beforeAll(async () => {
  zkServer = await startZooKeeper();
}, 60_000);

afterAll(async () => {
  await zkServer.stop();
});

function start(chroot: string, dataDir: string, brokerId: string) {
  return startInProcessBroker({
    dataDir,
    settings: {
      "zookeeper.connect": `${zkServer.connectString}${chroot}`,
      "zookeeper.session.timeout.ms": "4000",
      "broker.id": brokerId,
    },
  });
}

async function startError(chroot: string, dataDir: string, brokerId: string): Promise<unknown> {
  try {
    const broker = await start(chroot, dataDir, brokerId);
    await broker.stop();
  } catch (error) {
    return error;
  }
  return null;
}

test("broker.id -1: ids above 1000 from /brokers/seqid, each broker its own, kept on restart", async () => {
  const [dirA, dirB] = [tempDir(), tempDir()];
  try {
    const a = await start("/ids-generated", dirA, "-1");
    const b = await start("/ids-generated", dirB, "-1");
    const [idA, idB] = [a.broker.services.brokerId, b.broker.services.brokerId];
    expect(idA).toBeGreaterThan(1000);
    expect(idB).toBeGreaterThan(1000);
    expect(idA).not.toBe(idB);
    const meta = readFileSync(join(dirA, "meta.properties"), "utf8");
    expect(meta).toContain(`broker.id=${idA}`);
    expect(meta).toContain(`cluster.id=${a.broker.services.clusterId}`);
    await a.stop();
    const again = await start("/ids-generated", dirA, "-1");
    expect(again.broker.services.brokerId).toBe(idA);
    await again.stop();
    await b.stop();
  } finally {
    removeDir(dirA);
    removeDir(dirB);
  }
}, 60_000);

test("a data dir recorded for another broker id or another cluster is refused", async () => {
  const dir = tempDir();
  try {
    const first = await start("/ids-fixed", dir, "4");
    await first.stop();
    const otherId = await startError("/ids-fixed", dir, "5");
    expect(otherId).toBeInstanceOf(ClusterStartupError);
    expect(String(otherId)).toContain("does not match the id 4");
    const otherCluster = await startError("/ids-elsewhere", dir, "4");
    expect(otherCluster).toBeInstanceOf(ClusterStartupError);
    expect(String(otherCluster)).toContain("belongs to cluster");
  } finally {
    removeDir(dir);
  }
}, 60_000);

test("meta.properties records the data format version; a newer one is refused", async () => {
  const dir = tempDir();
  const file = join(dir, "meta.properties");
  try {
    const first = await start("/format", dir, "6");
    await first.stop();
    const written = readFileSync(file, "utf8");
    expect(written).toContain("\nversion=0\n");
    expect(written).toContain("\nquill.data.format.version=1\n");
    // A dir written before the version was recorded opens, and gets the record.
    writeFileSync(file, written.replace("quill.data.format.version=1\n", ""));
    const older = await start("/format", dir, "6");
    await older.stop();
    expect(readFileSync(file, "utf8")).toContain("\nquill.data.format.version=1\n");
    writeFileSync(file, written.replace("format.version=1", "format.version=2"));
    const newer = await startError("/format", dir, "6");
    expect(newer).toBeInstanceOf(ClusterStartupError);
    expect(String(newer)).toContain("records data format version 2, written by a newer Quill");
    expect(readFileSync(file, "utf8")).toContain("format.version=2");
  } finally {
    removeDir(dir);
  }
}, 60_000);

test("the embedded broker records meta.properties too, and refuses a newer data dir", async () => {
  const dir = tempDir();
  const file = join(dir, "meta.properties");
  try {
    const first = await startInProcessBroker({ dataDir: dir });
    await first.stop();
    const written = readFileSync(file, "utf8");
    expect(written).toContain("\nbroker.id=0\n");
    expect(written).toContain("\nquill.data.format.version=1\n");
    expect(written).toMatch(/\ncluster\.id=\S+\n/);
    const again = await startInProcessBroker({ dataDir: dir });
    await again.stop();
    expect(readFileSync(file, "utf8")).toBe(written);
    writeFileSync(file, written.replace("format.version=1", "format.version=2"));
    const newer = await startInProcessBroker({ dataDir: dir }).then(
      async (broker) => {
        await broker.stop();
        return null;
      },
      (error: unknown) => error,
    );
    expect(newer).toBeInstanceOf(ClusterStartupError);
    expect(String(newer)).toContain("records data format version 2, written by a newer Quill");
  } finally {
    removeDir(dir);
  }
}, 60_000);
