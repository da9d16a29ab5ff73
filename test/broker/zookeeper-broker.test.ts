/**
 * `quill serve --zookeeper` end to end with a real ZooKeeper: in-process brokers and broker
 * processes, Kafka's znodes as Kafka's tools would read them, kcat and kafkajs clients, topics
 * written into ZooKeeper by the test, broker id conflicts, restart after kill -9, chroots, and
 * ZooKeeper being down at startup or dying while the broker runs.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { startBroker } from "../../src/broker/broker.ts";
import { GROUP_METADATA_TOPIC } from "../../src/common/internal-topics.ts";
import { loadConfig } from "../../src/config/load-config.ts";
import { TRANSACTION_STATE_TOPIC } from "../../src/coordinator/transaction-log.ts";
import { ClusterStartupError } from "../../src/metadata/zookeeper-connection.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { kcat, kcatOk, stdoutText } from "../e2e/kcat-process.ts";
import {
  type InProcessBroker,
  internalTopicReplication,
  LineLogger,
  REPO_ROOT,
  removeDir,
  startInProcessBroker,
  tempDir,
} from "../support/broker-harness.ts";
import { ChildBroker } from "../support/child-broker.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { waitUntil } from "../support/wait-until.ts";
import { freePorts, startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";

const CLIENT_OPTIONS = { sessionTimeoutMs: 4_000, connectTimeoutMs: 5_000 };
/** FindCoordinator's key types. */
const GROUP_KEY = 0;
const TRANSACTION_KEY = 1;
const text = (b: Uint8Array) => new TextDecoder().decode(b);
const bytes = (s: string) => new TextEncoder().encode(s);

let server: ZooKeeperServer;
let chrootCount = 0;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  server = await startZooKeeper();
}, 60_000);

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  await server.stop();
});

function freshChroot(): string {
  chrootCount++;
  return `/broker-test-${chrootCount}`;
}

async function client(connectString: string): Promise<ZooKeeperClient> {
  const zk = await ZooKeeperClient.connect(connectString, CLIENT_OPTIONS);
  cleanups.push(() => zk.close());
  return zk;
}

async function inProcess(connectString: string, settings: Record<string, string> = {}) {
  const broker = await startInProcessBroker({
    settings: {
      "zookeeper.connect": connectString,
      "zookeeper.session.timeout.ms": "4000",
      ...settings,
    },
  });
  cleanups.push(() => broker.stop());
  return broker;
}

async function json(zk: ZooKeeperClient, path: string): Promise<Record<string, unknown>> {
  return JSON.parse(text((await zk.getData(path)).data));
}

const until = (condition: () => boolean | Promise<boolean>, timeoutMs = 10_000) =>
  waitUntil(condition, timeoutMs, "condition", 50);

/** Produces `count` keyed records with kcat and checks they all come back in order. */
async function produceAndConsume(bootstrap: string, topic: string, count: number, tag: string) {
  const lines = Array.from({ length: count }, (_, i) => `k${i}:${tag}-${i}`);
  const stdin = lines.join("\n") + "\n";
  await kcatOk(bootstrap, ["-P", "-t", topic, "-p", "0", "-K:"], { stdin });
  const consumed = await kcatOk(bootstrap, ["-C", "-t", topic, "-p", "0", "-e", "-f", "%k:%s\n"]);
  const values = stdoutText(consumed).trim().split("\n");
  expect(values.slice(-count)).toEqual(lines);
}

