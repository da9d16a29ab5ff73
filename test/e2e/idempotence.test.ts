// Idempotent producers end to end (issue 7): lost produce responses, producer restarts,
// zombies, and a broker killed with SIGKILL between a write and its retry.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { startInProcessBroker } from "../support/broker-harness.ts";
import { ChildBroker } from "../support/child-broker.ts";
import { KafkaClient } from "../support/kafka-client.ts";
import { freePorts } from "../support/zookeeper-server.ts";
import { kcatOk, stdoutText } from "./kcat-process.ts";
import { ProduceResponseDropper } from "./produce-response-dropper.ts";

const enc = new TextEncoder();

async function createTopic(client: KafkaClient, name: string, numPartitions = 1) {
  const res = await client.request(ApiKey.CreateTopics, 7, {
    topics: [{ name, numPartitions, replicationFactor: 1 }],
  });
  expect(res.topics[0].errorCode).toBe(ErrorCode.NONE);
}

async function initProducerId(client: KafkaClient): Promise<bigint> {
  const res = await client.request(ApiKey.InitProducerId, 4, {
    transactionalId: null,
    transactionTimeoutMs: 60_000,
  });
  expect(res.errorCode).toBe(ErrorCode.NONE);
  return res.producerId;
}

/** One raw Produce v9 of `count` records from sequence `seq`; resolves to the partition answer. */
async function produce(
  client: KafkaClient,
  topic: string,
  producerId: bigint,
  epoch: number,
  seq: number,
  count = 3,
) {
  const records = Array.from({ length: count }, (_, i) => ({ value: enc.encode(`v${seq + i}`) }));
  const batch = buildRecordBatch(records, { producerId, producerEpoch: epoch, baseSequence: seq });
  const res = await client.request(ApiKey.Produce, 9, {
    transactionalId: null,
    acks: -1,
    timeoutMs: 5000,
    topicData: [{ name: topic, partitionData: [{ index: 0, records: batch }] }],
  });
  return res.responses[0].partitionResponses[0];
}

async function latestOffset(client: KafkaClient, topic: string): Promise<bigint> {
  const res = await client.request(ApiKey.ListOffsets, 7, {
    replicaId: -1,
    isolationLevel: 0,
    topics: [{ name: topic, partitions: [{ partitionIndex: 0, timestamp: -1n }] }],
  });
  return res.topics[0].partitions[0].offset;
}

/** Every value of partition 0, in offset order, read by kcat. */
async function values(bootstrap: string, topic: string): Promise<string[]> {
  const out = await kcatOk(bootstrap, [
    "-C",
    "-t",
    topic,
    "-p",
    "0",
    "-o",
    "beginning",
    "-e",
    "-q",
    "-f",
    "%s\n",
  ]);
  return stdoutText(out)
    .split("\n")
    .filter((line) => line !== "");
}

describe("kafkajs idempotent producer behind a proxy that loses produce responses", () => {
  let dropper: ProduceResponseDropper;
  let broker: Awaited<ReturnType<typeof startInProcessBroker>>;
  beforeAll(async () => {
    dropper = await ProduceResponseDropper.start(3, 15);
    // Clients learn the proxy's address from Metadata, so every connection goes through it. A
    // fixed listener port, since with port 0 the broker advertises the port it bound.
    const [port] = await freePorts(1);
    broker = await startInProcessBroker({
      settings: {
        listeners: `127.0.0.1:${port}`,
        "advertised.listeners": `127.0.0.1:${dropper.port}`,
      },
    });
    dropper.targetPort = broker.port;
  }, 60_000);
  afterAll(async () => {
    await dropper.stop();
    await broker.stop();
  });

  test("every record is stored exactly once, in order", async () => {
    const kafka = new Kafka({
      brokers: [`127.0.0.1:${dropper.port}`],
      logLevel: logLevel.NOTHING,
      retry: { retries: 20, initialRetryTime: 20, maxRetryTime: 200 },
    });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: "lossy", numPartitions: 1 }] });
    await admin.disconnect();
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const sent: string[] = [];
    for (let i = 0; i < 60; i++) {
      const messages = [0, 1].map((j) => ({ value: `m-${i * 2 + j}` }));
      await producer.send({ topic: "lossy", acks: -1, messages });
      sent.push(...messages.map((m) => m.value));
    }
    await producer.disconnect();
    // The retries really happened: responses were lost after the broker had stored the batch.
    expect(dropper.dropped).toBe(15);
    expect(await values(broker.bootstrap, "lossy")).toEqual(sent);
  }, 60_000);
});

