/**
 * Bounded shutdown (issue 12): every broker of a three-broker cluster gets SIGTERM, and
 * ZooKeeper stops a moment later. The controller must not keep retrying LeaderAndIsr to
 * brokers that already left, nor wait for a ZooKeeper that is gone: each broker exits 0 within
 * the documented bound (zookeeper.session.timeout.ms + 30 s, see shutdownBoundMs).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { shutdownBoundMs } from "../../src/cli/serve.ts";
import { loadConfig } from "../../src/config/load-config.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import {
  type Cluster,
  consistentMetadata,
  createTopic,
  SESSION_TIMEOUT_MS,
  startCluster,
} from "./cluster-harness.ts";

let zkServer: ZooKeeperServer;
let cluster: Cluster;

beforeAll(async () => {
  zkServer = await startZooKeeper();
  cluster = await startCluster(`${zkServer.connectString}/bounded`);
  await consistentMetadata(cluster, 3);
  await createTopic(cluster.brokers.get(1)!, "replicated", 6);
  await consistentMetadata(cluster, 3, 30_000);
}, 90_000);

afterAll(async () => {
  await cluster?.close().catch(() => {});
  await zkServer?.stop();
}, 30_000);

test("SIGTERM to all brokers, ZooKeeper stopped a moment later: each exits 0 within the bound", async () => {
  const settings = [
    { key: "zookeeper.connect", value: "x:1", flag: "--set" as const },
    {
      key: "zookeeper.session.timeout.ms",
      value: String(SESSION_TIMEOUT_MS),
      flag: "--set" as const,
    },
  ];
  const boundMs = shutdownBoundMs(loadConfig({ flags: settings }).config);
  expect(boundMs).toBe(SESSION_TIMEOUT_MS + 30_000);
  const startedMs = Date.now();
  const brokers = [...cluster.brokers.values()];
  for (const b of brokers) b.proc.kill("SIGTERM");
  const exits = brokers.map((b) => b.exited.then((code) => ({ code, ms: Date.now() - startedMs })));
  await Bun.sleep(1_000);
  await zkServer.stop();
  const results = await Promise.all(exits);
  for (const { code, ms } of results) {
    expect(code).toBe(0);
    expect(ms).toBeLessThan(boundMs);
  }
  await Bun.sleep(200);
  for (const b of brokers) expect(b.stderrText).toContain("stopped cleanly");
}, 120_000);
