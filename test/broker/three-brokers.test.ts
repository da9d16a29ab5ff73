/**
 * Three `quill serve --zookeeper` processes and one real ZooKeeper on loopback: every broker
 * answers Metadata with the same brokers, controller and leaders; replicas spread over the
 * brokers; the controller is elected through /controller and /controller_epoch; kill -9 of a
 * partition leader moves leadership within the session timeout and kafkajs produces again;
 * kill -9 of the controller elects another; SIGTERM moves a broker's leaderships away first.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey, type MetadataResponse } from "../../src/protocol/generated/index.ts";
import { kcatOk, stdoutText } from "../e2e/kcat-process.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import {
  type Cluster,
  consistentMetadata,
  createTopic,
  metadata,
  produceAcksAll,
  produceWithKafkajs,
  SESSION_TIMEOUT_MS,
  startCluster,
  until,
} from "./cluster-harness.ts";

const text = (b: Uint8Array) => new TextDecoder().decode(b);

let zkServer: ZooKeeperServer;
let chrootCount = 0;

beforeAll(async () => {
  zkServer = await startZooKeeper();
}, 60_000);

afterAll(async () => {
  await zkServer.stop();
});

describe("three brokers on one ZooKeeper", () => {
  let cluster: Cluster;

  beforeAll(async () => {
    chrootCount++;
    cluster = await startCluster(`${zkServer.connectString}/three-${chrootCount}`);
  }, 60_000);

  afterAll(async () => {
    await cluster.close();
  });

  test("one controller in /controller and /controller_epoch; every broker answers the same", async () => {
    // A broker learns of the others from the controller's UpdateMetadata, a moment after start.
    await consistentMetadata(cluster, 3);
    await createTopic(cluster.brokers.get(2)!, "spread", 6);
    const m = await consistentMetadata(cluster, 3);
    const controller = JSON.parse(text((await cluster.zk.getData("/controller")).data));
    expect(controller).toMatchObject({
      version: 2,
      brokerid: m.controllerId,
      kraftControllerEpoch: -1,
    });
    expect(typeof controller.timestamp).toBe("string");
    expect(
      Number(text((await cluster.zk.getData("/controller_epoch")).data)),
    ).toBeGreaterThanOrEqual(1);
    const spread = m.topics.find((t) => t.name === "spread")!;
    expect(spread.partitions).toHaveLength(6);
    for (const p of spread.partitions) expect([...p.replicaNodes].sort()).toEqual([1, 2, 3]);
    // Kafka's round robin gives each broker two of the six leaderships.
    const leaders = spread.partitions.map((p) => p.leaderId);
    for (const id of [1, 2, 3]) expect(leaders.filter((l) => l === id)).toHaveLength(2);
    const cluster0 = await requestOnce(cluster.brokers.get(3)!.port, ApiKey.DescribeCluster, 0, {
      includeClusterAuthorizedOperations: false,
    });
    expect(cluster0.controllerId).toBe(m.controllerId);
    expect(cluster0.brokers.map((b) => b.brokerId).sort()).toEqual([1, 2, 3]);
  }, 60_000);

  test("kill -9 of a partition leader: a new leader from the ISR, and kafkajs produces again", async () => {
    await createTopic(cluster.brokers.get(1)!, "failover", 1);
    const before = await consistentMetadata(cluster, 3);
    const p0 = before.topics.find((t) => t.name === "failover")!.partitions[0]!;
    await produceWithKafkajs(cluster, "failover", ["before"]);
    const victim = p0.leaderId;
    const killedAtMs = Date.now();
    await cluster.brokers.get(victim)!.kill9();
    const after = await consistentMetadata(cluster, 2, SESSION_TIMEOUT_MS + 10_000);
    const moved = after.topics.find((t) => t.name === "failover")!.partitions[0]!;
    expect(moved.leaderId).not.toBe(victim);
    expect(moved.leaderEpoch).toBeGreaterThan(p0.leaderEpoch);
    expect(moved.isrNodes).not.toContain(victim);
    const state = JSON.parse(
      text((await cluster.zk.getData("/brokers/topics/failover/partitions/0/state")).data),
    );
    expect(state.leader).toBe(moved.leaderId);
    const sent = await produceWithKafkajs(cluster, "failover", ["after"]);
    expect(sent[0]!.errorCode).toBe(0);
    // kcat too, bootstrapping from the surviving brokers, and reading everything back.
    const bootstrap = [...cluster.brokers.values()]
      .filter((b) => b.running)
      .map((b) => b.bootstrap)
      .join(",");
    await kcatOk(bootstrap, ["-P", "-t", "failover", "-p", "0"], { stdin: "by-kcat\n" });
    const consumed = await kcatOk(bootstrap, ["-C", "-t", "failover", "-p", "0", "-e"]);
    expect(stdoutText(consumed).trim().split("\n")).toEqual(["before", "after", "by-kcat"]);
    console.error(`failover: new leader ${moved.leaderId} in ${Date.now() - killedAtMs} ms`);
    cluster.brokers.set(victim, await cluster.brokers.get(victim)!.restart());
    await consistentMetadata(cluster, 3, SESSION_TIMEOUT_MS * 2 + 10_000);
  }, 90_000);

  test("kill -9 of the controller: another broker becomes controller with a higher epoch", async () => {
    const before = await consistentMetadata(cluster, 3);
    const epochBefore = Number(text((await cluster.zk.getData("/controller_epoch")).data));
    const old = before.controllerId;
    await cluster.brokers.get(old)!.kill9();
    const after = await consistentMetadata(cluster, 2, SESSION_TIMEOUT_MS + 10_000);
    expect(after.controllerId).not.toBe(old);
    expect(Number(text((await cluster.zk.getData("/controller_epoch")).data))).toBeGreaterThan(
      epochBefore,
    );
    cluster.brokers.set(old, await cluster.brokers.get(old)!.restart());
    await consistentMetadata(cluster, 3, SESSION_TIMEOUT_MS * 2 + 10_000);
  }, 90_000);

  test("a leader paused past its session timeout is fenced: it acknowledges no acks=all write", async () => {
    await createTopic(cluster.brokers.get(1)!, "paused", 1, [
      { name: "min.insync.replicas", value: "2" },
    ]);
    const before = await consistentMetadata(cluster, 3);
    const old = before.topics.find((t) => t.name === "paused")!.partitions[0]!.leaderId;
    const paused = cluster.brokers.get(old)!;
    expect(await produceAcksAll(paused, "paused", 5_000)).toBe(ErrorCode.NONE);
    process.kill(paused.pid, "SIGSTOP");
    const others = [...cluster.brokers.values()].filter((b) => b !== paused);
    try {
      await until(
        async () => {
          const p = (await metadata(others[0]!)).topics.find((t) => t.name === "paused")!
            .partitions[0]!;
          return p.leaderId >= 0 && p.leaderId !== old ? true : undefined;
        },
        SESSION_TIMEOUT_MS + 10_000,
        "a new leader while the old one is paused",
      );
    } finally {
      process.kill(paused.pid, "SIGCONT");
    }
    // At once after SIGCONT, before it hears from the controller: not acknowledged.
    expect(await produceAcksAll(paused, "paused", 3_000)).not.toBe(ErrorCode.NONE);
    const leader = cluster.brokers.get(
      (await consistentMetadata(cluster, 3, SESSION_TIMEOUT_MS * 2 + 10_000)).topics.find(
        (t) => t.name === "paused",
      )!.partitions[0]!.leaderId,
    )!;
    expect(leader).not.toBe(paused);
    expect(await produceAcksAll(leader, "paused", 5_000)).toBe(ErrorCode.NONE);
    expect(await produceAcksAll(paused, "paused", 3_000)).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
  }, 60_000);

  test("SIGTERM: a broker's leaderships move away before it exits", async () => {
    // A fresh topic: every replica is in its ISR, so each leadership has somewhere to go.
    await createTopic(cluster.brokers.get(1)!, "handover", 3);
    const before = await consistentMetadata(cluster, 3);
    const handover = (m: MetadataResponse) => m.topics.find((t) => t.name === "handover")!;
    const leaving = handover(before).partitions[0]!.leaderId;
    const broker = cluster.brokers.get(leaving)!;
    const stopped = broker.terminate();
    const other = [...cluster.brokers.values()].find((b) => b !== broker)!;
    const moved = await until(
      async () => {
        const m = await metadata(other);
        const away = (p: MetadataResponse["topics"][number]["partitions"][number]) =>
          p.leaderId !== leaving && !p.isrNodes.includes(leaving);
        return handover(m).partitions.every(away) ? m : undefined;
      },
      15_000,
      `leaderships to move off broker ${leaving}`,
    );
    expect(await stopped).toBe(0);
    // Moved by the controller's ControlledShutdown handling, before the broker deregistered.
    const logs = [...cluster.brokers.values()].map((b) => b.stderrText).join("\n");
    expect(logs).toContain(`controller moves leaderships away from broker ${leaving}`);
    for (const p of handover(moved).partitions) {
      expect(p.leaderId).toBeGreaterThanOrEqual(0);
      expect(p.isrNodes).not.toContain(leaving);
    }
    expect(broker.stderrText).toContain(`controlled shutdown of broker ${leaving}`);
  }, 60_000);
});