function kafkaAdmin(bootstrap: string) {
  const kafka = new Kafka({
    clientId: "zk-broker-test",
    brokers: [bootstrap],
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  cleanups.push(() => admin.disconnect());
  return admin;
}

describe("in-process broker with zookeeper.connect", () => {
  test("registers in Kafka's layout, and kcat produces and consumes", async () => {
    const chroot = freshChroot();
    const broker = await inProcess(`${server.connectString}${chroot}`);
    const zk = await client(`${server.connectString}${chroot}`);
    const registration = await json(zk, "/brokers/ids/0");
    expect(registration).toMatchObject({
      version: 5,
      host: "127.0.0.1",
      port: broker.port,
      endpoints: [`PLAINTEXT://127.0.0.1:${broker.port}`],
      listener_security_protocol_map: { PLAINTEXT: "PLAINTEXT" },
    });
    const clusterId = (await json(zk, "/cluster/id")).id;
    expect(broker.broker.services.clusterId).toBe(clusterId as string);
    await produceAndConsume(broker.bootstrap, "auto-created", 50, "a");
    const topic = await json(zk, "/brokers/topics/auto-created");
    expect(topic).toMatchObject({ version: 3, partitions: { 0: [0] } });
    expect(await json(zk, "/brokers/topics/auto-created/partitions/0/state")).toMatchObject({
      leader: 0,
      leader_epoch: 0,
      isr: [0],
    });
  }, 60_000);

  test("a topic made through the broker has znodes and config; deleting removes them", async () => {
    const chroot = freshChroot();
    const broker = await inProcess(`${server.connectString}${chroot}`);
    const zk = await client(`${server.connectString}${chroot}`);
    const admin = kafkaAdmin(broker.bootstrap);
    await admin.connect();
    const configEntries = [{ name: "retention.ms", value: "3600000" }];
    const topics = [{ topic: "made", numPartitions: 3, configEntries }];
    expect(await admin.createTopics({ topics })).toBe(true);
    expect(await zk.getChildren("/brokers/topics/made/partitions")).toEqual(["0", "1", "2"]);
    expect(await json(zk, "/config/topics/made")).toEqual({
      version: 1,
      config: { "retention.ms": "3600000" },
    });
    const described = await admin.describeCluster();
    expect(described.clusterId).toBe(broker.broker.services.clusterId);
    await admin.createPartitions({ topicPartitions: [{ topic: "made", count: 5 }] });
    expect(Object.keys((await json(zk, "/brokers/topics/made")).partitions as object)).toEqual([
      "0",
      "1",
      "2",
      "3",
      "4",
    ]);
    expect(await json(zk, "/brokers/topics/made/partitions/4/state")).toMatchObject({ leader: 0 });
    const retention = { name: "retention.ms", value: "60000" };
    await admin.alterConfigs({
      validateOnly: false,
      resources: [{ type: 2, name: "made", configEntries: [retention] }],
    });
    expect(await json(zk, "/config/topics/made")).toEqual({
      version: 1,
      config: { "retention.ms": "60000" },
    });
    await admin.deleteTopics({ topics: ["made"] });
    expect(await zk.exists("/brokers/topics/made")).toBeNull();
    expect(await zk.exists("/config/topics/made")).toBeNull();
  }, 60_000);

  test("a topic whose znodes the test writes appears in Metadata and takes records", async () => {
    const chroot = freshChroot();
    const broker = await inProcess(`${server.connectString}${chroot}`);
    const zk = await client(`${server.connectString}${chroot}`);
    const config = '{"version":1,"config":{"segment.bytes":"1048576"}}';
    await zk.create("/config/topics/external", bytes(config));
    const assignment =
      '{"version":3,"partitions":{"0":[0],"1":[0]},' +
      '"topic_id":"FdpeypFPmbmcBRf85YxqqA","adding_replicas":{},"removing_replicas":{}}';
    await zk.create("/brokers/topics/external", bytes(assignment));
    await until(() => broker.broker.services.metadataCache.topic("external") !== undefined);
    const metadata = stdoutText(await kcatOk(broker.bootstrap, ["-L", "-t", "external", "-J"]));
    const listed = JSON.parse(metadata).topics[0];
    expect(listed.topic).toBe("external");
    expect(listed.partitions.map((p: { partition: number }) => p.partition)).toEqual([0, 1]);
    const cached = broker.broker.services.metadataCache.topic("external");
    expect(cached?.configs["segment.bytes"]).toBe(1048576);
    await produceAndConsume(broker.bootstrap, "external", 20, "x");
    // A deletion marker from another process (as `kafka-topics --zookeeper --delete` wrote).
    await zk.create("/admin/delete_topics/external");
    await until(() => broker.broker.services.metadataCache.topic("external") === undefined);
    await until(() => !existsSync(join(broker.dataDir, "external-0")));
    expect(await zk.exists("/brokers/topics/external")).toBeNull();
  }, 60_000);

  test("a kcat -G group commits to /consumers/<group>/offsets and resumes from there", async () => {
    const chroot = freshChroot();
    const broker = await inProcess(`${server.connectString}${chroot}`, {
      "group.initial.rebalance.delay.ms": "0",
    });
    const zk = await client(`${server.connectString}${chroot}`);
    await kcatOk(broker.bootstrap, ["-P", "-t", "grouped", "-p", "0"], { stdin: "a\nb\nc\n" });
    const consume = () =>
      kcatOk(broker.bootstrap, [
        "-G",
        "readers",
        "-X",
        "auto.offset.reset=earliest",
        "-e",
        "-f",
        "%s\n",
        "grouped",
      ]);
    expect(stdoutText(await consume())).toBe("a\nb\nc\n");
    expect(text((await zk.getData("/consumers/readers/offsets/grouped/0")).data)).toBe("3");
    await kcatOk(broker.bootstrap, ["-P", "-t", "grouped", "-p", "0"], { stdin: "d\n" });
    expect(stdoutText(await consume())).toBe("d\n");
    expect(text((await zk.getData("/consumers/readers/offsets/grouped/0")).data)).toBe("4");
  }, 60_000);

  test("internal topics wait for as many live brokers as their replication factor", async () => {
    const connect = `${server.connectString}${freshChroot()}`;
    const settings = { ...internalTopicReplication(2), "group.initial.rebalance.delay.ms": "0" };
    const first = await inProcess(connect, { ...settings, "broker.id": "0" });
    const zk = await client(connect);
    const find = (keyType: number) =>
      requestOnce(first.port, ApiKey.FindCoordinator, 3, { key: "readers", keyType });
    // One broker of the two the topics need: Kafka's answer, and nothing created.
    for (const keyType of [GROUP_KEY, TRANSACTION_KEY]) {
      expect((await find(keyType)).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    }
    expect(await zk.exists(`/brokers/topics/${GROUP_METADATA_TOPIC}`)).toBeNull();
    expect(await zk.exists(`/brokers/topics/${TRANSACTION_STATE_TOPIC}`)).toBeNull();
    const refusal = "does not meet the required replication factor '2'";
    expect(first.logger.lines.some((line) => line.includes(refusal))).toBe(true);

    await inProcess(connect, { ...settings, "broker.id": "1" });
    for (const keyType of [GROUP_KEY, TRANSACTION_KEY]) {
      await until(async () => (await find(keyType)).errorCode === ErrorCode.NONE, 30_000);
    }
    for (const topic of [GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC]) {
      const { partitions } = (await json(zk, `/brokers/topics/${topic}`)) as {
        partitions: Record<string, number[]>;
      };
      const factors = new Set(Object.values(partitions).map((replicas) => replicas.length));
      expect([...factors]).toEqual([2]);
    }
  }, 60_000);

  test("a chroot keeps everything under it", async () => {
    const chroot = `${freshChroot()}/nested/kafka`;
    await inProcess(`${server.connectString}${chroot}`);
    const root = await client(server.connectString);
    expect(await root.exists(`${chroot}/brokers/ids/0`)).not.toBeNull();
    expect(await root.exists(`${chroot}/cluster/id`)).not.toBeNull();
    expect(await root.exists("/brokers")).toBeNull();
  }, 30_000);

  test("ZooKeeper unreachable at start: ClusterStartupError after the timeout", async () => {
    const [port] = await freePorts(1);
    const dataDir = tempDir();
    cleanups.push(() => removeDir(dataDir));
    const { config } = loadConfig({
      flags: [
        { key: "listeners", value: "127.0.0.1:0", flag: "--listen" },
        { key: "log.dirs", value: dataDir, flag: "--data-dir" },
        { key: "zookeeper.connect", value: `127.0.0.1:${port}`, flag: "--zookeeper" },
        { key: "zookeeper.connection.timeout.ms", value: "800", flag: "--set" },
      ],
    });
    const startedMs = Date.now();
    const error = await startBroker(config, new LineLogger()).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ClusterStartupError);
    expect(String(error)).toContain(`cannot reach ZooKeeper at 127.0.0.1:${port} within 800 ms`);
    expect(Date.now() - startedMs).toBeLessThan(5_000);
  }, 30_000);
});

describe("broker processes", () => {
  test("`bun src/main.ts serve --zookeeper` runs; a second one with its id exits 1", async () => {
    const chroot = freshChroot();
    const connectString = `${server.connectString}${chroot}`;
    const first = await ChildBroker.start({
      settings: { "broker.id": "7", "zookeeper.connect": connectString },
    });
    cleanups.push(() => first.remove());
    const dataDir = tempDir();
    cleanups.push(() => removeDir(dataDir));
    const second = Bun.spawn(
      [
        process.execPath,
        join(REPO_ROOT, "src", "main.ts"),
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        dataDir,
        "--broker-id",
        "7",
        "--zookeeper",
        connectString,
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    const timer = setTimeout(() => second.kill("SIGKILL"), 20_000);
    const [code, stderr] = await Promise.all([second.exited, new Response(second.stderr).text()]);
    clearTimeout(timer);
    expect(code).toBe(1);
    expect(stderr).toContain(
      `broker id 7 is registered by a live broker at 127.0.0.1:${first.port}`,
    );
    expect(first.running).toBe(true);
    await produceAndConsume(first.bootstrap, "still-served", 10, "s");
    expect(await first.terminate()).toBe(0);
    const zk = await client(connectString);
    expect(await zk.exists("/brokers/ids/7")).toBeNull();
  }, 60_000);

  test("restarted after kill -9, a broker waits for its old session, then registers", async () => {
    const chroot = freshChroot();
    const connectString = `${server.connectString}${chroot}`;
    // 6 s: at load 30 the restarted process took over 3 s to reach its registration, by which
    // time a 3 s session had expired and there was nothing to wait for.
    const settings = { "zookeeper.connect": connectString, "zookeeper.session.timeout.ms": "6000" };
    const first = await ChildBroker.start({ settings });
    cleanups.push(() => first.remove());
    await produceAndConsume(first.bootstrap, "survives", 30, "before");
    const zk = await client(connectString);
    const oldOwner = (await zk.getData("/brokers/ids/0")).stat.ephemeralOwner;
    await first.kill9();
    const restartedMs = Date.now();
    const second = await first.restart();
    cleanups.push(() => second.remove());
    const waitedMs = Date.now() - restartedMs;
    expect(second.stderrText).toContain("this broker's own endpoint");
    expect(second.stderrText).toContain("waiting up to");
    expect(second.stderrText).toMatch(/released \/brokers\/ids\/0 after \d+ ms/);
    expect(waitedMs).toBeGreaterThan(1_000);
    const { stat } = await zk.getData("/brokers/ids/0");
    expect(stat.ephemeralOwner).not.toBe(oldOwner);
    const consumed = await kcatOk(second.bootstrap, ["-C", "-t", "survives", "-e", "-f", "%s\n"]);
    expect(stdoutText(consumed).trim().split("\n")).toHaveLength(30);
    expect(await second.terminate()).toBe(0);
  }, 60_000);
});

describe("ZooKeeper failing under a running broker", () => {
  let broker: InProcessBroker;
  let own: ZooKeeperServer;

  test("produce and fetch work while ZooKeeper is down; the session resumes after", async () => {
    own = await startZooKeeper();
    cleanups.push(() => own.stop());
    broker = await inProcess(own.connectString);
    await produceAndConsume(broker.bootstrap, "steady", 20, "up");
    const zk = await client(own.connectString);
    const owner = (await zk.getData("/brokers/ids/0")).stat.ephemeralOwner;
    await zk.close();
    await own.kill();
    // Longer than the session timeout: nothing the broker does for clients may depend on ZooKeeper.
    const downUntilMs = Date.now() + 5_000;
    let round = 0;
    while (Date.now() < downUntilMs) {
      await produceAndConsume(broker.bootstrap, "steady", 10, `down-${round++}`);
    }
    expect(round).toBeGreaterThan(1);
    const metadata = await kcat(broker.bootstrap, ["-L", "-t", "steady"]);
    expect(metadata.exitCode).toBe(0);
    await own.restart();
    const after = await client(own.connectString);
    // ZooKeeper restores sessions from its log and gives them a fresh timeout.
    await until(async () => (await after.exists("/brokers/ids/0"))?.ephemeralOwner === owner);
    expect(broker.logger.lines.filter((l) => l.startsWith("ERROR"))).toEqual([]);
    // Metadata writes work again.
    const admin = kafkaAdmin(broker.bootstrap);
    await admin.connect();
    const topics = [{ topic: "after-restart", numPartitions: 1 }];
    expect(await admin.createTopics({ topics })).toBe(true);
    expect(await after.exists("/brokers/topics/after-restart")).not.toBeNull();
  }, 90_000);
});
