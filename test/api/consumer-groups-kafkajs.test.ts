// Three kafkajs consumers share one group on a 6-partition topic, against a broker running as a
// child process: every partition is assigned to exactly one member, 60,000 records are consumed
// exactly once in total with manual commits; a member leaves and its partitions move to the
// others; after the consumers stop and the broker is killed with kill -9, a restarted broker
// still has the committed offsets and a new consumer resumes from them.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Consumer, Kafka, logLevel } from "kafkajs";
import { ChildBroker } from "../support/child-broker.ts";

const TOPIC = "orders";
const GROUP = "order-processors";
const PARTITIONS = 6;
const RECORDS = 60_000;
const WAIT_MS = 60_000;

let broker: ChildBroker;

beforeAll(async () => {
  broker = await ChildBroker.start({ settings: { "group.initial.rebalance.delay.ms": "300" } });
}, 60_000);
afterAll(async () => {
  await broker.remove();
});

function client(bootstrap: string): Kafka {
  return new Kafka({ clientId: "group-e2e", brokers: [bootstrap], logLevel: logLevel.NOTHING });
}

/** Every record each consumer saw, and the assignment of its latest generation. */
class TrackedConsumer {
  assignment: number[] = [];
  readonly consumer: Consumer;

  constructor(
    kafka: Kafka,
    readonly name: string,
    private readonly seen: Map<string, string[]>,
  ) {
    const options = { groupId: GROUP, heartbeatInterval: 300, sessionTimeout: 10_000 };
    this.consumer = kafka.consumer(options);
    this.consumer.on(this.consumer.events.GROUP_JOIN, (e) => {
      this.assignment = [...(e.payload.memberAssignment[TOPIC] ?? [])].sort();
    });
  }

  async start(): Promise<void> {
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: TOPIC, fromBeginning: true });
    await this.consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
        for (const m of batch.messages) {
          const key = `${batch.partition}:${m.offset}`;
          this.seen.set(key, [...(this.seen.get(key) ?? []), this.name]);
          resolveOffset(m.offset);
        }
        // The commit is the end of processing: what it covers is never delivered again.
        const next = (BigInt(batch.lastOffset()) + 1n).toString();
        const { partition } = batch;
        await this.consumer.commitOffsets([{ topic: TOPIC, partition, offset: next }]);
        await heartbeat();
      },
    });
  }
}

const partitionOf = (key: string) => Number(key.split(":")[0]);
const offsetOf = (key: string) => Number(key.split(":")[1]);

async function waitFor(what: string, condition: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

/** Each partition is owned by exactly one consumer. */
function partitionsExactlyOnce(consumers: readonly TrackedConsumer[]): boolean {
  const all = consumers.flatMap((c) => c.assignment).sort((a, b) => a - b);
  return JSON.stringify(all) === JSON.stringify([...Array(PARTITIONS).keys()]);
}

async function produce(kafka: Kafka, from: number, count: number): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  for (let start = from; start < from + count; start += 1_000) {
    const messages = Array.from({ length: Math.min(1_000, from + count - start) }, (_, i) => ({
      partition: (start + i) % PARTITIONS,
      value: `record-${start + i}`,
    }));
    await producer.send({ topic: TOPIC, messages });
  }
  await producer.disconnect();
}

async function committedOffsets(kafka: Kafka): Promise<number[]> {
  const admin = kafka.admin();
  await admin.connect();
  const [topic] = await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] });
  await admin.disconnect();
  return topic!.partitions.sort((a, b) => a.partition - b.partition).map((p) => Number(p.offset));
}

describe("a kafkajs consumer group", () => {
  test("exactly-once consumption, partitions move on leave, offsets survive kill -9", async () => {
    const kafka = client(broker.bootstrap);
    const admin = kafka.admin();
    await admin.connect();
    const topics = [{ topic: TOPIC, numPartitions: PARTITIONS }];
    expect(await admin.createTopics({ topics })).toBe(true);

    const seen = new Map<string, string[]>();
    const consumers = ["a", "b", "c"].map((name) => new TrackedConsumer(kafka, name, seen));
    await Promise.all(consumers.map((c) => c.start()));
    await waitFor("three members with disjoint assignments", async () => {
      if (!partitionsExactlyOnce(consumers)) return false;
      const [group] = (await admin.describeGroups([GROUP])).groups;
      return group!.state === "Stable" && group!.members.length === 3;
    });
    expect(consumers.every((c) => c.assignment.length === 2)).toBe(true);

    await produce(kafka, 0, RECORDS);
    await waitFor("60,000 records consumed", () => seen.size === RECORDS);
    expect([...seen.values()].filter((by) => by.length > 1)).toEqual([]);
    // Each consumer read exactly the partitions it was assigned.
    for (const c of consumers) {
      const readBy = [...seen].filter(([, by]) => by[0] === c.name);
      const read = new Set(readBy.map(([key]) => partitionOf(key)));
      expect([...read].sort()).toEqual(c.assignment);
    }
    await waitFor("commits of the last batches", async () =>
      (await committedOffsets(kafka)).every((o) => o === RECORDS / PARTITIONS),
    );

    // Consumer c leaves (LeaveGroup): a and b take over its partitions.
    const [a, b, c] = consumers as [TrackedConsumer, TrackedConsumer, TrackedConsumer];
    const leftPartitions = c.assignment;
    await c.consumer.disconnect();
    await waitFor(
      "the two remaining members to own all partitions",
      () =>
        a.assignment.length + b.assignment.length === PARTITIONS && partitionsExactlyOnce([a, b]),
    );
    await produce(kafka, RECORDS, 6_000);
    await waitFor("6,000 more records consumed", () => seen.size === RECORDS + 6_000);
    expect([...seen.values()].filter((by) => by.length > 1)).toEqual([]);
    const afterMove = [...seen].filter(
      ([key]) => leftPartitions.includes(partitionOf(key)) && offsetOf(key) >= RECORDS / PARTITIONS,
    );
    const movedTo = new Set(afterMove.map(([, by]) => by[0]));
    expect(movedTo.has("c")).toBe(false);
    expect(movedTo.size).toBeGreaterThan(0);
    await waitFor("commits after the move", async () =>
      (await committedOffsets(kafka)).every((o) => o === (RECORDS + 6_000) / PARTITIONS),
    );

    await Promise.all([a.consumer.disconnect(), b.consumer.disconnect()]);
    await admin.disconnect();

    // kill -9 the broker: the committed offsets were fsynced before each commit was answered.
    await broker.kill9();
    broker = await broker.restart();
    const restarted = client(broker.bootstrap);
    const perPartition = (RECORDS + 6_000) / PARTITIONS;
    expect(await committedOffsets(restarted)).toEqual(Array(PARTITIONS).fill(perPartition));

    const resumedSeen = new Map<string, string[]>();
    const resumed = new TrackedConsumer(restarted, "d", resumedSeen);
    await resumed.start();
    await waitFor(
      "the resumed consumer to own all",
      () => resumed.assignment.length === PARTITIONS,
    );
    await produce(restarted, RECORDS + 6_000, 600);
    await waitFor("600 new records", () => resumedSeen.size === 600);
    await Bun.sleep(500);
    // Nothing committed before the crash is read again.
    expect(resumedSeen.size).toBe(600);
    expect([...resumedSeen.keys()].every((key) => offsetOf(key) >= perPartition)).toBe(true);
    await resumed.consumer.disconnect();
  }, 180_000);
});
