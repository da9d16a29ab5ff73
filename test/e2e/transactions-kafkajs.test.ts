// Transactions end to end with kafkajs (issue 15): commit and abort seen by read_committed and
// read_uncommitted consumers, sendOffsets committing a group's offsets only with the
// transaction, and a new producer incarnation fencing the old one.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Consumer, Kafka, logLevel, type Producer } from "kafkajs";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";

let broker: InProcessBroker;
let kafka: Kafka;

beforeAll(async () => {
  broker = await startInProcessBroker({
    settings: { "transaction.state.log.num.partitions": "4" },
  });
  kafka = new Kafka({
    clientId: "txn-test",
    brokers: [broker.bootstrap],
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [
      { topic: "txn-out", numPartitions: 2 },
      { topic: "txn-in", numPartitions: 1 },
    ],
  });
  await admin.disconnect();
});
afterAll(async () => {
  await broker.stop();
});

async function transactionalProducer(id: string): Promise<Producer> {
  const producer = kafka.producer({
    transactionalId: id,
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await producer.connect();
  return producer;
}

/** Everything a consumer at `isolation` sees on `topic` until `expected` values or timeout. */
async function consumeAll(
  topic: string,
  readUncommitted: boolean,
  expected: number,
): Promise<string[]> {
  const consumer: Consumer = kafka.consumer({
    groupId: `reader-${topic}-${readUncommitted}-${crypto.randomUUID()}`,
    readUncommitted,
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen: string[] = [];
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => (done = resolve));
  await consumer.run({
    eachMessage: async ({ message }) => {
      seen.push(message.value!.toString());
      if (seen.length >= expected) done();
    },
  });
  await Promise.race([finished, Bun.sleep(8000)]);
  await consumer.disconnect();
  return seen.sort();
}

describe("kafkajs transactional producer", () => {
  test("committed records are visible to read_committed, aborted ones only uncommitted", async () => {
    const producer = await transactionalProducer("tx-commit-abort");
    const committed = await producer.transaction();
    await committed.send({
      topic: "txn-out",
      messages: [
        { value: "c1", partition: 0 },
        { value: "c2", partition: 1 },
      ],
    });
    await committed.commit();
    const aborted = await producer.transaction();
    await aborted.send({
      topic: "txn-out",
      messages: [
        { value: "a1", partition: 0 },
        { value: "a2", partition: 1 },
      ],
    });
    await aborted.abort();
    const last = await producer.transaction();
    await last.send({ topic: "txn-out", messages: [{ value: "c3", partition: 0 }] });
    await last.commit();
    await producer.disconnect();
    // The 3 committed records and nothing else; the uncommitted reader also sees the aborted.
    expect(await consumeAll("txn-out", false, 3)).toEqual(["c1", "c2", "c3"]);
    expect(await consumeAll("txn-out", true, 5)).toEqual(["a1", "a2", "c1", "c2", "c3"]);
  }, 60_000);

  test("offsets sent in a transaction are committed only with it", async () => {
    const producer = await transactionalProducer("tx-offsets");
    const group = "ctp-group";
    const aborted = await producer.transaction();
    await aborted.sendOffsets({
      consumerGroupId: group,
      topics: [{ topic: "txn-in", partitions: [{ partition: 0, offset: "5" }] }],
    });
    await aborted.abort();
    const admin = kafka.admin();
    await admin.connect();
    const before = await admin.fetchOffsets({ groupId: group, topics: ["txn-in"] });
    expect(before[0]!.partitions[0]!.offset).toBe("-1");
    const committed = await producer.transaction();
    await committed.sendOffsets({
      consumerGroupId: group,
      topics: [{ topic: "txn-in", partitions: [{ partition: 0, offset: "7" }] }],
    });
    await committed.commit();
    // The markers are written after EndTxn is answered; the commit lands shortly after.
    let offset = "-1";
    for (let i = 0; i < 50 && offset !== "7"; i++) {
      const after = await admin.fetchOffsets({ groupId: group, topics: ["txn-in"] });
      offset = after[0]!.partitions[0]!.offset;
      if (offset !== "7") await Bun.sleep(100);
    }
    expect(offset).toBe("7");
    await admin.disconnect();
    await producer.disconnect();
  }, 60_000);

  test("a second producer with the same id fences the first and aborts its transaction", async () => {
    const first = await transactionalProducer("tx-fence");
    const open = await first.transaction();
    await open.send({ topic: "txn-out", messages: [{ value: "zombie", partition: 1 }] });
    const second = await transactionalProducer("tx-fence");
    const t = await second.transaction();
    await t.send({ topic: "txn-out", messages: [{ value: "fresh", partition: 1 }] });
    await t.commit();
    await expect(open.commit()).rejects.toThrow();
    await second.disconnect();
    await first.disconnect().catch(() => undefined);
    const seen = await consumeAll("txn-out", false, 4);
    expect(seen).toContain("fresh");
    expect(seen).not.toContain("zombie");
  }, 60_000);
});
