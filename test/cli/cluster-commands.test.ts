/**
 * `quill cluster info|health` and `quill topic describe` against three `quill serve
 * --zookeeper` brokers: every broker and the controller listed, replicas and ISR of a
 * replicated topic; after kill -9 of a broker, health reports the under-replicated partitions
 * and exits 5.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import {
  type Cluster,
  consistentMetadata,
  SESSION_TIMEOUT_MS,
  startCluster,
  until,
} from "../broker/cluster-harness.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import { type Json, quill, quillJson } from "./quill-client.ts";

let zk: ZooKeeperServer;
let cluster: Cluster;

beforeAll(async () => {
  zk = await startZooKeeper();
  cluster = await startCluster(`${zk.connectString}/quill-cli`);
  await consistentMetadata(cluster, 3);
}, 90_000);

afterAll(async () => {
  await cluster.close();
  await zk.stop();
});

test("three brokers: info, describe and health, then kill -9 of one makes health exit 5", async () => {
  const b = ["-b", [...cluster.brokers.values()].map((x) => x.bootstrap).join(",")];
  const info = await quillJson(["cluster", "info", ...b]);
  expect(info.brokers.map((x: Json) => x.id)).toEqual([1, 2, 3]);
  expect([1, 2, 3]).toContain(info.controller);
  await quillJson(["topic", "create", "replicated", "-p", "3", "-r", "3", ...b]);
  await consistentMetadata(cluster, 3);
  const produced = await quill(["topic", "produce", "replicated", "-a", "all", ...b], {
    stdin: "one\ntwo\nthree\nfour\nfive\nsix\n",
  });
  expect(produced.code).toBe(0);
  const described = await quillJson(["topic", "describe", "replicated", ...b]);
  for (const p of described.partitions) {
    expect([...p.replicas].sort()).toEqual([1, 2, 3]);
    expect([...p.isr].sort()).toEqual([1, 2, 3]);
    expect(p.replicas).toContain(p.leader);
    // DescribeLogDirs from every broker: acks=all put the same batches on each replica.
    expect(Object.keys(p.replicaSizeBytes).sort()).toEqual(["1", "2", "3"]);
    expect(new Set(Object.values(p.replicaSizeBytes))).toEqual(new Set([p.sizeBytes]));
  }
  const totalBytes = described.partitions.reduce((n: number, p: Json) => n + p.sizeBytes, 0);
  expect(totalBytes).toBeGreaterThan(6 * 3);
  const healthy = await quillJson(["cluster", "health", ...b]);
  expect(healthy).toMatchObject({
    healthy: true,
    brokers: [1, 2, 3],
    underReplicatedPartitions: [],
  });

  const victim = [1, 2, 3].find((id) => id !== info.controller)!;
  await cluster.brokers.get(victim)!.kill9();
  const survivors = [
    "-b",
    [...cluster.brokers.entries()]
      .filter(([id]) => id !== victim)
      .map(([, x]) => x.bootstrap)
      .join(","),
  ];
  const report = await until(
    async () => {
      const r = await quill(["cluster", "health", "--format", "json", ...survivors]);
      const parsed = JSON.parse(r.stdout);
      return r.code === 5 && parsed.underReplicatedPartitions.length === 3
        ? { r, parsed }
        : undefined;
    },
    SESSION_TIMEOUT_MS * 5,
    "health to report the killed broker",
  );
  expect(report.parsed).toMatchObject({ healthy: false, offlinePartitions: [] });
  expect(report.parsed.underReplicatedPartitions.sort()).toEqual([
    "replicated/0",
    "replicated/1",
    "replicated/2",
  ]);
  const table = await quill(["cluster", "health", ...survivors]);
  expect(table.code).toBe(5);
  expect(table.stdout).toContain("healthy: no");
}, 120_000);
