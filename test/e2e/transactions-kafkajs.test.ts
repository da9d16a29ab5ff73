// Transactions end to end with kafkajs (issue 15): commit and abort seen by read_committed and
// read_uncommitted consumers, sendOffsets committing a group's offsets only with the
// transaction, a new producer incarnation fencing the old one, and a compacted topic written
// transactionally and cleaned.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { type Consumer, Kafka, logLevel, type Producer } from "kafkajs";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { waitUntil } from "../support/wait-until.ts";

const COMPACTED = "txn-compacted";
let broker: InProcessBroker;
let kafka: Kafka;

beforeAll(async () => {
  broker = await startInProcessBroker({
    settings: { "transaction.state.log.num.partitions": "4", "log.cleaner.backoff.ms": "100" },
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
      {
        topic: COMPACTED,
        numPartitions: 1,
        configEntries: [
          { name: "cleanup.policy", value: "compact" },
          { name: "segment.bytes", value: "4096" },
        ],
      },
    ],
  });
  await admin.disconnect();
}, 60_000);
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

describe("a compacted topic written in transactions", () => {
  const pad = (v: string) => v.padEnd(100, ".");

  /** Key -> value as a consumer at `isolation` reads the topic up to the record "end". */
  async function readTable(readUncommitted: boolean): Promise<Map<string, string>> {
    const consumer = kafka.consumer({ groupId: `table-${crypto.randomUUID()}`, readUncommitted });
    await consumer.connect();
    await consumer.subscribe({ topic: COMPACTED, fromBeginning: true });
    const table = new Map<string, string>();
    let done: () => void = () => {};
    const finished = new Promise<void>((resolve) => (done = resolve));
    await consumer.run({
      eachMessage: async ({ message }) => {
        table.set(message.key!.toString(), message.value!.toString().replace(/\.+$/, ""));
        if (message.key!.toString() === "end") done();
      },
    });
    await Promise.race([finished, Bun.sleep(15_000)]);
    await consumer.disconnect();
    return table;
  }

  /** The cleaner's checkpointed position for the topic, -1 before its first cleaning. */
  function cleanerOffset(): number {
    const file = path.join(broker.dataDir, "cleaner-offset-checkpoint");
    if (!fs.existsSync(file)) return -1;
    const line = fs
      .readFileSync(file, "utf8")
      .split("\n")
      .find((l) => l.startsWith(`${COMPACTED} 0 `));
    return line === undefined ? -1 : Number(line.split(" ")[2]);
  }

  test("the cleaner removes aborted values: both isolation levels read the committed table", async () => {
    const producer = await transactionalProducer("tx-compacted");
    const keys = Array.from({ length: 10 }, (_, i) => `k${i}`);
    const write = async (entries: [string, string][], commit: boolean) => {
      const txn = await producer.transaction();
      await txn.send({
        topic: COMPACTED,
        messages: entries.map(([key, value]) => ({ key, value: pad(value) })),
      });
      await (commit ? txn.commit() : txn.abort());
    };
    await write(
      keys.map((k) => [k, `c1-${k}`]),
      true,
    ); // offsets 0-9, marker 10
    await write(
      keys.map((k) => [k, `a-${k}`]),
      false,
    ); // 11-20, marker 21
    await write(
      keys.slice(0, 5).map((k) => [k, `c2-${k}`]),
      true,
    ); // 22-26, marker 27
    // Enough further commits to roll those segments out of the active one.
    for (let i = 0; i < 10; i++)
      await write(
        [0, 1, 2, 3].map((j) => [`f${j}`, `f-${i}`]),
        true,
      );
    await write([["end", "end"]], true);
    await producer.disconnect();
    await waitUntil(() => cleanerOffset() >= 28, 20_000, "a cleaning past the aborted values");
    const committed = new Map(keys.map((k, i) => [k, i < 5 ? `c2-${k}` : `c1-${k}`]));
    for (const readUncommitted of [false, true]) {
      const table = await readTable(readUncommitted);
      expect(new Map(keys.map((k) => [k, table.get(k)]))).toEqual(committed);
      expect([...table.values()].filter((v) => v.startsWith("a-"))).toEqual([]);
    }
  }, 90_000);
});
