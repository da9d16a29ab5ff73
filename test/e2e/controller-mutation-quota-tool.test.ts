// controller_mutation_rate (KIP-599) with Kafka 3.9's own tools and clients against a broker in
// ZooKeeper mode: `kafka-configs.sh` sets it (Kafka's /config/clients znode) and refuses bad
// values, `kafka-topics.sh` (which asks the admin client not to retry) reports
// THROTTLING_QUOTA_EXCEEDED, the Java Admin client retries by default and succeeds once the
// bucket has refilled, and kafkajs (CreateTopics v3, before KIP-599) is never refused but waits.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { ensureKafkaDist } from "../../scripts/bench-vs-kafka/kafka-dist.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import {
  type InProcessBroker,
  removeDir,
  startInProcessBroker,
  tempDir,
} from "../support/broker-harness.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { runToolInJvm } from "../support/tool-jvm.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";

let zkServer: ZooKeeperServer;
let zk: ZooKeeperClient;
let broker: InProcessBroker;
let classpath: string;
let dir: string;

beforeAll(async () => {
  const dist = await ensureKafkaDist();
  if ("missing" in dist) throw new Error(`Kafka's tools are not available: ${dist.missing}`);
  classpath = dist.classpath;
  dir = tempDir("quill-mutation-quota-");
  zkServer = await startZooKeeper();
  const connect = `${zkServer.connectString}/mutations`;
  broker = await startInProcessBroker({
    settings: {
      "zookeeper.connect": connect,
      // One one-second sample: a bucket holds one second of mutations.
      "controller.quota.window.num": "1",
    },
  });
  zk = await ZooKeeperClient.connect(connect, { sessionTimeoutMs: 6000, connectTimeoutMs: 10_000 });
}, 180_000);

afterAll(async () => {
  await zk?.close();
  await broker?.stop();
  await zkServer?.stop();
  if (dir !== undefined) removeDir(dir);
});

async function run(args: string[]): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn(["java", "-cp", classpath, ...args], { stdout: "pipe", stderr: "pipe" });
  const [code, stdout, stderr] = await Promise.all([
    proc.exited,
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
  ]);
  return { code, out: stdout + stderr };
}

/** A Kafka tool's main class, in the suite's tool JVM: its exit code and its output. */
async function tool(main: string, args: string[]): Promise<{ code: number; out: string }> {
  const { code, stdout, stderr } = await runToolInJvm(classpath, main, args);
  return { code, out: stdout + stderr };
}

const kafkaConfigs = (...args: string[]) =>
  tool("kafka.admin.ConfigCommand", ["--bootstrap-server", broker.bootstrap, ...args]);

/** Sets a client-id's quota with a raw AlterClientQuotas (the first test uses the tool). */
async function setClientQuota(clientId: string, rate: number) {
  const res = await requestOnce(broker.port, ApiKey.AlterClientQuotas, 1, {
    entries: [
      {
        entity: [{ entityType: "client-id", entityName: clientId }],
        ops: [{ key: "controller_mutation_rate", value: rate, remove: false }],
      },
    ],
    validateOnly: false,
  });
  expect(res.entries[0]!.errorCode).toBe(ErrorCode.NONE);
}

function kafkaTopics(clientId: string, ...args: string[]) {
  const config = join(dir, `${clientId}.properties`);
  writeFileSync(config, `client.id=${clientId}\n`);
  const common = ["--bootstrap-server", broker.bootstrap, "--command-config", config];
  return tool("org.apache.kafka.tools.TopicCommand", [...common, ...args]);
}

