// kafkajs in this process creates a topic with 6 partitions (CreateTopics), produces 100,000 keyed records in batches of 1,000 to a topic with
// 6 partitions; kcat reads them all back. Every record arrives once, records with one key sit
// in one partition in the order they were sent, and each partition's offsets are dense.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Admin, Kafka, logLevel, type Producer } from "kafkajs";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { kcatOk, stdoutText } from "./kcat-process.ts";

const TOPIC = "keyed-100k";
const PARTITIONS = 6;
const RECORDS = 100_000;
const BATCH = 1_000;
const KEYS = 997;

let broker: InProcessBroker;
let kafka: Kafka;

beforeAll(async () => {
  broker = await startInProcessBroker();
  kafka = new Kafka({ clientId: "kafkajs-produce-test", brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
});
afterAll(async () => {
  await broker.stop();
});

async function createTopic(admin: Admin): Promise<void> {
  const created = await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }] });
  expect(created).toBe(true);
}

async function produceAll(producer: Producer): Promise<void> {
  for (let from = 0; from < RECORDS; from += BATCH) {
    const messages = Array.from({ length: BATCH }, (_, i) => ({
      key: `key-${(from + i) % KEYS}`,
      value: String(from + i),
    }));
    await producer.send({ topic: TOPIC, acks: -1, messages });
  }
}

describe("kafkajs producer, 100,000 keyed records over 6 partitions", () => {
  test("all arrive once; one key, one partition, in order; offsets dense", async () => {
    const admin = kafka.admin();
    await admin.connect();
    await createTopic(admin);
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    await produceAll(producer);
    await producer.disconnect();

    const metadata = await admin.fetchTopicMetadata({ topics: [TOPIC] });
    expect(metadata.topics[0]!.partitions.length).toBe(PARTITIONS);
    const offsets = await admin.fetchTopicOffsets(TOPIC);
    await admin.disconnect();
    const total = offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
    expect(total).toBe(RECORDS);

    const out = await kcatOk(broker.bootstrap, ["-C", "-e", "-q", "-t", TOPIC, "-o", "beginning",
      "-X", "fetch.wait.max.ms=100", "-f", "%k %p %o %s\n"], { timeoutMs: 60_000 });
    checkRecords(stdoutText(out));
  }, 90_000);
});

function checkRecords(text: string): void {
  const seen = new Uint8Array(RECORDS);
  const partitionOfKey = new Map<string, number>();
  const lastValueOfKey = new Map<string, number>();
  const nextOffset = new Array<number>(PARTITIONS).fill(0);
  let rows = 0;
  let disorders = 0;
  for (const line of text.split("\n")) {
    if (line === "") continue;
    rows++;
    const [key, p, o, v] = line.split(" ") as [string, string, string, string];
    const partition = Number(p);
    const value = Number(v);
    seen[value] = (seen[value] ?? 0) + 1;
    if ((partitionOfKey.get(key) ?? partition) !== partition) throw new Error(`${key} is in two partitions`);
    partitionOfKey.set(key, partition);
    if (value <= (lastValueOfKey.get(key) ?? -1)) disorders++;
    lastValueOfKey.set(key, value);
    if (Number(o) !== nextOffset[partition]) throw new Error(`partition ${p}: offset ${o} after ${nextOffset[partition]! - 1}`);
    nextOffset[partition]!++;
  }
  expect(rows).toBe(RECORDS);
  expect(seen.every((count) => count === 1)).toBe(true);
  expect(disorders).toBe(0);
  expect(partitionOfKey.size).toBe(KEYS);
  expect(nextOffset.every((count) => count > 0)).toBe(true);
}
