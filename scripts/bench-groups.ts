/**
 * Consumer-group benchmark (not a timed test).
 *
 * 1. Offset commits per second with the local and the ZooKeeper offset store (a real ZooKeeper
 *    started for the run), side by side, for 1, 10 and 100 partitions per
 *    OffsetCommit, through GroupCoordinator.offsetCommit (what the OffsetCommit handler calls),
 *    with one commit in flight (a consumer committing after each batch) and with IN_FLIGHT
 *    concurrent commits (many groups; the local store shares fdatasyncs between them, and
 *    shows commits per fdatasync so the grouping is visible).
 * 2. Time for a 10-member group to rebalance when an 11th member joins: from the newcomer's
 *    JoinGroup to the last SyncGroup answer, with members that rejoin as soon as a heartbeat
 *    says REBALANCE_IN_PROGRESS (domain level: no network, no client heartbeat interval).
 * 3. The same with eleven kafkajs consumers against a broker in this process
 *    (heartbeat interval and fetch max wait 100 ms, initial rebalance delay 0): from the
 *    newcomer's run() until every member has joined the new generation. Dominated by how soon
 *    clients notice (kafkajs heartbeats between fetches).
 *
 * Run: bun scripts/bench-groups.ts [durationMs=2000]
 */

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { type Consumer, Kafka, logLevel } from "kafkajs";
import { startBroker } from "../src/broker/broker.ts";
import { loadConfig } from "../src/config/load-config.ts";
import { GroupCoordinator } from "../src/coordinator/group-coordinator.ts";
import type { JoinGroupRequest, JoinGroupResult } from "../src/coordinator/group-operations.ts";
import { LocalOffsetStore } from "../src/coordinator/local-offset-store.ts";
import type { OffsetStore } from "../src/coordinator/offset-store.ts";
import { ZooKeeperOffsetStore } from "../src/coordinator/zookeeper-offset-store.ts";
import { ErrorCode } from "../src/protocol/errors.ts";
import { SILENT_LOGGER } from "../src/util/logger.ts";
import { startZooKeeper } from "../test/support/zookeeper-server.ts";

const DURATION_MS = Number(process.argv[2] ?? 2_000);
const REPEATS = 3;
const IN_FLIGHT = 32;
const PARTITION_COUNTS = [1, 10, 100];
const REBALANCE_RUNS = 20;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function rate(
  inFlight: number,
  op: (worker: number, i: number) => Promise<unknown>,
): Promise<number> {
  const startedMs = performance.now();
  const endMs = startedMs + DURATION_MS;
  let done = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async (_, worker) => {
      for (let i = 0; performance.now() < endMs; i++) {
        await op(worker, i);
        done++;
      }
    }),
  );
  return done / ((performance.now() - startedMs) / 1000);
}

/** An offset store to measure, and what it can say about fsync grouping (local store only). */
interface StoreUnderTest {
  readonly store: OffsetStore;
  commitsPerFsync(): number | null;
  close(): Promise<void>;
}

