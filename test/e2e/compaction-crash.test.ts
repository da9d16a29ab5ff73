/**
 * kill -9 of a real broker process at random moments while its LogCleaner compacts a topic,
 * then the log reopened (the loader finishes or rolls back the interrupted swap) and checked
 * against the model of what must survive: every record still there is the one produced at that
 * offset, offsets strictly increase (no duplicates), the log end is unchanged, and every key's
 * last record is the one produced last (its latest value, or its tombstone).
 */

import { afterAll, beforeAll, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { CompressionTypes, Kafka, logLevel } from "kafkajs";
import { DEFAULT_LOG_CONFIG } from "../../src/storage/log-config.ts";
import { LogManager } from "../../src/storage/log-manager.ts";
import type { StoredRecord } from "../storage/cleaner-support.ts";
import { readAllRecords } from "../storage/cleaner-support.ts";
import { removeDir, tempDir } from "../support/broker-harness.ts";
import { ChildBroker } from "../support/child-broker.ts";
import { LineLogger } from "../support/line-logger.ts";

const TOPIC = "compacted";
const KILLS = 20;
const KEYS = 2000;
const CLEANING = {
  "log.cleaner.backoff.ms": "50",
  "log.cleaner.io.buffer.size": "4096",
  // Slow enough that a cleaning spans seconds, so random kills land inside it.
  "log.cleaner.io.max.bytes.per.second": "1000000",
};

let root: string;
let snapshot: string;
let model: StoredRecord[];

beforeAll(async () => {
  root = tempDir("quill-compaction-crash-");
  snapshot = path.join(root, "snapshot");
  fs.mkdirSync(snapshot);
  const broker = await ChildBroker.start({
    dataDir: snapshot,
    settings: { "log.cleaner.enable": "false" },
  });
  try {
    await produceDirtyTopic(broker.bootstrap);
  } finally {
    expect(await broker.terminate()).toBe(0);
  }
  model = recordsIn(copyOf(snapshot, "model"));
  expect(model.length).toBe(30 * 500);
}, 120_000);

afterAll(() => removeDir(root));

/** 30 batches of 500 records over 2000 keys, 10% tombstones, every third batch gzip. */
async function produceDirtyTopic(bootstrap: string): Promise<void> {
  const kafka = new Kafka({ clientId: "crash", brokers: [bootstrap], logLevel: logLevel.NOTHING });
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
          { name: "segment.bytes", value: "32768" },
        ],
      },
    ],
  });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  let seed = 42;
  const random = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  for (let b = 0; b < 30; b++) {
    const messages = Array.from({ length: 500 }, (_, i) => ({
      key: `key-${random(KEYS)}`,
      value: random(10) === 0 ? null : `value-${b}-${i}-${"x".repeat(random(40))}`,
    }));
    const compression = b % 3 === 0 ? CompressionTypes.GZIP : CompressionTypes.None;
    await producer.send({ topic: TOPIC, acks: -1, compression, messages });
  }
  await producer.disconnect();
}

function copyOf(dir: string, name: string): string {
  const to = path.join(root, name);
  fs.cpSync(dir, to, { recursive: true });
  return to;
}

/** Opens the data dir the way a restarted broker does (recovery, swap completion) and reads. */
function recordsIn(dataDir: string): StoredRecord[] {
  const lines: string[] = [];
  const manager = LogManager.open({
    logDirs: [dataDir],
    logger: new LineLogger(lines),
    configForTopic: () => ({ ...DEFAULT_LOG_CONFIG, cleanupPolicy: "compact" }),
  });
  try {
    return readAllRecords(manager.getLog(TOPIC, 0)!);
  } finally {
    manager.close();
  }
}

/** What is wrong with `after` against the model; empty when nothing is. */
function violations(after: readonly StoredRecord[]): string[] {
  const problems: string[] = [];
  const produced = new Map(model.map((r) => [r.offset, r]));
  let previous = -1n;
  for (const r of after) {
    if (r.offset <= previous) problems.push(`offset ${r.offset} after ${previous}`);
    previous = r.offset;
    const m = produced.get(r.offset);
    if (m === undefined || m.key !== r.key || m.value !== r.value) {
      problems.push(`offset ${r.offset} holds ${r.key}=${r.value}, produced ${m?.key}=${m?.value}`);
    }
  }
  const lastOf = (records: readonly StoredRecord[]) =>
    new Map(records.map((r) => [r.key, r.offset]));
  const expected = lastOf(model);
  const found = lastOf(after);
  for (const [key, offset] of expected) {
    if (found.get(key) !== offset)
      problems.push(`${key}: last at ${found.get(key)}, not ${offset}`);
  }
  if (after.at(-1)?.offset !== model.at(-1)?.offset) problems.push("the log end moved");
  return problems;
}

test(`kill -9 at ${KILLS} random moments of cleaning loses nothing that must survive`, async () => {
  // One undisturbed run measures how long a cleaning takes on this machine now.
  const timing = copyOf(snapshot, "timing");
  const first = await ChildBroker.start({ dataDir: timing, settings: CLEANING });
  const started = performance.now();
  const cleanedLine = new RegExp(`cleaned ${TOPIC}-0`);
  while (!cleanedLine.test(first.stderrText)) await Bun.sleep(20);
  const cleaningMs = performance.now() - started;
  await first.kill9();
  expect(violations(recordsIn(timing))).toEqual([]);
  expect(recordsIn(timing).length).toBeLessThan(KEYS + 1);

  let midCleaning = 0;
  for (let round = 0; round < KILLS; round++) {
    const dataDir = copyOf(snapshot, `round-${round}`);
    const broker = await ChildBroker.start({ dataDir, settings: CLEANING });
    await Bun.sleep(Math.random() * cleaningMs * 0.8);
    await broker.kill9();
    if (!cleanedLine.test(broker.stderrText)) midCleaning++;
    const problems = violations(recordsIn(dataDir));
    expect({ round, problems: problems.slice(0, 5) }).toEqual({ round, problems: [] });
    removeDir(dataDir);
  }
  console.log(
    `compaction crash: ${midCleaning} of ${KILLS} kills landed before the cleaning ` +
      `finished (an undisturbed cleaning took ${cleaningMs.toFixed(0)} ms)`,
  );
  expect(midCleaning).toBeGreaterThanOrEqual(KILLS / 2);
}, 600_000);
