// Restarts of a broker running as a child process (`bun src/main.ts serve`) on one data dir:
// a SIGTERM stop must exit 0 and leave the clean-shutdown marker, a kill -9 must lose nothing
// that was acknowledged, and in both cases topics, partitions and offsets come back.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { ChildBroker } from "../support/child-broker.ts";
import { kcatOk, stdoutText } from "./kcat-process.ts";

const MARKER = ".kafka_cleanshutdown";
const PARTITIONS = 3;
const started: ChildBroker[] = [];

async function startBroker(dataDir?: string): Promise<ChildBroker> {
  const settings = { "num.partitions": String(PARTITIONS) };
  const broker = await ChildBroker.start({ dataDir, settings });
  started.push(broker);
  return broker;
}

async function restart(broker: ChildBroker): Promise<ChildBroker> {
  const again = await broker.restart();
  started.push(again);
  return again;
}

afterEach(async () => {
  // Every incarnation shares one data dir: kill them all first, then remove it once.
  for (const broker of started.splice(0).reverse()) await broker.remove();
});

const lines = (from: number, count: number, tag: string) =>
  Array.from({ length: count }, (_, i) => `key-${(from + i) % 11}\t${tag}-${from + i}\n`).join("");

async function produce(broker: ChildBroker, topic: string, input: string, acks: string) {
  const args = ["-P", "-t", topic, "-K", "\t", "-z", "zstd", "-X", `acks=${acks}`];
  await kcatOk(broker.bootstrap, args, { stdin: input });
}

/** Every record of the topic as `partition offset key value` rows, sorted by value. */
async function consumeAll(broker: ChildBroker, topic: string): Promise<string[]> {
  const result = await kcatOk(broker.bootstrap, [
    "-C",
    "-e",
    "-q",
    "-t",
    topic,
    "-o",
    "beginning",
    "-X",
    "fetch.wait.max.ms=100",
    "-f",
    "%p %o %k %s\n",
  ]);
  return stdoutText(result)
    .split("\n")
    .filter((row) => row !== "");
}

/** The offsets of partition `p`'s rows, in the order they were read. */
const offsetsOf = (rows: string[], p: number) =>
  rows.filter((row) => row.startsWith(`${p} `)).map((row) => Number(row.split(" ")[1]));
const values = (rows: string[]) => rows.map((row) => row.split(" ")[3]!).sort();
const expectedValues = (count: number, tag: string) =>
  Array.from({ length: count }, (_, i) => `${tag}-${i}`).sort();

describe("restart on the same data dir", () => {
  test("SIGTERM: exit 0, clean-shutdown marker, then every record and offset is back", async () => {
    const first = await startBroker();
    await produce(first, "durable", lines(0, 3000, "v"), "all");
    const before = await consumeAll(first, "durable");
    expect(before.length).toBe(3000);
    expect(await first.terminate()).toBe(0);
    expect(first.stderrText).toContain("stopped cleanly");
    expect(existsSync(join(first.dataDir, MARKER))).toBe(true);

    const second = await restart(first);
    expect(second.port).toBe(first.port);
    // The marker only marks a stopped broker; a running one has removed it.
    expect(existsSync(join(second.dataDir, MARKER))).toBe(false);
    const after = await consumeAll(second, "durable");
    expect(after.sort()).toEqual(before.sort());
    const listing = stdoutText(await kcatOk(second.bootstrap, ["-L", "-t", "durable"]));
    expect(listing).toContain(`topic "durable" with ${PARTITIONS} partitions:`);

    // New records continue each partition's offsets where the old log ended.
    await produce(second, "durable", lines(3000, 300, "v"), "all");
    const all = await consumeAll(second, "durable");
    expect(values(all)).toEqual(expectedValues(3300, "v"));
    for (let p = 0; p < PARTITIONS; p++) {
      expect(offsetsOf(all, p)).toEqual(offsetsOf(all, p).map((_, i) => i));
    }
    expect(await second.terminate()).toBe(0);
  }, 60_000);

  test("kill -9 after kcat's acks=1 deliveries: every delivered record survives", async () => {
    const first = await startBroker();
    await produce(first, "crashy", lines(0, 5000, "c"), "1");
    await first.kill9();
    expect(existsSync(join(first.dataDir, MARKER))).toBe(false);
    const second = await restart(first);
    expect(values(await consumeAll(second, "crashy"))).toEqual(expectedValues(5000, "c"));
    expect(await second.terminate()).toBe(0);
  }, 60_000);

  test("kill -9 amid kafkajs acks=-1 sends: acknowledged ones survive, offsets dense", async () => {
    const first = await startBroker();
    const acknowledged = await produceUntilKilled(first, "midstream");
    expect(acknowledged.length).toBeGreaterThan(0);
    const second = await restart(first);
    const rows = await consumeAll(second, "midstream");
    const stored = new Set(rows.map((row) => row.split(" ")[3]!));
    const lost = acknowledged.filter((value) => !stored.has(value));
    expect(lost).toEqual([]);
    for (let p = 0; p < PARTITIONS; p++) {
      expect(offsetsOf(rows, p)).toEqual(offsetsOf(rows, p).map((_, i) => i));
    }
    expect(await second.terminate()).toBe(0);
  }, 60_000);
});

/**
 * Sends batches of 200 keyed records with acks=-1 and no retries, and kills the broker with
 * SIGKILL once 20 batches have been acknowledged, while more are in flight. Returns the values
 * whose send was acknowledged before the kill.
 */
async function produceUntilKilled(broker: ChildBroker, topic: string): Promise<string[]> {
  const kafka = new Kafka({
    clientId: "restart-test",
    brokers: [broker.bootstrap],
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
    connectionTimeout: 2_000,
    requestTimeout: 5_000,
  });
  const producer = kafka.producer({ allowAutoTopicCreation: true, retry: { retries: 5 } });
  await producer.connect();
  const acknowledged: string[] = [];
  let batchIndex = 0;
  const sendOne = async () => {
    const values = Array.from({ length: 200 }, (_, i) => `m-${batchIndex}-${i}`);
    batchIndex++;
    const messages = values.map((value, i) => ({ key: `k${i % 7}`, value }));
    await producer.send({ topic, acks: -1, messages });
    acknowledged.push(...values);
  };
  await sendOne(); // Creates the topic (with retries while it appears), before the kill is armed.
  const inFlight: Promise<void>[] = [];
  let killed = false;
  for (let round = 0; round < 200 && !killed; round++) {
    inFlight.push(sendOne().catch(() => {}));
    if (inFlight.length % 4 === 0) await Promise.all(inFlight.slice(-4));
    if (acknowledged.length >= 20 * 200) {
      inFlight.push(
        sendOne().catch(() => {}),
        sendOne().catch(() => {}),
      );
      await broker.kill9();
      killed = true;
    }
  }
  expect(killed).toBe(true);
  await Promise.all(inFlight);
  await producer.disconnect().catch(() => {});
  return acknowledged;
}
