// Kafka's own `kafka-transactions.sh` (org.apache.kafka.tools.TransactionsCommand 3.9, from
// Maven Central) lists and describes Quill's transactions: ListTransactions,
// DescribeTransactions and FindCoordinator on the wire, as an operator runs them.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel, type Producer } from "kafkajs";
import { ensureKafkaDist } from "../../scripts/bench-vs-kafka/kafka-dist.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { runToolInJvm } from "../support/tool-jvm.ts";

let broker: InProcessBroker;
let producer: Producer;
let classpath: string;

beforeAll(async () => {
  const dist = await ensureKafkaDist();
  if ("missing" in dist) throw new Error(`Kafka's tools are not available: ${dist.missing}`);
  classpath = dist.classpath;
  broker = await startInProcessBroker({
    settings: { "transaction.state.log.num.partitions": "2" },
  });
  const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: "tool-txn", numPartitions: 2 }] });
  await admin.disconnect();
  producer = kafka.producer({ transactionalId: "tool-tx", maxInFlightRequests: 1 });
  await producer.connect();
  // Left open: the tool must show it Ongoing with its partition.
  const txn = await producer.transaction();
  await txn.send({ topic: "tool-txn", messages: [{ value: "open", partition: 1 }] });
}, 180_000);

afterAll(async () => {
  await producer?.disconnect().catch(() => undefined);
  await broker?.stop();
});

async function transactionsCommand(...args: string[]): Promise<string> {
  const tool = "org.apache.kafka.tools.TransactionsCommand";
  const { code, stdout, stderr } = await runToolInJvm(classpath, tool, [
    "--bootstrap-server",
    broker.bootstrap,
    ...args,
  ]);
  if (code !== 0) throw new Error(`kafka-transactions ${args.join(" ")}: ${stderr}`);
  return stdout;
}

test("list shows the transactional id with its producer and state", async () => {
  const out = await transactionsCommand("list");
  const line = out.split("\n").find((l) => l.startsWith("tool-tx"));
  expect(line).toBeDefined();
  expect(line).toMatch(/tool-tx\s+0\s+\d+\s+Ongoing/);
}, 60_000);

test("describe shows the open transaction's partitions, epoch and timeout", async () => {
  const out = await transactionsCommand("describe", "--transactional-id", "tool-tx");
  expect(out).toContain("Ongoing");
  expect(out).toContain("tool-txn-1");
}, 60_000);
