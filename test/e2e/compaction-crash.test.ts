/**
 * kill -9 of a real broker process at random moments while its LogCleaner compacts a topic,
 * then the log reopened (the loader finishes or rolls back the interrupted swap) and checked
 * against the model of what must survive: every record still there is the one produced at that
 * offset, offsets strictly increase (no duplicates), the log end is unchanged, and every key's
 * last record is the one produced last (its latest value, or its tombstone).
 *
 * The moments are chosen against the cleaning's progress, not the clock alone (how long a
 * cleaning takes moves by 10x with the machine's load, and the throttle only acts on cleanings
 * longer than its 300 ms check interval): a quarter of the kills land at a random time of the
 * offset-map pass, the rest a random 0-3 ms after a random group of the filtering pass began
 * (seen as its `.cleaned` file, or the swapped-in segment replacing the old one). What each kill
 * interrupted is read from the files it left (`.cleaned`, `.swap`, segments already replaced)
 * and the test asserts that most of them landed inside the filtering and swapping.
 */

import { afterAll, beforeAll, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { CompressionTypes, ConfigResourceTypes, Kafka, logLevel } from "kafkajs";
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
  // Throttled, so a cleaning that takes longer than the throttle's check interval spans seconds.
  "log.cleaner.io.max.bytes.per.second": "1000000",
};
const CLEANED_LINE = new RegExp(
  `cleaned ${TOPIC}-0 \\(dirty section \\[0, (\\d+)\\)\\).* into (\\d+)`,
);
/** A cleaning that gave up or failed: the kill then tests what it left. */
const FAILED_LINE = /abandoned|uncleanable/;
const POLL_LIMIT_MS = 30_000;

let root: string;
let snapshot: string;
let model: StoredRecord[];
/** The snapshot's segment files by name, with their sizes: a different size means replaced. */
let snapshotSizes: Map<string, number>;

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
  const dir = partitionDir(snapshot);
  snapshotSizes = new Map(
    fs
      .readdirSync(dir)
      .filter((n) => n.endsWith(".log"))
      .map((n) => [n, fs.statSync(path.join(dir, n)).size]),
  );
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
  // mulberry32: seeded, so every run produces the same log, and with every key in use.
  let seed = 42;
  const random = (n: number): number => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t ^= t + Math.imul(t ^ (t >>> 7), 61 | t);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
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
  // Larger segments from now on: the cleaner groups the 32 KiB ones four to a cleaned segment,
  // so a swap replaces several old segments (the recovery paths that delete more than one).
  await admin.connect();
  await admin.alterConfigs({
    validateOnly: false,
    resources: [
      {
        type: ConfigResourceTypes.TOPIC,
        name: TOPIC,
        // AlterConfigs replaces the topic's whole set, as Kafka's does.
        configEntries: [
          { name: "cleanup.policy", value: "compact" },
          { name: "segment.bytes", value: String(4 * 32768) },
        ],
      },
    ],
  });
  await admin.disconnect();
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

function partitionDir(dataDir: string): string {
  return path.join(dataDir, `${TOPIC}-0`);
}

/** Groups of the filtering pass begun so far: a `.cleaned` or `.swap` log, or a replaced one. */
function groupsBegun(dir: string): number {
  let begun = 0;
  for (const name of fs.readdirSync(dir)) {
    if (name.endsWith(".log.cleaned") || name.endsWith(".log.swap")) begun++;
    else if (name.endsWith(".log") && snapshotSizes.get(name) !== sizeOf(path.join(dir, name)))
      begun++;
  }
  return begun;
}

/** A file's size, or -1 when it went between listing and stat. */
function sizeOf(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return -1;
  }
}

/** What a kill interrupted, from the files it left (read before the loader touches them). */
function interrupted(dir: string, stderr: string): string {
  if (CLEANED_LINE.test(stderr)) return "after the cleaning";
  const names = fs.readdirSync(dir);
  if (names.some((n) => n.endsWith(".swap"))) return "a swap (.swap files)";
  if (names.some((n) => n.endsWith(".cleaned"))) return "a group being written (.cleaned)";
  if (groupsBegun(dir) > 0) return "between two groups";
  return "before the first group (start, offset map)";
}

/** Polls until `groups` groups have begun or the cleaning is over. */
async function untilGroupsBegun(broker: ChildBroker, groups: number): Promise<void> {
  const dir = partitionDir(broker.dataDir);
  const started = performance.now();
  const over = (): boolean =>
    CLEANED_LINE.test(broker.stderrText) || FAILED_LINE.test(broker.stderrText);
  while (groupsBegun(dir) < groups && !over()) {
    if (performance.now() - started > POLL_LIMIT_MS) throw new Error(`no group ${groups}`);
    await Bun.sleep(1);
  }
}

test(`kill -9 at ${KILLS} random moments of cleaning loses nothing that must survive`, async () => {
  // One undisturbed run: how long the offset map takes and how many groups there are.
  const timing = copyOf(snapshot, "timing");
  const first = await ChildBroker.start({ dataDir: timing, settings: CLEANING });
  const started = performance.now();
  await untilGroupsBegun(first, 1);
  const mapPassMs = performance.now() - started;
  await untilGroupsBegun(first, Number.POSITIVE_INFINITY);
  const cleaningMs = performance.now() - started;
  const [, dirtyEnd, groupCount] = first.stderrText.match(CLEANED_LINE)!;
  const groups = Number(groupCount);
  await first.kill9();
  const cleaned = recordsIn(timing);
  expect(violations(cleaned)).toEqual([]);
  // The cleaned part holds one record per key.
  const sealed = cleaned.filter((r) => r.offset < BigInt(dirtyEnd));
  expect(new Set(sealed.map((r) => r.key)).size).toBe(sealed.length);
  expect(groups).toBeGreaterThan(3);
  expect(groups).toBeLessThan(snapshotSizes.size - 1);

  const moments = new Map<string, number>();
  for (let round = 0; round < KILLS; round++) {
    const dataDir = copyOf(snapshot, `round-${round}`);
    const broker = await ChildBroker.start({ dataDir, settings: CLEANING });
    if (round % 4 === 0) {
      await Bun.sleep(Math.random() * mapPassMs);
    } else {
      await untilGroupsBegun(broker, 1 + Math.floor(Math.random() * groups));
      await Bun.sleep(Math.random() * 3);
    }
    await broker.kill9();
    const moment = interrupted(partitionDir(dataDir), broker.stderrText);
    moments.set(moment, (moments.get(moment) ?? 0) + 1);
    const problems = violations(recordsIn(dataDir));
    expect({ round, moment, problems: problems.slice(0, 5) }).toEqual({
      round,
      moment,
      problems: [],
    });
    removeDir(dataDir);
  }
  const tally = [...moments].map(([moment, n]) => `${n} ${moment}`).join(", ");
  console.log(
    `compaction crash: ${KILLS} kills interrupted: ${tally} (an undisturbed cleaning took ` +
      `${cleaningMs.toFixed(0)} ms, its offset map ${mapPassMs.toFixed(0)} ms, ${groups} groups)`,
  );
  const inside =
    KILLS -
    (moments.get("after the cleaning") ?? 0) -
    (moments.get("before the first group (start, offset map)") ?? 0);
  expect(inside).toBeGreaterThanOrEqual(KILLS / 4);
}, 600_000);
