// kafkajs in this process creates a topic with 6 partitions (CreateTopics) and produces 100,000
// keyed records in batches of 1,000; kcat reads them all back. Every record arrives once,
// records with one key sit in one partition in the order they were sent, offsets are dense.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { kcatOk, stdoutText } from "./kcat-process.ts";
import { checkKeyedRecords, parseKcatRows, produceKeyed } from "./keyed-records.ts";

const TOPIC = "keyed-100k";
const PARTITIONS = 6;
const RECORDS = 100_000;
const BATCH = 1_000;
const KEYS = 997;

let broker: InProcessBroker;
let kafka: Kafka;

beforeAll(async () => {
  broker = await startInProcessBroker();
  kafka = new Kafka({
    clientId: "kafkajs-produce-test",
    brokers: [broker.bootstrap],
    logLevel: logLevel.NOTHING,
  });
}, 60_000);
afterAll(async () => {
  await broker.stop();
});

describe("kafkajs producer, 100,000 keyed records over 6 partitions", () => {
  test("all arrive once; one key, one partition, in order; offsets dense", async () => {
    const admin = kafka.admin();
    await admin.connect();
    const topics = [{ topic: TOPIC, numPartitions: PARTITIONS }];
    expect(await admin.createTopics({ topics })).toBe(true);
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    await produceKeyed(producer, TOPIC, 0, RECORDS, KEYS, BATCH);
    await producer.disconnect();

    const metadata = await admin.fetchTopicMetadata({ topics: [TOPIC] });
    expect(metadata.topics[0]!.partitions.length).toBe(PARTITIONS);
    const offsets = await admin.fetchTopicOffsets(TOPIC);
    await admin.disconnect();
    const total = offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
    expect(total).toBe(RECORDS);

    const out = await kcatOk(
      broker.bootstrap,
      [
        "-C",
        "-e",
        "-q",
        "-t",
        TOPIC,
        "-o",
        "beginning",
        "-X",
        "fetch.wait.max.ms=100",
        "-f",
        "%k %p %o %s\n",
      ],
      { timeoutMs: 60_000 },
    );
    const perPartition = checkKeyedRecords(parseKcatRows(stdoutText(out)), 0, RECORDS, KEYS);
    expect(perPartition.length).toBe(PARTITIONS);
    expect(perPartition.every((count) => count > 0)).toBe(true);
  }, 90_000);
});
