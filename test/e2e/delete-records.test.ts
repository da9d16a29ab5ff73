// DeleteRecords through kafkajs' admin client against a broker process, then kill -9: the log
// start offset a client was told about is already in `log-start-offset-checkpoint`, so after
// the restart ListOffsets earliest and a consumer from the beginning start there.
import { afterEach, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ChildBroker } from "../support/child-broker.ts";

const started: ChildBroker[] = [];
afterEach(async () => {
  for (const broker of started.splice(0).reverse()) await broker.remove();
});

function client(broker: ChildBroker) {
  return new Kafka({
    clientId: "delete-records-e2e",
    brokers: [broker.bootstrap],
    logLevel: logLevel.NOTHING,
    retry: { retries: 5, initialRetryTime: 100 },
  });
}

async function consumeValues(broker: ChildBroker, topic: string, count: number) {
  const consumer = client(broker).consumer({ groupId: `readers-${Date.now()}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const values: string[] = [];
  const done = new Promise<void>((resolve) => {
    void consumer.run({
      eachMessage: async ({ message }) => {
        values.push(String(message.value));
        if (values.length >= count) resolve();
      },
    });
  });
  await Promise.race([done, Bun.sleep(20_000)]);
  await consumer.disconnect();
  return values;
}

test("kafkajs deleteTopicRecords, kill -9, restart: earliest and consumers start there", async () => {
  const first = await ChildBroker.start();
  started.push(first);
  const kafka = client(first);
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [
      {
        topic: "trimmed",
        numPartitions: 1,
        configEntries: [{ name: "segment.bytes", value: "2048" }],
      },
    ],
  });
  const producer = kafka.producer();
  await producer.connect();
  for (let i = 0; i < 100; i += 10) {
    await producer.send({
      topic: "trimmed",
      messages: Array.from({ length: 10 }, (_, j) => ({ value: `v${i + j}` })),
    });
  }
  await producer.disconnect();
  await admin.fetchTopicOffsets("trimmed");
  await admin.deleteTopicRecords({
    topic: "trimmed",
    partitions: [{ partition: 0, offset: "64" }],
  });
  expect(await admin.fetchTopicOffsets("trimmed")).toEqual([
    expect.objectContaining({ partition: 0, low: "64", high: "100" }),
  ]);
  await admin.disconnect();

  await first.kill9();
  const second = await first.restart();
  started.push(second);
  const admin2 = client(second).admin();
  await admin2.connect();
  expect(await admin2.fetchTopicOffsets("trimmed")).toEqual([
    expect.objectContaining({ partition: 0, low: "64", high: "100" }),
  ]);
  await admin2.disconnect();
  const values = await consumeValues(second, "trimmed", 36);
  expect(values).toEqual(Array.from({ length: 36 }, (_, i) => `v${64 + i}`));
}, 60_000);
