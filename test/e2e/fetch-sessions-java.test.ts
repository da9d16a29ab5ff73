/**
 * The Java consumer (Kafka 3.9's kafka-console-consumer.sh, from Maven Central) reads through
 * incremental fetch sessions (KIP-227): after its first full fetch it names its session, and it
 * still receives every record, those produced before it started and those produced while its
 * incremental fetches ran, each once.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ensureKafkaDist } from "../../scripts/bench-vs-kafka/kafka-dist.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { runToolInJvm } from "../support/tool-jvm.ts";
import { waitUntil } from "../support/wait-until.ts";

const TOPIC = "java-sessions";
const PARTITIONS = 8;
const PER_ROUND = 400;
let broker: InProcessBroker;
let classpath: string;
let kafka: Kafka;

beforeAll(async () => {
  const dist = await ensureKafkaDist();
  if ("missing" in dist) throw new Error(`Kafka's tools are not available: ${dist.missing}`);
  classpath = dist.classpath;
  broker = await startInProcessBroker();
  kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }] });
  await admin.disconnect();
}, 180_000);

afterAll(async () => {
  await broker?.stop();
});

async function produceRound(round: number): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  const messages = Array.from({ length: PER_ROUND }, (_, i) => ({
    value: `r${round}-${i}`,
    partition: i % PARTITIONS,
  }));
  await producer.send({ topic: TOPIC, messages });
  await producer.disconnect();
}

test("every record arrives once while the consumer fetches incrementally", async () => {
  await produceRound(0);
  const fetchManager = broker.broker.services.replicaManager.fetchManager;
  const args = [
    ...["--bootstrap-server", broker.bootstrap, "--topic", TOPIC, "--from-beginning"],
    ...["--max-messages", String(2 * PER_ROUND), "--timeout-ms", "90000"],
  ];
  // Runs while the test produces round 1; its output is read when it has ended.
  const consumer = runToolInJvm(classpath, "org.apache.kafka.tools.consumer.ConsoleConsumer", args);
  await waitUntil(() => fetchManager.incrementalFetches > 0, 90_000, "an incremental fetch");
  await produceRound(1);
  const { code, stdout, stderr } = await consumer;
  expect(code).toBe(0);
  const values = stdout.split("\n").filter((l) => l !== "");
  expect(values.length, stderr).toBe(2 * PER_ROUND);
  const expected = [0, 1].flatMap((r) => Array.from({ length: PER_ROUND }, (_, i) => `r${r}-${i}`));
  expect(values.sort()).toEqual(expected.sort());
  // The records of round 1 came through the session (the consumer closes it when it leaves).
  expect(fetchManager.incrementalFetches).toBeGreaterThan(1);
}, 180_000);
