/**
 * A compacted topic seen by real clients: kafkajs produces keyed values and tombstones (and is
 * refused a keyless record with Kafka's INVALID_RECORD), the broker's LogCleaner compacts the
 * sealed segments, and confluent-kafka (librdkafka, as a Python process) reading from the
 * beginning gets exactly one record per key there, whose values make the latest state.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { ConfigResourceTypes, Kafka, logLevel } from "kafkajs";
import type { LogManager } from "../../src/storage/log-manager.ts";
import type { InProcessBroker } from "../support/broker-harness.ts";
import { startInProcessBroker } from "../support/broker-harness.ts";
import { waitUntil } from "../support/wait-until.ts";

const TOPIC = "compacted-py";
const KEYS = 50;
const ROUNDS = 10;
let broker: InProcessBroker;
let kafka: Kafka;

beforeAll(async () => {
  broker = await startInProcessBroker({ settings: { "log.cleaner.backoff.ms": "100" } });
  kafka = new Kafka({
    clientId: "compacted",
    brokers: [broker.bootstrap],
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: [
      {
        topic: TOPIC,
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

afterAll(async () => await broker.stop());

/** The latest value per key after applying `records` in order (a tombstone deletes). */
function applied(records: readonly [number, string, string | null][]): Map<string, string> {
  const state = new Map<string, string>();
  for (const [, key, value] of records) {
    if (value === null) state.delete(key);
    else state.set(key, value);
  }
  return state;
}

test("keyless records refused, keyed ones compacted, read by confluent-kafka", async () => {
  const producer = kafka.producer({ retry: { retries: 0 } });
  await producer.connect();
  const keyless = producer.send({
    topic: TOPIC,
    acks: -1,
    messages: [{ key: "a", value: "1" }, { value: "no key" }],
  });
  await expect(keyless).rejects.toMatchObject({ type: "INVALID_RECORD" });
  const produced: [number, string, string | null][] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const messages = Array.from({ length: KEYS }, (_, k) => ({
      key: `key-${k}`,
      value: round === ROUNDS - 1 && k < 10 ? null : `value-${round}-${k}`,
    }));
    await producer.send({ topic: TOPIC, acks: -1, messages });
    produced.push(...messages.map((m): [number, string, string | null] => [0, m.key, m.value]));
  }
  // Two large records: the second rolls the segment, so every keyed round above is sealed.
  for (const n of [1, 2]) {
    await producer.send({
      topic: TOPIC,
      acks: -1,
      messages: [{ key: "filler", value: `${n}`.padEnd(3000, ".") }],
    });
  }
  await producer.disconnect();
  const dir = path.join(broker.dataDir, `${TOPIC}-0`);
  const activeBase = Math.max(
    ...fs
      .readdirSync(dir)
      .filter((n) => n.endsWith(".log"))
      .map((n) => Number(n.slice(0, 20))),
  );
  const cleaned = new RegExp(`cleaned ${TOPIC}-0 \\(dirty section \\[\\d+, ${activeBase}\\)\\)`);
  for (let i = 0; i < 300 && !broker.logger.lines.some((l) => cleaned.test(l)); i++) {
    await Bun.sleep(100);
  }
  expect(broker.logger.lines.some((l) => cleaned.test(l))).toBe(true);

  // The Debian interpreter, where python3-confluent-kafka is installed (not a pyenv shim); an
  // asynchronous spawn, since the broker runs on this event loop.
  const script = path.join(import.meta.dir, "read-compacted.py");
  const python = Bun.spawn(["/usr/bin/python3", script, broker.bootstrap, TOPIC], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr] = await Promise.all([
    new Response(python.stdout).text(),
    new Response(python.stderr).text(),
  ]);
  expect(await python.exited).toBe(0);
  expect(stderr).toBe("");
  const read = stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as [number, string, string | null]);
  // The cleaned (sealed) part holds exactly one record per key: its latest, or its tombstone.
  const sealed = read.filter(([offset]) => offset < activeBase);
  expect(sealed.map(([, key]) => key).sort()).toEqual(
    [...Array.from({ length: KEYS }, (_, k) => `key-${k}`), "filler"].sort(),
  );
  const expected = applied(produced);
  expected.set("filler", "2".padEnd(3000, "."));
  expect(applied(read)).toEqual(expected);
  expect(expected.size).toBe(KEYS - 10 + 1);
}, 60_000);

test("log.cleaner.io.max.bytes.per.second set by AlterConfigs reaches the running cleaner", async () => {
  // The broker's LogManager (private to the ReplicaManager; read here only to observe).
  const { logs } = broker.broker.services.replicaManager as unknown as { logs: LogManager };
  // Kafka's default, Double.MAX_VALUE: no limit.
  expect(logs.cleaner.config.ioMaxBytesPerSecond).toBe(Number.MAX_VALUE);
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: ConfigResourceTypes.BROKER,
          name: "0",
          configEntries: [{ name: "log.cleaner.io.max.bytes.per.second", value: "1048576" }],
        },
      ],
    });
  } finally {
    await admin.disconnect();
  }
  await waitUntil(
    () => logs.cleaner.config.ioMaxBytesPerSecond === 1048576,
    10_000,
    "the cleaner's new rate",
  );
});
