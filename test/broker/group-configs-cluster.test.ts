/**
 * Group configs (Kafka 4's GROUP resource) on three brokers with a real ZooKeeper, set and read
 * with Kafka 4.4's `kafka-configs.sh --entity-type groups` (org.apache.kafka.tools.ConfigCommand):
 * the value is kept in `/config/groups/<group>` with a `/config/changes` notice, and another
 * broker follows the notice and describes (and applies) it; an out-of-range value is refused.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ensureTools4, runTool4 } from "../support/kafka4-tools.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import { type Cluster, consistentMetadata, startCluster, until } from "./cluster-harness.ts";

let zkServer: ZooKeeperServer;
let cluster: Cluster;

beforeAll(async () => {
  ensureTools4();
  zkServer = await startZooKeeper();
  cluster = await startCluster(`${zkServer.connectString}/group-configs`);
  await consistentMetadata(cluster, 3);
}, 120_000);

afterAll(async () => {
  await cluster?.close();
  await zkServer?.stop();
});

const kafkaConfigs = (brokerId: number, ...args: string[]) =>
  runTool4("org.apache.kafka.tools.ConfigCommand", [
    "--bootstrap-server",
    cluster.brokers.get(brokerId)!.bootstrap,
    "--entity-type",
    "groups",
    "--entity-name",
    "orders",
    ...args,
  ]);

async function znode(path: string): Promise<unknown> {
  const { data } = await cluster.zk.getData(path);
  return JSON.parse(new TextDecoder().decode(data));
}

test("kafka-configs.sh --entity-type groups: stored in ZooKeeper, followed by every broker", async () => {
  const config = "consumer.session.timeout.ms=50000,share.delivery.count.limit=3";
  const alter = await kafkaConfigs(1, "--alter", "--add-config", config);
  expect(alter.code).toBe(0);
  expect(alter.out).toContain("Completed updating config for group orders.");
  expect(await znode("/config/groups/orders")).toEqual({
    version: 1,
    config: { "consumer.session.timeout.ms": "50000", "share.delivery.count.limit": "3" },
  });
  const notices = await cluster.zk.getChildren("/config/changes");
  const paths = await Promise.all(
    notices.map(async (n) => (await znode(`/config/changes/${n}`)) as { entity_path: string }),
  );
  expect(paths.map((p) => p.entity_path)).toContain("groups/orders");
  // Broker 3 learns of it from the notice.
  const described = await until(
    async () => {
      const d = await kafkaConfigs(3, "--describe");
      return d.out.includes("consumer.session.timeout.ms=50000") ? d.out : undefined;
    },
    30_000,
    "broker 3 describes the group's config",
  );
  expect(described).toContain("share.delivery.count.limit=3");

  const bad = await kafkaConfigs(2, "--alter", "--add-config", "share.delivery.count.limit=42");
  expect(bad.code).not.toBe(0);
  expect(bad.out).toContain("share.delivery.count.limit must be in the range 2 to 10 inclusive.");
}, 120_000);
