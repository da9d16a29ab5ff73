// kafkajs consumers in a group against the in-process broker: 100,000 keyed records produced by
// kafkajs come back through a group consumer (FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
// Fetch, OffsetCommit), each once, each key in one partition and in order. Committed offsets
// carry over to the next member of the group, and two members split the partitions between them.
// A small partition budget makes fetches end inside batches (as Kafka's do); nothing is lost.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { AssignerProtocol, type Consumer, Kafka, logLevel } from "kafkajs";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { checkKeyedRecords, type KeyedRecord, produceKeyed } from "./keyed-records.ts";

const TOPIC = "consumed-100k";
const PARTITIONS = 6;
const RECORDS = 100_000;
const KEYS = 499;
const CONSUME_TIMEOUT_MS = 60_000;
/** OffsetCommit, OffsetFetch, FindCoordinator, JoinGroup, Heartbeat, LeaveGroup, SyncGroup. */
const GROUP_API_KEYS = [8, 9, 10, 11, 12, 13, 14];

let broker: InProcessBroker;
let kafka: Kafka;

beforeAll(async () => {
  broker = await startInProcessBroker();
  kafka = new Kafka({
    clientId: "kafkajs-consume-test",
    brokers: [broker.bootstrap],
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }] });
  await admin.disconnect();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  await produceKeyed(producer, TOPIC, 0, RECORDS, KEYS, 1_000);
  await producer.disconnect();
}, 60_000);
afterAll(async () => {
  await broker.stop();
});

/** Runs a group consumer until `count` records have arrived; returns them in arrival order. */
async function consumeRecords(consumer: Consumer, count: number): Promise<KeyedRecord[]> {
  expectGroupApis();
  const records: KeyedRecord[] = [];
  const { promise: done, resolve } = Promise.withResolvers<void>();
  await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
  await consumer.run({
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) {
        records.push({
          key: m.key!.toString(),
          partition: batch.partition,
          offset: Number(m.offset),
          value: Number(m.value!.toString()),
        });
      }
      if (records.length >= count) resolve();
    },
  });
  const timeout = Bun.sleep(CONSUME_TIMEOUT_MS).then(() => {
    throw new Error(`only ${records.length} of ${count} records within ${CONSUME_TIMEOUT_MS} ms`);
  });
  await Promise.race([done, timeout]);
  return records;
}

/** DescribeGroups through kafkajs: the group state and each member's assigned partitions. */
async function groupAssignment(
  groupId: string,
): Promise<{ state: string; partitionsByMember: number[][] }> {
  const admin = kafka.admin();
  await admin.connect();
  const { groups } = await admin.describeGroups([groupId]);
  await admin.disconnect();
  const group = groups[0]!;
  const partitionsByMember = group.members.map((member) => {
    const decoded = AssignerProtocol.MemberAssignment.decode(member.memberAssignment);
    return decoded?.assignment[TOPIC] ?? [];
  });
  return { state: group.state, partitionsByMember };
}

/** Without these kafkajs retries FindCoordinator for a minute; fail at once and say why. */
function expectGroupApis(): void {
  const offered = new Set<number>(broker.broker.services.handlers.map((h) => h.apiKey));
  expect(GROUP_API_KEYS.filter((key) => !offered.has(key))).toEqual([]);
}

describe("kafkajs group consumers", () => {
  test("one member reads all 100,000 records: once each, keys pinned and in order", async () => {
    const consumer = kafka.consumer({ groupId: "readers", maxWaitTimeInMs: 100 });
    await consumer.connect();
    const records = await consumeRecords(consumer, RECORDS);
    await consumer.disconnect(); // Leaves the group after committing what it consumed.
    const perPartition = checkKeyedRecords(records, 0, RECORDS, KEYS);
    expect(perPartition.length).toBe(PARTITIONS);

    const admin = kafka.admin();
    await admin.connect();
    const committed = await admin.fetchOffsets({ groupId: "readers", topics: [TOPIC] });
    await admin.disconnect();
    const offsets = committed[0]!.partitions
      .sort((a, b) => a.partition - b.partition)
      .map((p) => Number(p.offset));
    expect(offsets).toEqual(perPartition);
  }, 90_000);

  test("fetches cut inside batches by a small partition budget still give each record once, in order", async () => {
    // The broker fills max.partition.fetch.bytes as Kafka does, so most of these fetches end in
    // a partial batch, which the client drops and fetches again from its first offset.
    const consumer = kafka.consumer({
      groupId: "small-fetches",
      maxWaitTimeInMs: 100,
      maxBytesPerPartition: 10_000,
    });
    await consumer.connect();
    const records = await consumeRecords(consumer, RECORDS);
    await consumer.disconnect();
    expect(checkKeyedRecords(records, 0, RECORDS, KEYS).length).toBe(PARTITIONS);
  }, 90_000);

  test("the next member of the group resumes at the committed offsets", async () => {
    const admin = kafka.admin();
    await admin.connect();
    const before = await admin.fetchTopicOffsets(TOPIC);
    await admin.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    await produceKeyed(producer, TOPIC, RECORDS, 600, KEYS, 100);
    await producer.disconnect();
    const consumer = kafka.consumer({ groupId: "readers", maxWaitTimeInMs: 100 });
    await consumer.connect();
    const records = await consumeRecords(consumer, 600);
    await Bun.sleep(300); // Anything replayed from before the commit would arrive by now.
    await consumer.disconnect();
    const firstOffsets = before
      .sort((a, b) => a.partition - b.partition)
      .map((p) => Number(p.high));
    checkKeyedRecords(records, RECORDS, 600, KEYS, firstOffsets);
  }, 60_000);

  test("two members of a new group split the six partitions between them", async () => {
    expectGroupApis();
    const members = [0, 1].map(() => kafka.consumer({ groupId: "pair", maxWaitTimeInMs: 100 }));
    const values = new Set<number>();
    for (const consumer of members) {
      await consumer.connect();
      await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
      await consumer.run({
        eachBatch: async ({ batch }) => {
          for (const m of batch.messages) values.add(Number(m.value!.toString()));
        },
      });
    }
    const total = RECORDS + 600;
    const deadline = Date.now() + CONSUME_TIMEOUT_MS;
    let final = await groupAssignment("pair");
    const settled = () =>
      values.size === total && final.partitionsByMember.length === 2 && final.state === "Stable";
    while (!settled() && Date.now() < deadline) {
      await Bun.sleep(200);
      final = await groupAssignment("pair");
    }
    for (const consumer of members) await consumer.disconnect();
    // While the second member joins, the first may read a partition it then hands over: a value
    // can arrive twice, but none may be missing.
    expect(values.size).toBe(total);
    // The settled group: two members, each with partitions, none shared, all six covered.
    expect(final.state).toBe("Stable");
    expect(final.partitionsByMember.length).toBe(2);
    for (const partitions of final.partitionsByMember) expect(partitions.length).toBeGreaterThan(0);
    expect(final.partitionsByMember.flat().sort()).toEqual([0, 1, 2, 3, 4, 5]);
  }, 90_000);
});
