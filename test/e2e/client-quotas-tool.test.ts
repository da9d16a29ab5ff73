// Client quotas on two brokers with a real ZooKeeper, set and described with Kafka 3.9's own
// `kafka-configs.sh` (kafka.admin.ConfigCommand from Maven Central, AlterClientQuotas and
// DescribeClientQuotas on the wire): Kafka's znodes and /config/changes notices, a quota set
// through broker 1 applied by broker 2 with Kafka's precedence, and a kafkajs producer held to
// its producer_byte_rate while another client-id is not.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ensureKafkaDist } from "../../scripts/bench-vs-kafka/kafka-dist.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { until } from "../broker/cluster-harness.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { KafkaClient } from "../support/kafka-client.ts";
import { runToolInJvm } from "../support/tool-jvm.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";

let zkServer: ZooKeeperServer;
let zk: ZooKeeperClient;
let brokers: InProcessBroker[];
let classpath: string;

beforeAll(async () => {
  const dist = await ensureKafkaDist();
  if ("missing" in dist) throw new Error(`Kafka's tools are not available: ${dist.missing}`);
  classpath = dist.classpath;
  zkServer = await startZooKeeper();
  const connect = `${zkServer.connectString}/quotas`;
  brokers = await Promise.all(
    [1, 2].map((id) =>
      startInProcessBroker({
        settings: {
          "broker.id": String(id),
          "zookeeper.connect": connect,
          // Two one-second samples: rates react within a second instead of Kafka's ten.
          "quota.window.num": "2",
        },
      }),
    ),
  );
  zk = await ZooKeeperClient.connect(connect, { sessionTimeoutMs: 6000, connectTimeoutMs: 10_000 });
}, 180_000);

afterAll(async () => {
  await zk?.close();
  for (const b of brokers ?? []) await b.stop();
  await zkServer?.stop();
});

async function kafkaConfigs(...args: string[]): Promise<string> {
  const { code, stdout, stderr } = await runToolInJvm(classpath, "kafka.admin.ConfigCommand", [
    "--bootstrap-server",
    brokers[0]!.bootstrap,
    ...args,
  ]);
  expect(`${code} ${stdout}${stderr}`).toStartWith("0 ");
  return stdout;
}

async function znode(path: string): Promise<unknown> {
  const { data } = await zk.getData(path);
  return JSON.parse(new TextDecoder().decode(data));
}

/** The producer_byte_rate a broker applies to an anonymous client (Infinity: none). */
function producerQuota(broker: InProcessBroker, clientId: string): number {
  const quotas = broker.broker.services.clientQuotas;
  const perWindow = quotas.maxValueInQuotaWindow("producer_byte_rate", "User:ANONYMOUS", clientId);
  return perWindow / (quotas.window.samples - 1);
}

test("kafka-configs.sh writes Kafka's znodes through broker 1; broker 2 applies them", async () => {
  const set = await kafkaConfigs(
    "--alter",
    "--add-config",
    "producer_byte_rate=40000,consumer_byte_rate=20000",
    "--entity-type",
    "clients",
    "--entity-name",
    "slow-client",
  );
  expect(set).toContain("Completed updating config for");
  expect(await znode("/config/clients/slow-client")).toEqual({
    version: 1,
    config: { producer_byte_rate: "40000", consumer_byte_rate: "20000" },
  });
  await kafkaConfigs(
    ...["--alter", "--add-config", "producer_byte_rate=5000", "--entity-type", "users"],
    "--entity-default",
  );
  const changes = await zk.getChildren("/config/changes");
  const notices = await Promise.all(changes.map((c) => znode(`/config/changes/${c}`)));
  expect(notices).toContainEqual({ version: 2, entity_path: "clients/slow-client" });
  expect(notices).toContainEqual({ version: 2, entity_path: "users/<default>" });
  const described = await kafkaConfigs(
    ...["--describe", "--entity-type", "clients", "--entity-name", "slow-client"],
  );
  expect(described).toContain("producer_byte_rate=40000");
  expect(described).toContain("consumer_byte_rate=20000");
  // Kafka's order: users/<default> comes before clients/slow-client.
  await until(
    async () => producerQuota(brokers[1]!, "slow-client") === 5000 || undefined,
    20_000,
    "broker 2 to apply the default user quota",
  );
  expect(await produceThrottleMs(brokers[1]!, "slow-client")).toBeGreaterThan(0);
  await kafkaConfigs(
    ...["--alter", "--delete-config", "producer_byte_rate", "--entity-type", "users"],
    "--entity-default",
  );
  await until(
    async () => producerQuota(brokers[1]!, "slow-client") === 40000 || undefined,
    20_000,
    "broker 2 to fall back to the client-id quota",
  );
  expect(producerQuota(brokers[1]!, "other-client")).toBe(Number.POSITIVE_INFINITY);
}, 120_000);

/** One 100 KB produce to broker 2 (the topic need not exist: bytes count regardless). */
async function produceThrottleMs(broker: InProcessBroker, clientId: string): Promise<number> {
  const c = await KafkaClient.connect(broker.port);
  c.clientId = clientId;
  try {
    const records = buildRecordBatch([{ key: null, value: new Uint8Array(100_000) }]);
    const res = await c.request(ApiKey.Produce, 9, {
      transactionalId: null,
      acks: 1,
      timeoutMs: 5000,
      topicData: [{ name: "no-such-topic", partitionData: [{ index: 0, records }] }],
    });
    return res.throttleTimeMs;
  } finally {
    c.close();
  }
}

test("a kafkajs producer is held to producer_byte_rate; another client-id is not", async () => {
  const bootstrap = brokers.map((b) => b.bootstrap);
  const admin = new Kafka({
    clientId: "admin",
    brokers: bootstrap,
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  await admin.createTopics({
    topics: [{ topic: "rated", numPartitions: 1, replicationFactor: 2 }],
  });
  await admin.disconnect();
  const value = Buffer.alloc(20_000, 120);
  const sendsMs = async (clientId: string) => {
    const kafka = new Kafka({ clientId, brokers: bootstrap, logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    await producer.connect();
    const startMs = performance.now();
    // 10 requests of 20 KB one after another: 200 KB against 40 KB/s takes seconds.
    for (let i = 0; i < 10; i++) {
      await producer.send({ topic: "rated", acks: 1, messages: [{ value }] });
    }
    const elapsedMs = performance.now() - startMs;
    await producer.disconnect();
    return elapsedMs;
  };
  const fastMs = await sendsMs("fast-client");
  const slowMs = await sendsMs("slow-client");
  // At most 40 KB/s with a one-second window: the first 40 KB pass, the rest waits ~4 s.
  expect((200_000 / slowMs) * 1000).toBeLessThan(2 * 40_000);
  expect(slowMs).toBeGreaterThan(3 * fastMs);
}, 120_000);
