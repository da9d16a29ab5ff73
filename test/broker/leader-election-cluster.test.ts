/**
 * Leader elections on three brokers with a real ZooKeeper, run by Kafka 3.9's own tools as Java
 * processes: `kafka-leader-election.sh` (LeaderElectionCommand) preferred and unclean, and
 * `kafka-topics.sh --describe --under-replicated-partitions` (TopicCommand). Brokers are
 * killed with kill -9 and restarted on their data dirs.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import {
  type Cluster,
  consistentMetadata,
  createTopicWithAssignment,
  metadata,
  runningBootstrap,
  startCluster,
  until,
} from "./cluster-harness.ts";
import { kafkaClasspath, LEADER_ELECTION, runKafkaTool, TOPICS } from "./kafka-tool.ts";

let zkServer: ZooKeeperServer;
let cluster: Cluster;

beforeAll(async () => {
  zkServer = await startZooKeeper();
  [cluster] = await Promise.all([
    startCluster(`${zkServer.connectString}/elect`, { "auto.leader.rebalance.enable": "false" }),
    kafkaClasspath(),
  ]);
  await consistentMetadata(cluster, 3);
}, 240_000);

afterAll(async () => {
  await cluster?.close();
  await zkServer?.stop();
}, 30_000);

const bootstrap = () => runningBootstrap(cluster);

const createTopic = (name: string, assignment: number[][]) =>
  createTopicWithAssignment(cluster.brokers.get(1)!, name, assignment);

/** The partition as a running broker's Metadata shows it, once `ok` holds for it. */
async function partitionWhere(
  topic: string,
  partition: number,
  ok: (p: { leaderId: number; isrNodes: number[] }) => boolean,
  what: string,
) {
  return await until(
    async () => {
      const broker = [...cluster.brokers.values()].find((b) => b.running)!;
      const t = (await metadata(broker)).topics.find((x) => x.name === topic);
      const p = t?.partitions.find((x) => x.partitionIndex === partition);
      return p !== undefined && ok(p) ? p : undefined;
    },
    60_000,
    what,
    200,
  );
}

async function restart(id: number): Promise<void> {
  cluster.brokers.set(id, await cluster.brokers.get(id)!.restart());
}

test("kafka-leader-election.sh preferred moves leadership back, then says none is needed", async () => {
  await createTopic("preferred", [[1, 2]]);
  await partitionWhere("preferred", 0, (p) => p.leaderId === 1, "broker 1 leads");
  await cluster.brokers.get(1)!.kill9();
  await partitionWhere("preferred", 0, (p) => p.leaderId === 2, "broker 2 leads");
  await restart(1);
  await partitionWhere("preferred", 0, (p) => p.isrNodes.includes(1), "broker 1 back in the ISR");
  const args = ["--bootstrap-server", bootstrap(), "--election-type", "preferred"];
  const target = ["--topic", "preferred", "--partition", "0"];
  const first = await runKafkaTool(LEADER_ELECTION, [...args, ...target]);
  expect(first.stdout).toContain("Successfully completed leader election (PREFERRED)");
  expect(first.code).toBe(0);
  await partitionWhere("preferred", 0, (p) => p.leaderId === 1, "broker 1 leads again");
  const again = await runKafkaTool(LEADER_ELECTION, [...args, ...target]);
  expect(again.stdout).toContain("Valid replica already elected for partitions preferred-0");
}, 180_000);

test("unclean election: an offline partition stays offline by default, the tool elects a live replica", async () => {
  await createTopic("unclean", [[3, 1]]);
  await partitionWhere("unclean", 0, (p) => p.leaderId === 3 && p.isrNodes.length === 2, "ISR");
  await cluster.brokers.get(1)!.kill9();
  await partitionWhere("unclean", 0, (p) => p.isrNodes.join() === "3", "broker 1 left the ISR");
  await cluster.brokers.get(3)!.kill9();
  await restart(1);
  // The ISR's only member (3) is dead and 1 is out of sync: without unclean election, no leader.
  await partitionWhere("unclean", 0, (p) => p.leaderId === -1, "the partition is offline");
  await Bun.sleep(1_000);
  expect((await partitionWhere("unclean", 0, () => true, "state")).leaderId).toBe(-1);
  const elected = await runKafkaTool(LEADER_ELECTION, [
    "--bootstrap-server",
    bootstrap(),
    "--election-type",
    "unclean",
    "--topic",
    "unclean",
    "--partition",
    "0",
  ]);
  expect(elected.stdout).toContain("Successfully completed leader election (UNCLEAN)");
  await partitionWhere("unclean", 0, (p) => p.leaderId === 1, "broker 1 leads uncleanly");
  const described = await runKafkaTool(TOPICS, [
    "--bootstrap-server",
    bootstrap(),
    "--describe",
    "--under-replicated-partitions",
  ]);
  expect(described.code).toBe(0);
  const lines = described.stdout.split("\n").filter((l) => l.includes("Topic: unclean"));
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/Leader: 1\s+Replicas: 3,1\s+Isr: 1/);
  await restart(3);
}, 180_000);
