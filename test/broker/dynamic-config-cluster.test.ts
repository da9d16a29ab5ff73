/**
 * Dynamic broker configs on three brokers with a real ZooKeeper, changed and read with Kafka
 * 3.9's own `kafka-configs.sh` (kafka.admin.ConfigCommand from Maven Central): the cluster-wide
 * default reaches every broker through `/config/brokers/<default>`, one broker's value only that
 * broker; the znodes and the `/config/changes` notification are Kafka's; topics without an
 * override show the new default; a read-only key is refused as Kafka refuses it.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ensureKafkaDist } from "../../scripts/bench-vs-kafka/kafka-dist.ts";
import { runToolInJvm } from "../support/tool-jvm.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import {
  type Cluster,
  consistentMetadata,
  createTopic,
  startCluster,
  until,
} from "./cluster-harness.ts";

let zkServer: ZooKeeperServer;
let cluster: Cluster;
let classpath: string;

beforeAll(async () => {
  const dist = await ensureKafkaDist();
  if ("missing" in dist) throw new Error(`Kafka's tools are not available: ${dist.missing}`);
  classpath = dist.classpath;
  zkServer = await startZooKeeper();
  cluster = await startCluster(`${zkServer.connectString}/dynamic`);
  await consistentMetadata(cluster, 3);
  await createTopic(cluster.brokers.get(1)!, "follows-default", 1);
}, 120_000);

afterAll(async () => {
  await cluster?.close();
  await zkServer?.stop();
});

async function kafkaConfigs(...args: string[]): Promise<{ code: number; out: string }> {
  const bootstrap = cluster.brokers.get(1)!.bootstrap;
  const tool = "kafka.admin.ConfigCommand";
  const run = await runToolInJvm(classpath, tool, ["--bootstrap-server", bootstrap, ...args]);
  const { code, stdout, stderr } = run;
  return { code, out: stdout + stderr };
}

const brokers = (...args: string[]) => kafkaConfigs("--entity-type", "brokers", ...args);

async function znode(path: string): Promise<unknown> {
  const { data } = await cluster.zk.getData(path);
  return JSON.parse(new TextDecoder().decode(data));
}

test("--entity-default reaches every broker, with Kafka's znodes and notification", async () => {
  const alter = await brokers(
    "--entity-default",
    "--alter",
    "--add-config",
    "log.retention.ms=3600000,message.max.bytes=2000000",
  );
  expect(alter.out).toContain("Completed updating default config for brokers in the cluster.");
  expect(await znode("/config/brokers/<default>")).toEqual({
    version: 1,
    config: { "log.retention.ms": "3600000", "message.max.bytes": "2000000" },
  });
  const changes = await cluster.zk.getChildren("/config/changes");
  const notes = await Promise.all(
    changes.filter((c) => c.startsWith("config_change_")).map((c) => znode(`/config/changes/${c}`)),
  );
  expect(notes).toContainEqual({ version: 2, entity_path: "brokers/<default>" });
  const described = await brokers("--entity-default", "--describe");
  expect(described.out).toContain(
    "log.retention.ms=3600000 sensitive=false " +
      "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=3600000}",
  );
  // Broker 3 learnt it from ZooKeeper (the tool asks broker 3 itself for its configs).
  const three = await until(
    async () => {
      const r = await brokers("--entity-name", "3", "--describe", "--all");
      return r.out.includes("message.max.bytes=2000000") ? r.out : undefined;
    },
    30_000,
    "broker 3 to see the new default",
  );
  expect(three).toContain(
    "message.max.bytes=2000000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:" +
      "message.max.bytes=2000000, DEFAULT_CONFIG:message.max.bytes=1048588}",
  );
  const topic = await kafkaConfigs(
    "--entity-type",
    "topics",
    "--entity-name",
    "follows-default",
    "--describe",
    "--all",
  );
  expect(topic.out).toContain("retention.ms=3600000 sensitive=false synonyms={DYNAMIC_DEFAULT");
}, 120_000);

test("--entity-name sets one broker only; deleting falls back; read-only keys refused", async () => {
  const alter = await brokers(
    "--entity-name",
    "2",
    "--alter",
    "--add-config",
    "message.max.bytes=3000000,leader.replication.throttled.rate=50000000",
  );
  expect(alter.out).toContain("Completed updating config for broker 2.");
  expect(await znode("/config/brokers/2")).toMatchObject({
    config: { "leader.replication.throttled.rate": "50000000" },
  });
  const two = await brokers("--entity-name", "2", "--describe");
  expect(two.out).toContain("Dynamic configs for broker 2 are:");
  expect(two.out).toContain(
    "message.max.bytes=3000000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:" +
      "message.max.bytes=3000000, DYNAMIC_DEFAULT_BROKER_CONFIG:message.max.bytes=2000000, " +
      "DEFAULT_CONFIG:message.max.bytes=1048588}",
  );
  const one = await brokers("--entity-name", "1", "--describe");
  expect(one.out).not.toContain("message.max.bytes=3000000");
  const removed = await brokers(
    "--entity-name",
    "2",
    "--alter",
    "--delete-config",
    "message.max.bytes",
  );
  expect(removed.code).toBe(0);
  const after = await brokers("--entity-name", "2", "--describe", "--all");
  expect(after.out).toContain("message.max.bytes=2000000 sensitive=false");
  const refused = await brokers("--entity-name", "1", "--alter", "--add-config", "log.dirs=/x");
  expect(refused.code).not.toBe(0);
  expect(refused.out).toContain("Cannot update these configs dynamically: Set(log.dirs)");
}, 120_000);