async function openLocalStore(): Promise<StoreUnderTest> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "quill-bench-groups-"));
  const store = LocalOffsetStore.open(dir);
  return {
    store,
    commitsPerFsync: () => store.stats.recordsWritten / store.stats.fsyncs,
    close: async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function openZooKeeperStore(connectString: string): Promise<StoreUnderTest> {
  const options = { sessionTimeoutMs: 10_000, connectTimeoutMs: 5_000 };
  const store = await ZooKeeperOffsetStore.connect(connectString, options);
  return { store, commitsPerFsync: () => null, close: () => store.close() };
}

async function commitRates(
  open: () => Promise<StoreUnderTest>,
  partitions: number,
  inFlight: number,
) {
  const rates: number[] = [];
  const perSync: number[] = [];
  for (let run = 0; run < REPEATS; run++) {
    const underTest = await open();
    const coordinator = new GroupCoordinator(underTest.store, { offsetsPerCommitMax: 1_000 });
    await coordinator.start();
    const commitOf = (worker: number, i: number) => ({
      groupId: `bench-${run}-${worker}`,
      generationId: -1,
      memberId: "",
      groupInstanceId: null,
      topics: [
        {
          name: "bench-topic",
          partitions: Array.from({ length: partitions }, (_, p) => ({
            partitionIndex: p,
            committedOffset: BigInt(i),
            committedLeaderEpoch: 0,
            committedMetadata: "",
          })),
        },
      ],
    });
    const r = await rate(inFlight, async (worker, i) => {
      const res = await coordinator.offsetCommit(commitOf(worker, i));
      const errorCode = res.topics[0]!.partitions[0]!.errorCode;
      if (errorCode !== ErrorCode.NONE) throw new Error(`commit failed with ${errorCode}`);
    });
    rates.push(r);
    perSync.push(underTest.commitsPerFsync() ?? NaN);
    coordinator.close();
    await underTest.close();
  }
  return { commitsPerSecond: median(rates), commitsPerFsync: median(perSync) };
}

function joinRequest(groupId: string, memberId: string): JoinGroupRequest {
  return {
    groupId,
    memberId,
    groupInstanceId: null,
    protocolType: "consumer",
    protocols: [{ name: "range", metadata: new Uint8Array(32) }],
    sessionTimeoutMs: 30_000,
    rebalanceTimeoutMs: 30_000,
    reason: null,
    apiVersion: 9,
    clientId: "bench",
    clientHost: "/127.0.0.1",
  };
}

async function join(c: GroupCoordinator, groupId: string, memberId = ""): Promise<JoinGroupResult> {
  const first = await c.joinGroup(joinRequest(groupId, memberId));
  if (first.errorCode !== ErrorCode.MEMBER_ID_REQUIRED) return first;
  return c.joinGroup(joinRequest(groupId, first.memberId));
}

async function syncAll(c: GroupCoordinator, groupId: string, joins: readonly JoinGroupResult[]) {
  return Promise.all(
    joins.map((j) =>
      c.syncGroup({
        groupId,
        generationId: j.generationId,
        memberId: j.memberId,
        groupInstanceId: null,
        protocolType: "consumer",
        protocolName: "range",
        assignments:
          j.leader !== j.memberId
            ? []
            : j.members.map((m) => ({ memberId: m.memberId, assignment: new Uint8Array(64) })),
      }),
    ),
  );
}

/** ms from an 11th member's JoinGroup until all 11 members have their new assignment. */
async function rebalanceMs(c: GroupCoordinator, groupId: string): Promise<number> {
  const initial = await Promise.all(Array.from({ length: 10 }, () => join(c, groupId)));
  await syncAll(c, groupId, initial);
  const started = performance.now();
  const newcomer = join(c, groupId);
  // Each member learns of the rebalance from its next heartbeat, and rejoins at once.
  const rejoins = initial.map(async (m) => {
    const { generationId, memberId } = m;
    const heartbeat = { groupId, generationId, memberId, groupInstanceId: null };
    while (c.heartbeat(heartbeat) !== ErrorCode.REBALANCE_IN_PROGRESS) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    return c.joinGroup(joinRequest(groupId, m.memberId));
  });
  const joins = await Promise.all([newcomer, ...rejoins]);
  const syncs = await syncAll(c, groupId, joins);
  const elapsed = performance.now() - started;
  const generations = new Set(joins.map((j) => j.generationId));
  if (syncs.some((s) => s.errorCode !== ErrorCode.NONE) || generations.size !== 1) {
    throw new Error("the rebalance did not complete in one generation");
  }
  return elapsed;
}

async function main(): Promise<void> {
  const cpus = os.cpus().length;
  const zooKeeper = await startZooKeeper();
  try {
    const stores: [string, () => Promise<StoreUnderTest>][] = [
      ["local", openLocalStore],
      ["ZooKeeper", () => openZooKeeperStore(zooKeeper.connectString)],
    ];
    for (const [name, open] of stores) {
      console.log(
        `\nOffset commits/s through GroupCoordinator.offsetCommit, ${name} store ` +
          `(median of ${REPEATS} runs of ${DURATION_MS} ms; ${cpus} CPUs)`,
      );
      console.log(
        "| partitions/commit | 1 in flight | commits/fsync | 32 in flight | " +
          "commits/fsync | offsets/s at 32 |",
      );
      console.log("|---|---|---|---|---|---|");
      for (const partitions of PARTITION_COUNTS) {
        const one = await commitRates(open, partitions, 1);
        const many = await commitRates(open, partitions, IN_FLIGHT);
        const cells = [
          partitions,
          one.commitsPerSecond.toFixed(0),
          one.commitsPerFsync.toFixed(1),
          many.commitsPerSecond.toFixed(0),
          many.commitsPerFsync.toFixed(1),
          (many.commitsPerSecond * partitions).toFixed(0),
        ];
        console.log(`| ${cells.join(" | ").replaceAll("NaN", "n/a")} |`);
      }
    }
  } finally {
    await zooKeeper.stop();
  }

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "quill-bench-groups-"));
  const store = LocalOffsetStore.open(dir);
  const coordinator = new GroupCoordinator(store, { initialRebalanceDelayMs: 0 });
  await coordinator.start();
  const times: number[] = [];
  for (let run = 0; run < REBALANCE_RUNS; run++) {
    times.push(await rebalanceMs(coordinator, `rebalance-${run}`));
  }
  console.log(
    `\n10-member group, one member joins: rebalance in ` +
      `${median(times).toFixed(2)} ms median, ` +
      `${Math.max(...times).toFixed(2)} ms max over ${REBALANCE_RUNS} runs (domain level)`,
  );
  coordinator.close();
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

