/**
 * The leader's side of replication inside one ReplicaManager, with real logs: follower fetches
 * (replica id set) move the high watermark, acks=-1 waits for the ISR, min.insync.replicas,
 * ISR shrink and expansion through an AlterIsr that commits like the controller does, roles and
 * leader epochs from becomeLeaderOrFollower. The network path is in replication.test.ts.
 */

import { afterEach, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { topicPartitionKey as tp } from "../../src/common/topic-partition.ts";
import { loadConfig } from "../../src/config/load-config.ts";
import { LocalMetadataStore } from "../../src/metadata/local-metadata-store.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { buildRecordBatch, readBatchHeader } from "../../src/protocol/record-batch.ts";
import type { FileRange } from "../../src/protocol/records.ts";
import { AdminManager } from "../../src/server/admin-manager.ts";
import { MetadataCache } from "../../src/server/metadata-cache.ts";
import type { AlterIsr, PartitionLeadership } from "../../src/server/partition.ts";
import { ReplicaManager } from "../../src/server/replica-manager.ts";
import { LogManager } from "../../src/storage/log-manager.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";
import { readRanges } from "../storage/helpers.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface SetUp {
  readonly rm: ReplicaManager;
  readonly logs: LogManager;
  readonly cache: MetadataCache;
  readonly store: LocalMetadataStore;
  readonly topicId: Uint8Array;
  readonly isrChanges: (readonly number[])[];
}

/**
 * Broker 0 of a three-replica partition t-0. AlterIsr commits every proposal at once with the
 * next partition epoch, as the controller's conditional znode write would.
 */
