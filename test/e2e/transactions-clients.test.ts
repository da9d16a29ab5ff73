// Transactions with confluent-kafka (librdkafka, Python) and franz-go, each as its own process
// (issue 15): commit and abort seen by read_committed and read_uncommitted consumers, and
// franz-go's GroupTransactSession copying a topic exactly once.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import {
  type InProcessBroker,
  REPO_ROOT,
  startInProcessBroker,
} from "../support/broker-harness.ts";
import { compatPython } from "../support/python-venv.ts";

const INPUTS = 300;
let broker: InProcessBroker;
let kafka: Kafka;

beforeAll(async () => {
  broker = await startInProcessBroker({
    settings: { "transaction.state.log.num.partitions": "3" },
  });
  kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: ["confluent-txn", "franz-txn", "franz-in", "franz-out"].map((topic) => ({
      topic,
      numPartitions: 2,
    })),
  });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({
    topic: "franz-in",
    messages: Array.from({ length: INPUTS }, (_, i) => ({ value: String(i) })),
  });
  await producer.disconnect();
}, 60_000);

afterAll(async () => {
  await broker.stop();
});

async function run(command: string[], env: Record<string, string> = {}, cwd?: string) {
  const proc = Bun.spawn(command, {
    cwd,
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([
    proc.exited,
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
  ]);
  if (code !== 0) throw new Error(`${command.join(" ")} exited ${code}: ${stderr.slice(-3000)}`);
  return JSON.parse(stdout.trim().split("\n").at(-1)!);
}

test("confluent-kafka: committed records only for read_committed, aborted ones too for read_uncommitted", async () => {
  const python = await compatPython("confluent-kafka-python");
  const script = join(REPO_ROOT, "test", "e2e", "clients", "transactions_confluent.py");
  const seen = await run([python, script, broker.bootstrap, "confluent-txn"]);
  expect(seen.committed).toEqual(["c1", "c2", "c3"]);
  expect(seen.uncommitted).toEqual(["a1", "a2", "c1", "c2", "c3"]);
}, 120_000);

test("franz-go: transactional producer and GroupTransactSession exactly once", async () => {
  const dir = join(REPO_ROOT, "test", "compat", "franz-go");
  const seen = await run(
    ["go", "run", "./txn"],
    {
      BOOTSTRAP: broker.bootstrap,
      TOPIC: "franz-txn",
      IN_TOPIC: "franz-in",
      OUT_TOPIC: "franz-out",
      INPUTS: String(INPUTS),
    },
    dir,
  );
  expect(seen.committed).toEqual(["c1", "c2", "c3"]);
  expect(seen.uncommitted).toEqual(["a1", "c1", "c2", "c3"]);
  const expected = Array.from({ length: INPUTS }, (_, i) => `out-${i}`).sort();
  expect(seen.copied).toEqual(expected);
}, 180_000);
