import { afterEach, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { loadConfig } from "../../src/config/load-config.ts";
import { LocalMetadataStore } from "../../src/metadata/local-metadata-store.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import type { FileRange } from "../../src/protocol/records.ts";
import { AdminManager } from "../../src/server/admin-manager.ts";
import { MetadataCache } from "../../src/server/metadata-cache.ts";
import { ReplicaManager } from "../../src/server/replica-manager.ts";
import { LogManager } from "../../src/storage/log-manager.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

async function setUp(partitions = 2) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "quill-rm-"));
  const { config } = loadConfig({ flags: [{ key: "log.dirs", value: dir, flag: "--data-dir" }] });
  const store = LocalMetadataStore.open(dir);
  const cache = new MetadataCache(
    store,
    { nodeId: 0, host: "127.0.0.1", port: 9092, rack: null },
    config,
  );
  const logs = LogManager.open({ logDirs: [dir], logger: SILENT_LOGGER });
  const admin = new AdminManager(() => [0], store, cache, logs);
  await admin.createTopic(
    { name: "t", numPartitions: partitions, replicationFactor: -1, assignments: [], configs: [] },
    false,
  );
  cleanups.push(() => {
    logs.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { rm: new ReplicaManager(logs, cache), logs, admin };
}

const batch = (value: string) =>
  buildRecordBatch([{ key: null, value: new TextEncoder().encode(value) }]);
const neverCancel = () => () => {};
const bytesOf = (ranges: readonly FileRange[]) => ranges.reduce((n, r) => n + r.sizeBytes, 0);
const release = (ranges: readonly FileRange[]) => {
  for (const r of ranges) r.release();
};

test("appends assign consecutive offsets and move the high watermark to the log end", async () => {
  const { rm, logs } = await setUp();
  const [a] = rm.appendRecords(1, [{ topic: "t", partition: 0, records: batch("a") }]);
  const [b] = rm.appendRecords(-1, [{ topic: "t", partition: 0, records: batch("b") }]);
  expect(a.errorCode).toBe(ErrorCode.NONE);
  expect([a.baseOffset, b.baseOffset]).toEqual([0n, 1n]);
  expect(logs.getLog("t", 0)!.highWatermark).toBe(2n);
});

test("per-partition errors: an unknown partition fails alone", async () => {
  // Invalid records (none, two batches) are refused by the produce handler before they get
  // here: test/api/00-produce.test.ts.
  const { rm } = await setUp();
  const outcomes = rm.appendRecords(1, [
    { topic: "t", partition: 7, records: batch("a") },
    { topic: "t", partition: 1, records: batch("ok") },
  ]);
  expect(outcomes.map((o) => o.errorCode)).toEqual([
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.NONE,
  ]);
});

test("a parked fetch wakes as soon as an append brings min bytes, well before max wait", async () => {
  const { rm } = await setUp();
  const started = performance.now();
  const pending = rm.fetchMessages({
    maxWaitMs: 10_000,
    minBytes: 1,
    maxBytes: 1 << 20,
    onCancel: neverCancel,
    entries: [{ topic: "t", partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20 }],
  });
  await Bun.sleep(20);
  rm.appendRecords(1, [{ topic: "t", partition: 0, records: batch("wake") }]);
  const [outcome] = await pending;
  expect(performance.now() - started).toBeLessThan(5_000);
  expect(outcome.errorCode).toBe(ErrorCode.NONE);
  expect(outcome.highWatermark).toBe(1n);
  expect(bytesOf(outcome.records)).toBe(batch("wake").length);
  release(outcome.records);
});

test("max wait ends an empty long poll; a closed connection ends it at once", async () => {
  const { rm } = await setUp();
  const entries = [{ topic: "t", partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20 }];
  const started = performance.now();
  const [timedOut] = await rm.fetchMessages({
    maxWaitMs: 60,
    minBytes: 1,
    maxBytes: 1 << 20,
    onCancel: neverCancel,
    entries,
  });
  expect(performance.now() - started).toBeGreaterThanOrEqual(50);
  expect(timedOut.records).toHaveLength(0);
  let cancel: () => void = () => {};
  const pending = rm.fetchMessages({
    maxWaitMs: 60_000,
    minBytes: 1,
    maxBytes: 1 << 20,
    entries,
    onCancel: (listener) => {
      cancel = listener;
      return () => {};
    },
  });
  cancel();
  const [cancelled] = await pending;
  expect(cancelled.records).toHaveLength(0);
});

test("the response budget: later partitions get what the first left, but one batch always comes back", async () => {
  const { rm } = await setUp();
  const big = buildRecordBatch([{ value: new Uint8Array(5000) }]);
  rm.appendRecords(1, [{ topic: "t", partition: 0, records: big }]);
  rm.appendRecords(1, [{ topic: "t", partition: 1, records: batch("small") }]);
  const outcomes = await rm.fetchMessages({
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: 100,
    onCancel: neverCancel,
    entries: [
      { topic: "t", partition: 0, fetchOffset: 0n, partitionMaxBytes: 100 },
      { topic: "t", partition: 1, fetchOffset: 0n, partitionMaxBytes: 100 },
    ],
  });
  expect(bytesOf(outcomes[0].records)).toBe(big.length);
  expect(bytesOf(outcomes[1].records)).toBe(0);
  for (const o of outcomes) release(o.records);
});

test("a consumer's fetch fills its partition budget, ending inside a batch; other reads stop at the last whole batch", async () => {
  const { rm, logs } = await setUp();
  const batches = [1000, 1000, 1000].map((n) => buildRecordBatch([{ value: new Uint8Array(n) }]));
  for (const records of batches) rm.appendRecords(1, [{ topic: "t", partition: 0, records }]);
  const budgetBytes = batches[0].length + 500;
  const [o] = await rm.fetchMessages({
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: 1 << 20,
    onCancel: neverCancel,
    entries: [{ topic: "t", partition: 0, fetchOffset: 0n, partitionMaxBytes: budgetBytes }],
  });
  // As Kafka: the consumer gets exactly its budget and drops the trailing partial batch.
  expect(bytesOf(o.records)).toBe(budgetBytes);
  release(o.records);
  // Followers and the broker's own readers (partialLastBatch unset) get whole batches only.
  const log = logs.getLog("t", 0)!;
  const whole = log.read(0n, budgetBytes, { maxOffset: log.logEndOffset, minOneMessage: true });
  expect(whole.sizeBytes).toBe(batches[0].length);
  release(whole.ranges);
});

test("fetching beyond the log end is OFFSET_OUT_OF_RANGE and does not park", async () => {
  const { rm } = await setUp();
  const [o] = await rm.fetchMessages({
    maxWaitMs: 60_000,
    minBytes: 1,
    maxBytes: 1 << 20,
    onCancel: neverCancel,
    entries: [{ topic: "t", partition: 0, fetchOffset: 5n, partitionMaxBytes: 1 << 20 }],
  });
  expect(o.errorCode).toBe(ErrorCode.OFFSET_OUT_OF_RANGE);
});

test("ListOffsets: earliest, latest and by timestamp", async () => {
  const { rm } = await setUp();
  const at = (ms: number) => buildRecordBatch([{ value: new Uint8Array(1) }], { timestampMs: ms });
  for (const ms of [1000, 2000, 3000])
    rm.appendRecords(1, [{ topic: "t", partition: 0, records: at(ms) }]);
  expect(rm.listOffset("t", 0, -2n).offset).toBe(0n);
  expect(rm.listOffset("t", 0, -1n).offset).toBe(3n);
  expect(rm.listOffset("t", 0, 1500n)).toEqual({
    errorCode: ErrorCode.NONE,
    timestamp: 2000n,
    offset: 1n,
    leaderEpoch: 0,
  });
  expect(rm.listOffset("t", 0, -1n).leaderEpoch).toBe(0); // The lone broker leads epoch 0.
  expect(rm.listOffset("t", 0, 9999n).offset).toBe(-1n);
  expect(rm.listOffset("nope", 0, -1n).errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
});

test("a deleted topic's partitions are no longer served", async () => {
  const { rm, admin } = await setUp();
  await admin.deleteTopic("t");
  const [o] = rm.appendRecords(1, [{ topic: "t", partition: 0, records: batch("a") }]);
  expect(o.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
});

test("a fetch parked on a topic that gets deleted is answered at once, not at max wait", async () => {
  const { rm, admin } = await setUp();
  const started = performance.now();
  const pending = rm.fetchMessages({
    maxWaitMs: 10_000,
    minBytes: 1,
    maxBytes: 1 << 20,
    onCancel: neverCancel,
    entries: [{ topic: "t", partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20 }],
  });
  await Bun.sleep(20);
  await admin.deleteTopic("t");
  const [o] = await pending;
  expect(o.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
  expect(performance.now() - started).toBeLessThan(5_000);
});
