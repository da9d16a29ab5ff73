/**
 * Broker ids in ZooKeeper mode: generated from /brokers/seqid when broker.id is -1, kept across
 * restarts through meta.properties, and a data dir that belongs to another broker or cluster
 * refused at startup.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
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