async function setUp(settings: Record<string, string> = {}): Promise<SetUp> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "quill-rmr-"));
  const flags = [
    { key: "log.dirs", value: dir, flag: "--data-dir" },
    ...Object.entries(settings).map(([key, value]) => ({ key, value, flag: "--set" })),
  ];
  const { config } = loadConfig({ flags });
  const store = LocalMetadataStore.open(dir);
  const self = { nodeId: 0, host: "127.0.0.1", port: 9092, rack: null };
  const cache = new MetadataCache(store, self, config);
  // The followers' brokers are live, as the controller's UpdateMetadata would say.
  cache.setLiveBrokers([1, 2].map((nodeId) => ({ ...self, nodeId, port: 9092 + nodeId })));
  const logs = LogManager.open({ logDirs: [dir], logger: SILENT_LOGGER });
  const admin = new AdminManager(() => [0], store, cache, logs);
  const topic = {
    name: "t",
    numPartitions: 1,
    replicationFactor: -1,
    assignments: [],
    configs: [],
  };
  await admin.createTopic(topic, false);
  const isrChanges: (readonly number[])[] = [];
  let partitionEpoch = 0;
  const alterIsr: AlterIsr = (_t, _p, leaderEpoch, _pe, newIsr) => {
    isrChanges.push(newIsr);
    partitionEpoch++;
    return Promise.resolve({ errorCode: ErrorCode.NONE, leaderEpoch, partitionEpoch, isr: newIsr });
  };
  const rm = new ReplicaManager(logs, cache, { alterIsr, logger: SILENT_LOGGER });
  cleanups.push(async () => {
    await rm.shutdown();
    logs.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { rm, logs, cache, store, topicId: cache.topic("t")!.topicId, isrChanges };
}

const leadership = (
  topicId: Uint8Array,
  over: Partial<PartitionLeadership> = {},
): PartitionLeadership => ({
  topic: "t",
  partition: 0,
  topicId,
  leader: 0,
  leaderEpoch: 1,
  partitionEpoch: 0,
  isr: [0, 1, 2],
  replicas: [0, 1, 2],
  ...over,
});

const batch = (value: string) =>
  buildRecordBatch([{ key: null, value: new TextEncoder().encode(value) }]);
/** One record for t-0, as a produce request's entries. */
const toT0 = (value: string) => [{ topic: "t", partition: 0, records: batch(value) }];
const neverCancel = () => () => {};
const release = (ranges: readonly FileRange[]) => {
  for (const r of ranges) r.release();
};

async function fetchAs(
  rm: ReplicaManager,
  replicaId: number,
  fetchOffset: bigint,
  currentLeaderEpoch = -1,
) {
  const partitionMaxBytes = 1 << 20;
  const [o] = await rm.fetchMessages({
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 1 << 20,
    onCancel: neverCancel,
    replicaId,
    entries: [{ topic: "t", partition: 0, fetchOffset, partitionMaxBytes, currentLeaderEpoch }],
  });
  const bytes = readRanges(o!.records);
  release(o!.records);
  return { ...o!, bytes };
}

test("followers read to the log end, consumers to the HW moved by follower fetches", async () => {
  const { rm, logs, topicId } = await setUp();
  expect(rm.becomeLeaderOrFollower(1, [leadership(topicId)]).get(tp("t", 0))).toBe(ErrorCode.NONE);
  rm.appendRecords(1, [{ topic: "t", partition: 0, records: batch("a") }]);
  rm.appendRecords(1, [{ topic: "t", partition: 0, records: batch("b") }]);
  const log = logs.getLog("t", 0)!;
  expect(log.highWatermark).toBe(0n);
  expect((await fetchAs(rm, -1, 0n)).bytes.length).toBe(0); // Nothing committed yet.
  const follower = await fetchAs(rm, 1, 0n);
  expect(follower.bytes.length).toBe(2 * batch("a").length);
  expect(readBatchHeader(follower.bytes).partitionLeaderEpoch).toBe(1); // Stamped by the leader.
  await fetchAs(rm, 1, 2n);
  expect(log.highWatermark).toBe(0n); // Broker 2 has not fetched: the HW waits for the whole ISR.
  await fetchAs(rm, 2, 1n);
  expect(log.highWatermark).toBe(1n);
  await fetchAs(rm, 2, 2n);
  expect(log.highWatermark).toBe(2n);
  expect((await fetchAs(rm, -1, 0n)).bytes.length).toBe(2 * batch("a").length);
});

test("acks=-1 answers once the ISR fetched past the batch, else REQUEST_TIMED_OUT", async () => {
  const { rm, topicId } = await setUp();
  rm.becomeLeaderOrFollower(1, [leadership(topicId)]);
  const started = performance.now();
  const timedOut = await rm.produceRecords(-1, 100, toT0("a"));
  expect(timedOut[0]!.errorCode).toBe(ErrorCode.REQUEST_TIMED_OUT);
  expect(performance.now() - started).toBeGreaterThanOrEqual(90);
  let answered = false;
  const pending = Promise.resolve(rm.produceRecords(-1, 30_000, toT0("b"))).then((o) => {
    answered = true;
    return o;
  });
  await fetchAs(rm, 1, 2n);
  await Bun.sleep(10);
  expect(answered).toBe(false);
  await fetchAs(rm, 2, 2n);
  const [o] = await pending;
  expect(o!.errorCode).toBe(ErrorCode.NONE);
  expect(o!.baseOffset).toBe(1n);
});

test("min.insync.replicas: refused before appending, or AFTER_APPEND on a shrink", async () => {
  const { rm, logs, topicId } = await setUp({ "min.insync.replicas": "2" });
  rm.becomeLeaderOrFollower(1, [leadership(topicId, { isr: [0] })]);
  const [refused] = await rm.produceRecords(-1, 1_000, toT0("a"));
  expect(refused!.errorCode).toBe(ErrorCode.NOT_ENOUGH_REPLICAS);
  expect(logs.getLog("t", 0)!.logEndOffset).toBe(0n);
  const [acks1] = await rm.produceRecords(1, 1_000, toT0("a"));
  expect(acks1!.errorCode).toBe(ErrorCode.NONE);
  rm.becomeLeaderOrFollower(1, [leadership(topicId, { isr: [0, 1], partitionEpoch: 1 })]);
  const pending = rm.produceRecords(-1, 30_000, toT0("b"));
  // The controller removes broker 1 (say it died) while the produce waits: the HW then passes.
  rm.becomeLeaderOrFollower(1, [leadership(topicId, { isr: [0], partitionEpoch: 2 })]);
  const [o] = await pending;
  expect(o!.errorCode).toBe(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND);
});

test("a follower behind for the lag time leaves the ISR, rejoins once caught up", async () => {
  const { rm, topicId, isrChanges, logs } = await setUp({ "replica.lag.time.max.ms": "300" });
  rm.becomeLeaderOrFollower(1, [leadership(topicId)]);
  rm.appendRecords(1, [{ topic: "t", partition: 0, records: batch("a") }]);
  const deadline = Date.now() + 3_000;
  // Broker 1 keeps fetching to the end; broker 2 never fetches.
  while (Date.now() < deadline && rm.partitionState("t", 0)!.isr.length === 3) {
    await fetchAs(rm, 1, logs.getLog("t", 0)!.logEndOffset);
    await Bun.sleep(50);
  }
  expect(rm.partitionState("t", 0)!.isr).toEqual([0, 1]);
  expect(isrChanges).toEqual([[0, 1]]);
  expect(logs.getLog("t", 0)!.highWatermark).toBe(1n); // The HW no longer waits for broker 2.
  await fetchAs(rm, 2, 0n); // Behind the HW: not eligible yet.
  expect(rm.partitionState("t", 0)!.isr).toEqual([0, 1]);
  await fetchAs(rm, 2, 1n);
  await Bun.sleep(10);
  expect(rm.partitionState("t", 0)!.isr).toEqual([0, 1, 2]);
  expect(rm.partitionState("t", 0)!.partitionEpoch).toBe(2);
});

test("a caught-up follower joins the ISR only while its broker is live", async () => {
  const { rm, topicId, isrChanges, cache } = await setUp();
  rm.becomeLeaderOrFollower(1, [leadership(topicId, { isr: [0, 1], partitionEpoch: 0 })]);
  rm.appendRecords(1, [{ topic: "t", partition: 0, records: batch("a") }]);
  await fetchAs(rm, 1, 1n);
  const one = cache.brokers.find((b) => b.nodeId === 1)!;
  const two = cache.brokers.find((b) => b.nodeId === 2)!;
  // Broker 2 left the live brokers (its session ended): not proposed however far it fetched.
  cache.setLiveBrokers([one]);
  await fetchAs(rm, 2, 1n);
  await Bun.sleep(10);
  expect(isrChanges).toEqual([]);
  expect(rm.partitionState("t", 0)!.isr).toEqual([0, 1]);
  cache.setLiveBrokers([one, two]);
  await fetchAs(rm, 2, 1n);
  await Bun.sleep(10);
  expect(isrChanges).toEqual([[0, 1, 2]]);
});

test("a follower refuses produces and consumer fetches; stale controllers too", async () => {
  const { rm, topicId } = await setUp();
  const states = [leadership(topicId, { leader: 1, leaderEpoch: 3 })];
  expect(rm.becomeLeaderOrFollower(2, states).get(tp("t", 0))).toBe(ErrorCode.NONE);
  const [produced] = rm.appendRecords(1, [{ topic: "t", partition: 0, records: batch("a") }]);
  expect(produced!.errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
  expect((await fetchAs(rm, -1, 0n)).errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
  expect(
    rm.becomeLeaderOrFollower(1, [leadership(topicId, { leaderEpoch: 9 })]).get(tp("t", 0)),
  ).toBe(ErrorCode.STALE_CONTROLLER_EPOCH);
  expect(
    rm.becomeLeaderOrFollower(2, [leadership(topicId, { leaderEpoch: 2 })]).get(tp("t", 0)),
  ).toBe(ErrorCode.FENCED_LEADER_EPOCH);
  expect(
    rm.becomeLeaderOrFollower(2, [leadership(topicId, { replicas: [1, 2] })]).get(tp("t", 0)),
  ).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
  // Leading again in epoch 4: a client still on epoch 3 is fenced, one on epoch 5 is ahead of us.
  rm.becomeLeaderOrFollower(2, [leadership(topicId, { leaderEpoch: 4 })]);
  expect((await fetchAs(rm, -1, 0n, 3)).errorCode).toBe(ErrorCode.FENCED_LEADER_EPOCH);
  expect((await fetchAs(rm, -1, 0n, 5)).errorCode).toBe(ErrorCode.UNKNOWN_LEADER_EPOCH);
  expect((await fetchAs(rm, -1, 0n, 4)).errorCode).toBe(ErrorCode.NONE);
  // Broker 7 is not a replica.
  expect((await fetchAs(rm, 7, 0n)).errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
});

test("a produce waiting for the ISR gets NOT_LEADER_OR_FOLLOWER on a new leader", async () => {
  const { rm, topicId } = await setUp();
  rm.becomeLeaderOrFollower(1, [leadership(topicId)]);
  const pending = rm.produceRecords(-1, 30_000, toT0("a"));
  rm.becomeLeaderOrFollower(1, [leadership(topicId, { leader: 1, leaderEpoch: 2 })]);
  const [o] = await pending;
  expect(o!.errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
});

test("logs a LeaderAndIsr creates take topic configs that arrived while they were made", async () => {
  const { rm, logs, cache, store } = await setUp();
  const topicId = new Uint8Array(16).fill(7);
  // The controller names this broker before its ZooKeeper watch has read the topic.
  expect(cache.topic("late")).toBeUndefined();
  const creating = rm.createNewLogs([
    { ...leadership(topicId), topic: "late", leader: 1, isNew: true },
  ]);
  // The topic and its configs arrive while the log files are being made (the store's change
  // finds no log to update yet).
  await store.createTopic({
    name: "late",
    topicIdHex: Buffer.from(topicId).toString("hex"),
    assignment: [[1, 0, 2]],
    configs: { "segment.bytes": "2048" },
  });
  cache.reload();
  await creating;
  expect(logs.getLog("late", 0)?.config.segmentBytes).toBe(2048);
});