describe("fencing and restarts (raw requests)", () => {
  let broker: Awaited<ReturnType<typeof startInProcessBroker>>;
  let client: KafkaClient;
  beforeAll(async () => {
    broker = await startInProcessBroker();
    client = await KafkaClient.connect(broker.port);
    await createTopic(client, "fenced");
  }, 60_000);
  afterAll(async () => {
    client.close();
    await broker.stop();
  });

  test("a restarted producer gets a new id; the old epoch is fenced after a bump", async () => {
    const first = await initProducerId(client);
    expect((await produce(client, "fenced", first, 0, 0)).errorCode).toBe(ErrorCode.NONE);
    const restarted = await initProducerId(client);
    expect(restarted).not.toBe(first);
    expect((await produce(client, "fenced", restarted, 0, 0)).baseOffset).toBe(3n);
    // The Java client bumps its own epoch after an error (KIP-360); the old epoch is then a
    // zombie, refused even with a sequence that would follow.
    expect((await produce(client, "fenced", first, 1, 0)).baseOffset).toBe(6n);
    const zombie = await produce(client, "fenced", first, 0, 3);
    expect(zombie.errorCode).toBe(ErrorCode.INVALID_PRODUCER_EPOCH);
    expect(await latestOffset(client, "fenced")).toBe(9n);
  });

  test("a kafkajs producer restart is a new producer id in DescribeProducers", async () => {
    const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    for (let round = 0; round < 2; round++) {
      const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      await producer.send({ topic: "fenced", messages: [{ value: `round-${round}` }] });
      await producer.disconnect();
    }
    const described = await client.request(ApiKey.DescribeProducers, 0, {
      topics: [{ name: "fenced", partitionIndexes: [0] }],
    });
    const producers = described.topics[0].partitions[0].activeProducers;
    expect(producers.length).toBe(4);
    expect(new Set(producers.map((p) => p.producerId)).size).toBe(4);
  });
});

describe("broker killed with SIGKILL between a write and its retry", () => {
  let broker: ChildBroker;
  afterAll(async () => {
    await broker?.remove();
  });

  test("the retried batches are recognised from the rebuilt state: no duplicates", async () => {
    broker = await ChildBroker.start();
    let client = await KafkaClient.connect(broker.port);
    await createTopic(client, "crashy");
    const producerId = await initProducerId(client);
    for (let seq = 0; seq < 30; seq += 3) {
      expect((await produce(client, "crashy", producerId, 0, seq)).baseOffset).toBe(BigInt(seq));
    }
    client.close();
    await broker.kill9();
    broker = await broker.restart();
    client = await KafkaClient.connect(broker.port);
    try {
      // The last batch and one four back, both still in flight for a producer with five.
      for (const seq of [27, 15]) {
        const retry = await produce(client, "crashy", producerId, 0, seq);
        expect(retry.errorCode).toBe(ErrorCode.NONE);
        expect(retry.baseOffset).toBe(BigInt(seq));
      }
      expect(await latestOffset(client, "crashy")).toBe(30n);
      expect((await produce(client, "crashy", producerId, 0, 31)).errorCode).toBe(
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
      );
      expect((await produce(client, "crashy", producerId, 0, 30)).baseOffset).toBe(30n);
      const expected = Array.from({ length: 33 }, (_, i) => `v${i}`);
      expect(await values(broker.bootstrap, "crashy")).toEqual(expected);
    } finally {
      client.close();
    }
  }, 60_000);
});
