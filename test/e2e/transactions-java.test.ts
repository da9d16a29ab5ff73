// Exactly-once with the Java client 3.9 (issue 15): a consume-transform-produce pipeline
// (read_committed consumer, transactional producer, offsets sent to the transaction) while the
// broker is killed with SIGKILL and restarted; a read_committed consumer downstream must see
// every input exactly once.
import { afterAll, beforeAll, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ChildBroker } from "../support/child-broker.ts";
import {
  buildExactlyOnce,
  runPipelineWithFault,
  verifyExactlyOnce,
} from "../support/exactly-once-java.ts";

const INPUTS = 2000;
const IN = "eos-in";
const OUT = "eos-out";

let broker: ChildBroker;

beforeAll(async () => {
  buildExactlyOnce();
  broker = await ChildBroker.start({ settings: { "transaction.state.log.num.partitions": "3" } });
  const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [
      { topic: IN, numPartitions: 3 },
      { topic: OUT, numPartitions: 3 },
    ],
  });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  for (let i = 0; i < INPUTS; i += 500) {
    await producer.send({
      topic: IN,
      messages: Array.from({ length: 500 }, (_, j) => ({
        key: String(i + j),
        value: String(i + j),
      })),
    });
  }
  await producer.disconnect();
}, 180_000);

afterAll(async () => {
  await broker?.terminate().catch(() => undefined);
  await broker?.remove();
});

test("each input reaches the output exactly once across a broker kill -9", async () => {
  const topics = () => ({ bootstrap: broker.bootstrap, inTopic: IN, outTopic: OUT });
  await runPipelineWithFault(topics(), async () => {
    await broker.kill9();
    broker = await broker.restart();
  });
  await verifyExactlyOnce(topics(), INPUTS);
}, 240_000);