/** ms until eleven kafkajs consumers have all joined after the 11th starts; median of runs. */
async function kafkajsRebalanceMs(): Promise<number[]> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "quill-bench-groups-"));
  const flags = [
    { key: "listeners", value: "127.0.0.1:0", flag: "--listen" },
    { key: "log.dirs", value: dataDir, flag: "--data-dir" },
    { key: "group.initial.rebalance.delay.ms", value: "0", flag: "--set" },
  ];
  const broker = await startBroker(loadConfig({ flags }).config, SILENT_LOGGER);
  const kafka = new Kafka({ brokers: [`127.0.0.1:${broker.port}`], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: "bench", numPartitions: 22 }] });
  const times: number[] = [];
  try {
    for (let run = 0; run < 3; run++) times.push(await kafkajsRun(kafka, `kafkajs-${run}`));
  } finally {
    await admin.disconnect();
    await broker.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  return times;
}

async function kafkajsRun(kafka: Kafka, groupId: string): Promise<number> {
  const joinedAt = new Map<Consumer, number>();
  const start = async () => {
    // kafkajs heartbeats between fetches, so an idle consumer learns of a rebalance only when
    // its long poll returns: a short max wait keeps that out of the figure.
    const consumer = kafka.consumer({
      groupId,
      heartbeatInterval: 100,
      sessionTimeout: 10_000,
      maxWaitTimeInMs: 100,
    });
    consumer.on(consumer.events.GROUP_JOIN, () => joinedAt.set(consumer, performance.now()));
    await consumer.connect();
    await consumer.subscribe({ topic: "bench" });
    await consumer.run({ eachMessage: async () => {} });
    return consumer;
  };
  const waitUntil = async (condition: () => boolean) => {
    const deadlineMs = performance.now() + 30_000;
    while (!condition()) {
      if (performance.now() > deadlineMs) throw new Error("kafkajs group did not settle");
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  const members = await Promise.all(Array.from({ length: 10 }, start));
  await waitUntil(() => joinedAt.size === 10);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const startedMs = performance.now();
  members.push(await start());
  await waitUntil(() => members.every((m) => (joinedAt.get(m) ?? 0) > startedMs));
  const elapsed = Math.max(...joinedAt.values()) - startedMs;
  await Promise.all(members.map((m) => m.disconnect()));
  return elapsed;
}

await main();
const kafkajsTimes = await kafkajsRebalanceMs();
console.log(
  `eleven kafkajs consumers (heartbeat, max wait 100 ms): rebalance in ` +
    `${median(kafkajsTimes).toFixed(0)} ms median of ${kafkajsTimes.length} runs ` +
    `(${kafkajsTimes.map((t) => t.toFixed(0)).join(", ")})`,
);
