// Creating a partition syncs nothing on disk (its first flush with data does: docs/scaling.md,
// Scale workloads), and a clean stop flushes the logs many at once. What must still hold, with
// real broker processes: topics CreateTopics answered survive kill -9 right after the answer,
// every partition takes a produce after the restart, and a clean stop of hundreds of logs with
// data leaves the clean-shutdown marker, so the next start recovers nothing and every record
// is there.
import { afterEach, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { CLEAN_SHUTDOWN_FILE } from "../../src/storage/log-manager.ts";
import { ChildBroker } from "../support/child-broker.ts";
import { KafkaClient } from "../support/kafka-client.ts";

const TOPICS = 4;
const PARTITIONS = 100;
const RECORDS_PER_PARTITION = 3;
const topicNames = Array.from({ length: TOPICS }, (_, i) => `many-${i}`);

let broker: ChildBroker | null = null;
afterEach(async () => {
  await broker?.remove();
  broker = null;
});

async function withClient<T>(b: ChildBroker, fn: (c: KafkaClient) => Promise<T>): Promise<T> {
  const client = await KafkaClient.connect(b.port);
  try {
    return await fn(client);
  } finally {
    client.close();
  }
}

async function createTopics(client: KafkaClient): Promise<void> {
  const response = await client.request(19, 4, {
    timeoutMs: 30_000,
    validateOnly: false,
    topics: topicNames.map((name) => ({
      name,
      numPartitions: PARTITIONS,
      replicationFactor: 1,
      assignments: [],
      configs: [],
    })),
  });
  expect(response.topics.map((t) => t.errorCode)).toEqual(topicNames.map(() => 0));
}

/** Partitions with a leader, per topic, from one Metadata request. */
async function ledPartitions(client: KafkaClient): Promise<number[]> {
  const response = await client.request(3, 8, {
    topics: topicNames.map((name) => ({ name })),
    allowAutoTopicCreation: false,
    includeClusterAuthorizedOperations: false,
    includeTopicAuthorizedOperations: false,
  });
  return topicNames.map((name) => {
    const topic = response.topics.find((t) => t.name === name);
    if (topic === undefined || topic.errorCode !== 0) return 0;
    return topic.partitions.filter((p) => p.errorCode === 0 && p.leaderId >= 0).length;
  });
}

/** One batch to every partition; returns each partition's error code. */
async function produceToEvery(client: KafkaClient): Promise<number[]> {
  const records = buildRecordBatch(
    Array.from({ length: RECORDS_PER_PARTITION }, (_, i) => ({
      value: new TextEncoder().encode(`record ${i}`),
    })),
  );
  const response = await client.request(0, 7, {
    transactionalId: null,
    acks: 1,
    timeoutMs: 10_000,
    topicData: topicNames.map((name) => ({
      name,
      partitionData: Array.from({ length: PARTITIONS }, (_, index) => ({ index, records })),
    })),
  });
  return response.responses.flatMap((t) => t.partitionResponses.map((p) => p.errorCode));
}

/** The latest offset of every partition (ListOffsets, timestamp -1). */
async function endOffsets(client: KafkaClient): Promise<bigint[]> {
  const response = await client.request(2, 5, {
    replicaId: -1,
    isolationLevel: 0,
    topics: topicNames.map((name) => ({
      name,
      partitions: Array.from({ length: PARTITIONS }, (_, partitionIndex) => ({
        partitionIndex,
        currentLeaderEpoch: -1,
        timestamp: -1n,
      })),
    })),
  });
  return response.topics.flatMap((t) => t.partitions.map((p) => p.offset));
}

function cleanShutdownMarkers(dataDir: string): number {
  const names = readdirSync(dataDir, { recursive: true }) as string[];
  return names.filter((name) => name.endsWith(CLEAN_SHUTDOWN_FILE)).length;
}

test("created topics survive kill -9 right after CreateTopics answers", async () => {
  broker = await ChildBroker.start();
  await withClient(broker, createTopics);
  await broker.kill9();
  broker = await broker.restart();
  await withClient(broker, async (client) => {
    expect(await ledPartitions(client)).toEqual(topicNames.map(() => PARTITIONS));
    const errors = await produceToEvery(client);
    expect(errors).toEqual(Array(TOPICS * PARTITIONS).fill(0));
  });
}, 60_000);

test("a clean stop of hundreds of logs with data leaves the marker and loses nothing", async () => {
  broker = await ChildBroker.start();
  await withClient(broker, async (client) => {
    await createTopics(client);
    expect(await produceToEvery(client)).toEqual(Array(TOPICS * PARTITIONS).fill(0));
  });
  expect(await broker.terminate()).toBe(0);
  expect(cleanShutdownMarkers(broker.dataDir)).toBeGreaterThan(0);
  broker = await broker.restart();
  // The marker is gone once the logs are loaded: a crash from now on is detected.
  expect(cleanShutdownMarkers(broker.dataDir)).toBe(0);
  expect(broker.stderrText).not.toMatch(/truncated|rebuilding|producer state rebuilt/);
  const offsets = await withClient(broker, endOffsets);
  expect(offsets).toEqual(Array(TOPICS * PARTITIONS).fill(BigInt(RECORDS_PER_PARTITION)));
}, 60_000);