test("kafka-configs.sh sets controller_mutation_rate in Kafka's znode and refuses bad values", async () => {
  const client = ["--entity-type", "clients", "--entity-name", "configured"];
  const set = await kafkaConfigs(
    "--alter",
    "--add-config",
    "controller_mutation_rate=2.5",
    ...client,
  );
  expect(set.out).toContain("Completed updating config");
  expect(set.code).toBe(0);
  const { data } = await zk.getData("/config/clients/configured");
  expect(JSON.parse(new TextDecoder().decode(data))).toEqual({
    version: 1,
    config: { controller_mutation_rate: "2.5" },
  });
  const [described, notNumber, zero] = await Promise.all([
    kafkaConfigs("--describe", ...client),
    kafkaConfigs("--alter", "--add-config", "controller_mutation_rate=fast", ...client),
    kafkaConfigs("--alter", "--add-config", "controller_mutation_rate=0", ...client),
  ]);
  expect(described.out).toContain("controller_mutation_rate=2.5");
  expect(notNumber.code).not.toBe(0);
  expect(notNumber.out).toContain("Cannot parse quota configuration value");
  expect(zero.code).not.toBe(0);
  expect(zero.out).toContain("InvalidRequestException");
}, 120_000);

test("kafka-topics.sh is refused once its bucket is overdrawn; the Java Admin retries until it refills", async () => {
  await setClientQuota("topics-tool", 0.1);
  await setClientQuota("java-admin", 2);
  await Promise.all([
    (async () => {
      // 0.1 token less 20 partitions: refused for 199 s, far longer than a JVM start even on a
      // loaded machine (one took 20 s at load average 25).
      const big = await kafkaTopics(
        ...["topics-tool", "--create", "--topic", "tool-big", "--partitions", "20"],
      );
      expect(big.out).toContain("Created topic tool-big.");
      const refused = await kafkaTopics("topics-tool", "--create", "--topic", "tool-refused");
      expect(refused.out).toContain(
        "Error while executing topic command : The throttling quota has been exceeded.",
      );
      expect(refused.code).not.toBe(0);
    })(),
    (async () => {
      const program = join(import.meta.dir, "clients", "MutationQuotaAdmin.java");
      const admin = await run([program, broker.bootstrap, "java-admin", "java", "20"]);
      expect(admin.out).toContain("created java-big");
      // 2 tokens less 20 partitions: 9 s to refill, less the time since.
      const refused = /refused throttleTimeMs=(\d+) The throttling quota has been exceeded/.exec(
        admin.out,
      );
      expect(refused?.[1]).toBeDefined();
      expect(Number(refused![1])).toBeGreaterThan(1000);
      const retried = /created java-retried after waitedMs=(\d+)/.exec(admin.out);
      expect(retried?.[1]).toBeDefined();
      expect(Number(retried![1])).toBeGreaterThan(1000);
      expect(admin.code).toBe(0);
    })(),
  ]);
  const cache = broker.broker.services.metadataCache;
  expect(cache.topic("tool-refused")).toBeUndefined();
  expect(cache.topic("java-refused")).toBeUndefined();
  expect(cache.topic("java-retried")).toBeDefined();
}, 120_000);

test("kafkajs (CreateTopics v3, before KIP-599) is never refused: its requests wait", async () => {
  await setClientQuota("kafkajs-admin", 4);
  const kafka = new Kafka({
    clientId: "kafkajs-admin",
    brokers: [broker.bootstrap],
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const startMs = performance.now();
    // createTopics asks Metadata for the new topics' leaders on the same connection after the
    // CreateTopics answer, so the first call already waits out the throttle.
    const big = { topic: "kafkajs-big", numPartitions: 20, replicationFactor: 1 };
    expect(await admin.createTopics({ topics: [big] })).toBe(true);
    const small = { topic: "kafkajs-small", numPartitions: 1, replicationFactor: 1 };
    expect(await admin.createTopics({ topics: [small] })).toBe(true);
    // 4 tokens less 20 partitions: throttled for 4 s less the time the 20 partitions took to
    // create (under load, up to a second or so); the second topic overdraws it further.
    expect(performance.now() - startMs).toBeGreaterThan(2000);
    const throttled = broker.broker.services.clientQuotas
      .throttleTimes()
      .find((t) => t.type === "controller_mutation_rate" && t.clientId === "kafkajs-admin");
    expect(throttled?.ms).toBeGreaterThan(2000);
  } finally {
    await admin.disconnect();
  }
}, 60_000);
