import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { threadId } from "node:worker_threads";
import { CompressionType } from "../../src/protocol/compression.ts";
import { buildEndTxnMarkerBatch } from "../../src/protocol/control-record.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { DELETE_HORIZON_BIT } from "../../src/storage/cleaner-batch-filter.ts";
import { CleanerThread } from "../../src/storage/cleaner-thread.ts";
import type { MapSegmentReply } from "../../src/storage/cleaner-worker-messages.ts";
import type { LogCleanerConfig } from "../../src/storage/log-cleaner.ts";
import type { LogConfig } from "../../src/storage/log-config.ts";
import { DEFAULT_LOG_CONFIG } from "../../src/storage/log-config.ts";
import { LogManager } from "../../src/storage/log-manager.ts";
import { CLEANER_OFFSET_CHECKPOINT_FILE } from "../../src/storage/offset-checkpoint-file.ts";
import type { UnifiedLog } from "../../src/storage/unified-log.ts";
import { LineLogger } from "../support/line-logger.ts";
import { waitUntil } from "../support/wait-until.ts";
import type { KeyedRecord, StoredBatch } from "./cleaner-support.ts";
import { keyedBatch, latestByKey, readAllBatches, readAllRecords } from "./cleaner-support.ts";
import { removeDir, tempDir } from "./helpers.ts";

let dir: string;
let manager: LogManager;
let lines: string[];

const COMPACT: Partial<LogConfig> = { cleanupPolicy: "compact", segmentBytes: 2000 };

function open(config: Partial<LogConfig> = {}, cleaner: Partial<LogCleanerConfig> = {}) {
  lines = [];
  manager = LogManager.open({
    logDirs: [dir],
    defaultConfig: { ...DEFAULT_LOG_CONFIG, ...COMPACT, ...config },
    logger: new LineLogger(lines),
    cleaner: { dedupeBufferBytes: 1 << 20, ...cleaner },
  });
  return manager;
}

function append(log: UnifiedLog, records: readonly KeyedRecord[], opts = {}): void {
  log.appendAsLeader(keyedBatch(records, opts), -1);
  log.highWatermark = log.logEndOffset;
}

/** `rounds` batches, each setting every key k0..k(keys-1) to a value naming the round. */
function writeRounds(log: UnifiedLog, rounds: number, keys: number, opts = {}): void {
  for (let r = 0; r < rounds; r++) {
    const records = Array.from({ length: keys }, (_, k) => ({ key: `k${k}`, value: `v${r}-${k}` }));
    append(log, records, opts);
  }
}

beforeEach(() => (dir = tempDir("quill-cleaner-")));
afterEach(() => {
  manager?.close();
  removeDir(dir);
});

describe("LogCleaner: keys", () => {
  test("keeps the latest record of every key, with its offset, and never the active segment", async () => {
    const log = open().getOrCreateLog("t", 0);
    writeRounds(log, 30, 10);
    log.roll();
    append(log, [{ key: "k0", value: "active" }]);
    const before = readAllRecords(log);
    const activeBase = log.activeSegmentBaseOffset;
    const result = await manager.cleaner.cleanOnce();
    expect(result).not.toBeNull();
    const after = readAllRecords(log);
    expect(latestByKey(after)).toEqual(latestByKey(before));
    // Every surviving record is the one with that offset before, and offsets still increase.
    const byOffset = new Map(before.map((r) => [r.offset, r]));
    for (const r of after) expect(byOffset.get(r.offset)).toEqual(r);
    for (let i = 1; i < after.length; i++)
      expect(after[i].offset).toBeGreaterThan(after[i - 1].offset);
    // Sealed part: exactly one record per key; the active segment's record is still there.
    const sealed = after.filter((r) => r.offset < activeBase);
    expect(sealed.length).toBe(10);
    expect(after.at(-1)).toEqual(before.at(-1)!);
    expect(log.cleanerOffset).toBe(activeBase);
    expect(log.logEndOffset).toBe(301n);
  });

  test("writes cleaner-offset-checkpoint in Kafka's format and reads it after a restart", async () => {
    const log = open().getOrCreateLog("t", 0);
    writeRounds(log, 20, 5);
    log.roll();
    await manager.cleaner.cleanOnce();
    const text = fs.readFileSync(path.join(dir, CLEANER_OFFSET_CHECKPOINT_FILE), "utf8");
    expect(text).toBe(`0\n1\nt 0 ${log.activeSegmentBaseOffset}\n`);
    const cleanedTo = log.cleanerOffset;
    manager.close();
    const reopened = open().getLog("t", 0)!;
    expect(reopened.cleanerOffset).toBe(cleanedTo);
    // Nothing dirty: no cleaning is chosen.
    expect(manager.cleaner.grabFilthiestLog(Date.now())).toBeNull();
  });

  test("a log with cleanup.policy=delete is never cleaned", async () => {
    const log = open({ cleanupPolicy: "delete" }).getOrCreateLog("t", 0);
    writeRounds(log, 20, 5);
    log.roll();
    expect(await manager.cleaner.cleanOnce()).toBeNull();
    expect(readAllRecords(log).length).toBe(100);
  });

  test("cleans again only once the dirty ratio passes min.cleanable.dirty.ratio", async () => {
    const log = open({ minCleanableDirtyRatio: 0.9 }).getOrCreateLog("t", 0);
    writeRounds(log, 40, 5);
    log.roll();
    expect(await manager.cleaner.cleanOnce()).not.toBeNull();
    writeRounds(log, 1, 5);
    log.roll();
    // One small dirty segment beside the clean one: ratio below 0.9.
    expect(manager.cleaner.grabFilthiestLog(Date.now())).toBeNull();
  });
});

describe("LogCleaner: cleanup.policy=compact,delete", () => {
  test("retention.ms deletes old segments and the cleaner compacts the rest", async () => {
    const log = open({ cleanupPolicy: "compact,delete", retentionMs: 3_600_000 }).getOrCreateLog(
      "t",
      0,
    );
    writeRounds(log, 10, 3, { timestampMs: Date.now() - 7_200_000 });
    log.roll();
    const youngBase = log.activeSegmentBaseOffset;
    writeRounds(log, 10, 3);
    log.roll();
    expect(log.deleteOldSegments(Date.now())).toBeGreaterThan(0);
    expect(log.logStartOffset).toBe(youngBase);
    expect(await manager.cleaner.cleanOnce()).not.toBeNull();
    const after = readAllRecords(log);
    expect(after.map((r) => [r.key, r.value])).toEqual([
      ["k0", "v9-0"],
      ["k1", "v9-1"],
      ["k2", "v9-2"],
    ]);
  });
});

describe("LogCleaner: tombstones", () => {
  test("kept with a delete horizon, then removed once delete.retention.ms has passed", async () => {
    const log = open({ deleteRetentionMs: 60_000 }).getOrCreateLog("t", 0);
    writeRounds(log, 5, 4);
    append(log, [
      { key: "k1", value: null },
      { key: "k2", value: null },
    ]);
    log.roll();
    const now = Date.now();
    await manager.cleaner.cleanOnce(now);
    const kept = readAllBatches(log);
    const tombstones = kept.flatMap((b) => b.records).filter((r) => r.value === null);
    expect(tombstones.map((r) => r.key).sort()).toEqual(["k1", "k2"]);
    const horizonBatch = kept.find((b) => b.records.some((r) => r.value === null))!;
    expect(horizonBatch.attributes & DELETE_HORIZON_BIT).toBe(DELETE_HORIZON_BIT);
    // Record timestamps survive the new base timestamp.
    for (const r of horizonBatch.records)
      expect(Math.abs(Number(r.timestamp) - now)).toBeLessThan(60_000);
    expect(log.latestDeleteHorizonMs).toBe(now + 60_000);
    // Before the horizon nothing is due; after it the log is cleaned without new writes.
    expect(manager.cleaner.grabFilthiestLog(now + 59_000)).toBeNull();
    expect(await manager.cleaner.cleanOnce(now + 60_001)).not.toBeNull();
    const after = readAllRecords(log);
    expect(after.filter((r) => r.value === null)).toEqual([]);
    expect([...latestByKey(after).keys()].sort()).toEqual(["k0", "k3"]);
    expect(log.latestDeleteHorizonMs).toBe(-1);
  });
});

describe("LogCleaner: lag settings", () => {
  test("min.compaction.lag.ms keeps young segments dirty", async () => {
    const log = open({ minCompactionLagMs: 3_600_000 }).getOrCreateLog("t", 0);
    writeRounds(log, 10, 3, { timestampMs: Date.now() - 7_200_000 });
    log.roll();
    const youngBase = log.activeSegmentBaseOffset;
    writeRounds(log, 10, 3);
    log.roll();
    await manager.cleaner.cleanOnce();
    const after = readAllRecords(log);
    // The old segment is compacted; the young one (newer than the lag) is untouched.
    expect(after.filter((r) => r.offset < youngBase).length).toBe(3);
    expect(after.filter((r) => r.offset >= youngBase).length).toBe(30);
    expect(log.cleanerOffset).toBe(youngBase);
  });

  test("max.compaction.lag.ms makes a barely dirty log eligible", async () => {
    const log = open({ minCleanableDirtyRatio: 0.99, maxCompactionLagMs: 60_000 }).getOrCreateLog(
      "t",
      0,
    );
    writeRounds(log, 10, 3, { timestampMs: Date.now() - 120_000 });
    log.roll();
    await manager.cleaner.cleanOnce();
    writeRounds(log, 1, 3, { timestampMs: Date.now() - 120_000 });
    log.roll();
    expect(manager.cleaner.grabFilthiestLog(Date.now())?.needCompactionNow).toBe(true);
    expect(await manager.cleaner.cleanOnce()).not.toBeNull();
    expect(readAllRecords(log).length).toBe(3);
  });

  test("max.compaction.lag.ms rolls the active segment of a compacted log", () => {
    const log = open({ maxCompactionLagMs: 1000 }).getOrCreateLog("t", 0);
    append(log, [{ key: "a", value: "1" }], { timestampMs: Date.now() - 5000 });
    append(log, [{ key: "a", value: "2" }]);
    expect(log.segmentCount).toBe(2);
  });
});

describe("LogCleaner: grouping", () => {
  test("small cleaned segments are merged into one, within segment.bytes", async () => {
    const log = open({ segmentBytes: 600 }).getOrCreateLog("t", 0);
    const fill = (): void => {
      for (let i = 0; i < 40; i++)
        append(log, [{ key: `k${i % 4}`, value: `v${i}`.padEnd(60, ".") }]);
      log.roll();
    };
    fill();
    // Groups are formed from the segments' sizes before cleaning (as Kafka does): the first
    // cleaning leaves many small segments, the next one merges them.
    await manager.cleaner.cleanOnce();
    fill();
    const segmentsBefore = log.segmentCount;
    expect(segmentsBefore).toBeGreaterThan(5);
    const result = (await manager.cleaner.cleanOnce())!;
    expect(result.stats.groups).toBeLessThan(result.stats.segmentsCleaned);
    expect(log.segmentCount).toBeLessThan(segmentsBefore);
    for (const name of fs.readdirSync(log.dir).filter((n) => n.endsWith(".log"))) {
      expect(fs.statSync(path.join(log.dir, name)).size).toBeLessThanOrEqual(600);
    }
    expect(readAllRecords(log).map((r) => r.key)).toEqual(["k0", "k1", "k2", "k3"]);
  });
});

describe("LogCleaner: grouping by index size", () => {
  test("a group's offset and time indexes stay within segment.index.bytes", async () => {
    // An index entry per batch with a new timestamp; two segments' time indexes (12 bytes an
    // entry) exceed 48 bytes, so no two fit one group, though their logs fit segment.bytes.
    const config = { segmentBytes: 4000, segmentIndexBytes: 48, indexIntervalBytes: 1 };
    const log = open(config).getOrCreateLog("t", 0);
    for (let i = 0; i < 40; i++) {
      append(log, [{ key: `k${i % 4}`, value: `v${i}` }], { timestampMs: 1_000_000 + i });
      if (i % 4 === 3) log.roll();
    }
    const sealed = log.sealedSegments();
    // Three entries in each index (none for the batch at position 0): a 36-byte time index.
    for (const s of sealed) expect(s.timeIndex().entries).toBe(3);
    expect(sealed.length).toBe(10);
    expect(sealed.reduce((sum, s) => sum + s.sizeBytes, 0)).toBeLessThan(4000);
    const result = (await manager.cleaner.cleanOnce())!;
    expect(result.stats.segmentsCleaned).toBe(10);
    expect(result.stats.groups).toBe(10);
    expect(latestByKey(readAllRecords(log)).size).toBe(4);
  });
});

describe("LogCleaner: batches", () => {
  test("compressed batches are filtered and written back with their codec", async () => {
    const log = open().getOrCreateLog("t", 0);
    for (const codec of [
      CompressionType.Gzip,
      CompressionType.Zstd,
      CompressionType.Lz4,
      CompressionType.Snappy,
    ]) {
      writeRounds(log, 3, 4, { compression: codec });
    }
    append(log, [{ key: "k0", value: "last" }], { compression: CompressionType.Gzip });
    log.roll();
    const before = readAllRecords(log);
    await manager.cleaner.cleanOnce();
    const batches = readAllBatches(log);
    expect(latestByKey(batches.flatMap((b) => b.records))).toEqual(latestByKey(before));
    expect(batches.flatMap((b) => b.records).length).toBe(4);
    for (const b of batches) expect(b.attributes & 0x07).not.toBe(CompressionType.None);
  });

  test("an idempotent producer's last batch stays (empty) and its sequence goes on", async () => {
    const log = open().getOrCreateLog("t", 0);
    const pid = { producerId: 7n, producerEpoch: 0 };
    append(log, [{ key: "a", value: "1" }], { ...pid, baseSequence: 0 });
    append(log, [{ key: "a", value: "2" }], { ...pid, baseSequence: 1 });
    append(log, [{ key: "a", value: "3" }]);
    log.roll();
    await manager.cleaner.cleanOnce();
    const batches = readAllBatches(log);
    // The producer's first batch is gone, its last one stays with no records.
    expect(batches.map((b) => [b.baseOffset, b.producerId, b.records.length])).toEqual([
      [1n, 7n, 0],
      [2n, -1n, 1],
    ]);
    expect(batches[0].baseSequence).toBe(1);
    manager.close();
    const reopened = open().getLog("t", 0)!;
    // After a restart the producer state is rebuilt from the log: sequence 2 is next.
    reopened.appendAsLeader(
      keyedBatch([{ key: "a", value: "4" }], { ...pid, baseSequence: 2 }),
      -1,
    );
    expect(() =>
      reopened.appendAsLeader(
        keyedBatch([{ key: "a", value: "5" }], { ...pid, baseSequence: 5 }),
        -1,
      ),
    ).toThrow();
  });

  test("a record without a key is refused with Kafka's INVALID_RECORD, nothing written", () => {
    const log = open().getOrCreateLog("t", 0);
    let error: unknown = null;
    try {
      log.appendAsLeader(
        keyedBatch([
          { key: "a", value: "1" },
          { key: null, value: "2" },
        ]),
        -1,
      );
    } catch (e) {
      error = e;
    }
    expect((error as { code: number }).code).toBe(ErrorCode.INVALID_RECORD);
    expect((error as Error).message).toBe(
      "One or more records have been rejected due to 1 " +
        "record errors in total, and only showing the first three errors at most: " +
        "[RecordError(batchIndex=1, message='Compacted topic cannot accept message without key " +
        "in topic partition t-0')]",
    );
    expect(log.logEndOffset).toBe(0n);
  });
});

describe("LogCleaner: keyless records in compressed batches", () => {
  test("found inside a compressed batch too: refused, nothing of the append written", () => {
    const log = open().getOrCreateLog("t", 0);
    for (const compression of [CompressionType.Gzip, CompressionType.Zstd, CompressionType.Lz4]) {
      const batch = keyedBatch(
        [
          { key: null, value: "1" },
          { key: "a", value: "2" },
          { key: null, value: "3" },
        ],
        { compression },
      );
      expect(() => log.appendAsLeader(batch, -1)).toThrow(
        "due to 2 record errors in total, and only showing the first three errors at most: " +
          "[RecordError(batchIndex=0, message='Compacted topic cannot accept message without " +
          "key in topic partition t-0'), RecordError(batchIndex=2,",
      );
    }
    expect(log.logEndOffset).toBe(0n);
  });
});

describe("LogCleaner: offset map", () => {
  /**
   * Three rounds over 300 keys in batches of ten, cleaned until nothing is left to clean: with a
   * map of 2000 bytes (83 slots, 74 keys a pass) that takes several passes, each of which must
   * keep the latest record of every key.
   */
  async function cleanInPasses(log: UnifiedLog): Promise<void> {
    for (let round = 0; round < 3; round++) {
      for (let k = 0; k < 300; k += 10) {
        append(
          log,
          Array.from({ length: 10 }, (_, i) => ({ key: `k${k + i}`, value: `v${round}` })),
        );
      }
    }
    log.roll();
    const before = readAllRecords(log);
    let passes = 0;
    while ((await manager.cleaner.cleanOnce()) !== null) passes++;
    expect(passes).toBeGreaterThan(1);
    const after = readAllRecords(log);
    expect(latestByKey(after)).toEqual(latestByKey(before));
    expect(after.length).toBe(300);
    expect(log.cleanerOffset).toBe(log.activeSegmentBaseOffset);
  }

  test("a dirty section larger than the map is cleaned in several passes", async () => {
    const log = open({ segmentBytes: 8000 }, { dedupeBufferBytes: 2000 }).getOrCreateLog("t", 0);
    await cleanInPasses(log);
  });

  test("the map fills in the middle of a segment's chunks: every latest record stays", async () => {
    // Chunks of about four batches in one 1 MiB segment: the map fills in one chunk with more
    // of the segment still to read; each pass must end where the map filled.
    const small = { dedupeBufferBytes: 2000, ioBufferBytes: 1024 };
    await cleanInPasses(open({ segmentBytes: 1 << 20 }, small).getOrCreateLog("t", 0));
  });
});

describe("LogCleaner: one cleaning at a time", () => {
  test("two cleanOnce calls at once clean one log after the other, both whole", async () => {
    // The Worker holds one cleaning's offset map: a second cleaning started beside the first
    // would begin a new map between the first one's segments.
    const small = { dedupeBufferBytes: 4000, ioBufferBytes: 1024 };
    const manager = open({ segmentBytes: 1 << 20 }, small);
    const logs = [manager.getOrCreateLog("a", 0), manager.getOrCreateLog("b", 0)];
    for (const log of logs) {
      writeRounds(log, 4, 100);
      log.roll();
    }
    const before = logs.map(readAllRecords);
    const results = await Promise.all([manager.cleaner.cleanOnce(), manager.cleaner.cleanOnce()]);
    expect(results.every((r) => r !== null)).toBe(true);
    logs.forEach((log, i) => {
      expect(latestByKey(readAllRecords(log))).toEqual(latestByKey(before[i]!));
      expect(readAllRecords(log).length).toBe(100);
    });
  });
});

describe("LogCleaner: log.cleaner.io.max.bytes.per.second", () => {
  /**
   * Cleans a two-segment log with the event loop held for 350 ms right after the cleaning
   * started (as a slow disk would hold it): the throttle's first check, after its 300 ms
   * interval, sees one chunk read in 350 ms. Without this a cleaning this small ends before any
   * check and is never throttled, as in Kafka.
   */
  async function cleanWithStalledStart(): Promise<{ throttledMs: number; elapsedMs: number }> {
    const started = performance.now();
    const cleaning = manager.cleaner.cleanOnce();
    Bun.sleepSync(350);
    const result = await cleaning;
    expect(result).not.toBeNull();
    return { throttledMs: result!.stats.throttledMs, elapsedMs: performance.now() - started };
  }

  function twoSegments(config: Partial<LogCleanerConfig>): UnifiedLog {
    const log = open({}, { ioBufferBytes: 4096, ...config }).getOrCreateLog("t", 0);
    // Two rounds of ten keys: ~380 bytes a segment.
    writeRounds(log, 2, 10);
    log.roll();
    writeRounds(log, 2, 10);
    log.roll();
    expect(log.sealedSegments().length).toBe(2);
    return log;
  }

  test("a cleaning sleeps to bring its I/O down to the rate, and logs it", async () => {
    // Segments of ~380 bytes at 500 bytes/s: the first check sleeps until ~760 ms have passed.
    const bytesPerSecond = 500;
    const log = twoSegments({ ioMaxBytesPerSecond: bytesPerSecond });
    const firstChunkBytes = log.sealedSegments()[0].sizeBytes;
    const { throttledMs, elapsedMs } = await cleanWithStalledStart();
    expect(throttledMs).toBeGreaterThan(0);
    // Up to the first check the cleaning ran at no more than the rate (a timer may fire 1 ms
    // early).
    expect(elapsedMs).toBeGreaterThanOrEqual((firstChunkBytes * 1000) / bytesPerSecond - 5);
    expect(lines.join("\n")).toMatch(/cleaned t-0 .*; throttled \d+\.\d s/);
    expect(readAllRecords(log).length).toBe(10);
  });

  test("unthrottled by default; a dynamic change throttles the next cleaning", async () => {
    const log = twoSegments({});
    expect(manager.cleaner.config.ioMaxBytesPerSecond).toBe(Number.POSITIVE_INFINITY);
    expect((await cleanWithStalledStart()).throttledMs).toBe(0);
    expect(lines.join("\n")).not.toContain("throttled");
    writeRounds(log, 2, 10);
    log.roll();
    writeRounds(log, 2, 10);
    log.roll();
    manager.cleaner.reconfigure({ ...manager.cleaner.config, ioMaxBytesPerSecond: 500 });
    expect((await cleanWithStalledStart()).throttledMs).toBeGreaterThan(0);
  });

  test("the Worker reads the shared rate at each check: a change reaches a cleaning in progress", async () => {
    const log = twoSegments({});
    // What LogCleaner.reconfigure writes; the cleaning's throttle is made at map-begin, while
    // the rate is still unlimited, and must slow the next request with the rate set after it.
    const rate = new Float64Array(new SharedArrayBuffer(8));
    rate[0] = Number.POSITIVE_INFINITY;
    const thread = new CleanerThread();
    const segment = log.sealedSegments()[0];
    const fd = segment.file.acquire();
    try {
      await thread.request({
        type: "map-begin",
        bufferBytes: 1 << 20,
        loadFactor: 0.9,
        keysMax: 100,
        start: 0,
        end: log.activeSegmentBaseOffset,
        abortedTxns: [],
        chunkBytes: 4096,
        ioMaxBytesPerSecond: rate,
      });
      rate[0] = 500;
      // Past the throttle's 300 ms check interval, so the segment's one chunk is checked.
      Bun.sleepSync(350);
      const source = { fd, sizeBytes: segment.sizeBytes, filePath: segment.file.filePath };
      const reply = await thread.request<MapSegmentReply>({ type: "map-segment", source });
      expect(reply.throttledMs).toBeGreaterThan(0);
    } finally {
      segment.file.release();
      thread.terminate();
    }
  });
});

describe("LogCleaner: transactions", () => {
  const coordinator = { origin: "coordinator" } as const;

  function txnAppend(log: UnifiedLog, pid: bigint, seq: number, records: KeyedRecord[]): void {
    append(log, records, {
      producerId: pid,
      producerEpoch: 0,
      baseSequence: seq,
      isTransactional: true,
    });
  }

  function endTxn(log: UnifiedLog, pid: bigint, commit: boolean): void {
    const marker = { producerId: pid, producerEpoch: 0, coordinatorEpoch: 0, commit };
    log.appendAsLeader(buildEndTxnMarkerBatch(marker, Date.now()), -1, coordinator);
    log.highWatermark = log.logEndOffset;
  }

  /** What a consumer reads: data records, minus aborted ones under read_committed. */
  function consume(log: UnifiedLog, isolation: "read_committed" | "read_uncommitted") {
    const aborted = log.collectAbortedTransactions(0n, log.logEndOffset, 1000);
    const isAborted = (b: StoredBatch) =>
      aborted.some(
        (t) =>
          t.producerId === b.producerId &&
          t.firstOffset <= b.baseOffset &&
          b.baseOffset <= t.lastOffset,
      );
    return readAllBatches(log)
      .filter((b) => (b.attributes & 0x20) === 0)
      .filter(
        (b) => isolation === "read_uncommitted" || (b.attributes & 0x10) === 0 || !isAborted(b),
      )
      .flatMap((b) => b.records);
  }

  const markers = (log: UnifiedLog) =>
    readAllBatches(log).filter((b) => (b.attributes & 0x20) !== 0);
  const txnIndexOf = (log: UnifiedLog) => log.sealedSegments().flatMap((s) => s.txnIndex.all());

  /** Plain, committed and aborted writes; then each isolation level's latest value per key. */
  function writeTransactions(log: UnifiedLog): void {
    append(
      log,
      ["k0", "k1", "k2", "k3"].map((key) => ({ key, value: "v0" })),
    ); // 0-3
    txnAppend(log, 7n, 0, [
      { key: "k0", value: "c7" },
      { key: "k1", value: "c7" },
    ]); // 4-5
    txnAppend(log, 8n, 0, [
      { key: "k0", value: "a8" },
      { key: "k2", value: "a8" },
    ]); // 6-7
    endTxn(log, 8n, false); // 8
    endTxn(log, 7n, true); // 9
    txnAppend(log, 8n, 2, [{ key: "k3", value: "c8" }]); // 10
    endTxn(log, 8n, true); // 11
    log.roll();
  }

  test("aborted records go; markers stay while their transaction has batches, then past the horizon", async () => {
    const log = open({
      deleteRetentionMs: 60_000,
      segmentBytes: 1 << 20,
      minCleanableDirtyRatio: 0.01,
    }).getOrCreateLog("t", 0);
    writeTransactions(log);
    const committed = { k0: "c7", k1: "c7", k2: "v0", k3: "c8" };
    expect(Object.fromEntries(latestByKey(consume(log, "read_committed")))).toEqual(committed);
    expect(latestByKey(consume(log, "read_uncommitted")).get("k0")).toBe("a8");
    const now = Date.now();
    await manager.cleaner.cleanOnce(now);
    // Kafka's cleaner: aborted data removed, so both isolation levels read the committed values.
    for (const isolation of ["read_committed", "read_uncommitted"] as const) {
      const records = consume(log, isolation);
      expect(Object.fromEntries(latestByKey(records))).toEqual(committed);
      expect(records.map((r) => r.offset)).toEqual([2n, 4n, 5n, 10n]);
    }
    // Every marker stays (the aborted one's batch was met in this cleaning), with its index entry.
    expect(markers(log).map((b) => b.baseOffset)).toEqual([8n, 9n, 11n]);
    expect(txnIndexOf(log)).toEqual([
      { producerId: 8n, firstOffset: 6n, lastOffset: 8n, lastStableOffset: 4n },
    ]);

    // The next cleaning meets no batch of the aborted transaction: its marker gets a horizon and
    // its index entry goes; the committed transactions' batches remain, so their markers stay.
    append(log, [{ key: "k2", value: "v1" }]);
    log.roll();
    expect(await manager.cleaner.cleanOnce(now)).not.toBeNull();
    const withHorizon = markers(log).filter((b) => (b.attributes & DELETE_HORIZON_BIT) !== 0);
    expect(withHorizon.map((b) => b.baseOffset)).toEqual([8n]);
    expect(markers(log).map((b) => b.baseOffset)).toEqual([8n, 9n, 11n]);
    expect(txnIndexOf(log)).toEqual([]);
    expect(log.latestDeleteHorizonMs).toBe(now + 60_000);
    expect(manager.cleaner.grabFilthiestLog(now + 59_000)).toBeNull();
    expect(await manager.cleaner.cleanOnce(now + 60_001)).not.toBeNull();
    expect(markers(log).map((b) => b.baseOffset)).toEqual([9n, 11n]);
    expect(Object.fromEntries(latestByKey(consume(log, "read_committed")))).toEqual({
      ...committed,
      k2: "v1",
    });
    // The cleaned files read back the same after a restart.
    manager.close();
    const reopened = open({ segmentBytes: 1 << 20 }).getLog("t", 0)!;
    expect(markers(reopened).map((b) => b.baseOffset)).toEqual([9n, 11n]);
    expect(txnIndexOf(reopened)).toEqual([]);
  });

  test("a commit marker goes once its transaction's records are compacted away", async () => {
    const log = open({
      deleteRetentionMs: 0,
      segmentBytes: 1 << 20,
      minCleanableDirtyRatio: 0.01,
    }).getOrCreateLog("t", 0);
    txnAppend(log, 7n, 0, [{ key: "k0", value: "c7" }]); // 0
    endTxn(log, 7n, true); // 1
    txnAppend(log, 7n, 1, [{ key: "k1", value: "c7" }]); // 2: the producer's last batch
    endTxn(log, 7n, true); // 3
    append(log, [{ key: "k0", value: "v1" }]); // 4 supersedes offset 0
    log.roll();
    const now = Date.now();
    // The first cleaning removes batch 0 but met it, so marker 1 stays as it is.
    expect(await manager.cleaner.cleanOnce(now)).not.toBeNull();
    expect(markers(log).map((b) => [b.baseOffset, b.attributes & DELETE_HORIZON_BIT])).toEqual([
      [1n, 0],
      [3n, 0],
    ]);
    append(log, [{ key: "k2", value: "v1" }]); // 5
    log.roll();
    expect(await manager.cleaner.cleanOnce(now)).not.toBeNull(); // marker 1 gets its horizon
    expect(markers(log).map((b) => [b.baseOffset, b.attributes & DELETE_HORIZON_BIT])).toEqual([
      [1n, DELETE_HORIZON_BIT],
      [3n, 0],
    ]);
    expect(await manager.cleaner.cleanOnce(now + 1)).not.toBeNull(); // horizon passed
    expect(markers(log).map((b) => b.baseOffset)).toEqual([3n]);
    expect(readAllRecords(log).map((r) => r.offset)).toEqual([2n, 3n, 4n, 5n]);
  });

  test("an aborted value never shadows the committed one in the offset map", async () => {
    const log = open({ segmentBytes: 1 << 20 }).getOrCreateLog("t", 0);
    append(log, [{ key: "k", value: "committed" }]); // 0
    txnAppend(log, 8n, 0, [{ key: "k", value: "aborted" }]); // 1
    endTxn(log, 8n, false); // 2
    append(log, [{ key: "other", value: "x" }]); // 3: producer 8's batch is not its last
    txnAppend(log, 8n, 1, [{ key: "other", value: "y" }]); // 4
    endTxn(log, 8n, true); // 5
    log.roll();
    await manager.cleaner.cleanOnce();
    const records = consume(log, "read_uncommitted");
    expect(records.map((r) => [r.offset, r.key, r.value])).toEqual([
      [0n, "k", "committed"],
      [4n, "other", "y"],
    ]);
  });
});

describe("LogCleaner: the Worker", () => {
  test("reading, the offset map and the filtering run in the cleaner's Worker, chunk by chunk", async () => {
    // 4 KiB chunks: each sealed segment (2000 bytes) is one chunk to map and one to filter.
    const log = open({}, { ioBufferBytes: 4096 }).getOrCreateLog("t", 0);
    writeRounds(log, 30, 10);
    log.roll();
    const before = readAllRecords(log);
    const sealedSegments = log.sealedSegments().length;
    expect(manager.cleaner.workerActivity.chunks).toBe(0);
    const result = await manager.cleaner.cleanOnce();
    expect(result?.stats.segmentsCleaned).toBe(sealedSegments);
    const activity = manager.cleaner.workerActivity;
    expect(activity.threadId).not.toBe(threadId);
    expect(activity.threadId).toBeGreaterThan(0);
    expect(activity.chunks).toBe(2 * sealedSegments);
    // The Worker runs at nice 10 (field 19 of /proc/<pid>/task/<tid>/stat), the event loop at 0.
    const niceOf = (tid: string): number =>
      Number(fs.readFileSync(`/proc/self/task/${tid}/stat`, "utf8").split(") ")[1].split(" ")[16]);
    const nices = fs.readdirSync("/proc/self/task").map(niceOf);
    expect(niceOf(String(process.pid))).toBe(0);
    expect(nices).toContain(10);
    expect(latestByKey(readAllRecords(log))).toEqual(latestByKey(before));
    expect(readAllRecords(log).length).toBe(10);
  });

  test("the event loop serves another log while the Worker works on a segment", async () => {
    const log = open({ segmentBytes: 64 * 1024 }, { ioBufferBytes: 4096 }).getOrCreateLog("t", 0);
    const other = manager.getOrCreateLog("other", 0);
    writeRounds(log, 100, 50);
    log.roll();
    let appendedWhileBusy = 0;
    let done = false;
    const cleaning = manager.cleaner.cleanOnce().finally(() => (done = true));
    let lastChunk = -1;
    while (!done) {
      // A turn of the event loop: with the Worker busy, an append here runs beside its work
      // (one each time the Worker answers a segment).
      await new Promise<void>((resolve) => setImmediate(resolve));
      const { busy, chunks } = manager.cleaner.workerActivity;
      if (!busy || chunks === lastChunk) continue;
      lastChunk = chunks;
      append(other, [{ key: "k", value: `while busy ${appendedWhileBusy}` }]);
      appendedWhileBusy++;
    }
    const result = await cleaning;
    expect(lines).toEqual([expect.stringContaining("cleaned t-0")]);
    expect(result).not.toBeNull();
    expect(appendedWhileBusy).toBeGreaterThan(0);
    const values = readAllRecords(other).map((r) => r.value);
    expect(values).toEqual(Array.from({ length: appendedWhileBusy }, (_, i) => `while busy ${i}`));
    expect(readAllRecords(log).length).toBe(50);
  });

  test("a chunk whose cleaned batches outgrow the output buffer: the Worker grows it", async () => {
    // One 4000-byte batch of 100 tombstones fills a 4 KiB chunk; giving them a delete horizon
    // widens every record's timestamp delta, so the cleaned batch is larger than the buffer.
    const log = open({ segmentBytes: 5000 }, { ioBufferBytes: 4096 }).getOrCreateLog("t", 0);
    const keys = Array.from({ length: 100 }, (_, i) => `tombstone-key-${String(i).padStart(18)}`);
    append(
      log,
      keys.map((key) => ({ key, value: null })),
      { timestampMs: Date.now() },
    );
    log.roll();
    const sealedBytes = log.sealedSegments()[0].sizeBytes;
    expect(sealedBytes).toBeGreaterThan(3900);
    expect(sealedBytes).toBeLessThanOrEqual(4096);
    const before = readAllRecords(log);
    expect(await manager.cleaner.cleanOnce()).not.toBeNull();
    const [batch] = readAllBatches(log);
    expect(batch.attributes & DELETE_HORIZON_BIT).toBe(DELETE_HORIZON_BIT);
    expect(log.sealedSegments()[0].sizeBytes).toBeGreaterThan(4096);
    expect(readAllRecords(log)).toEqual(before);
  });

  test("stopping the cleaner mid-cleaning ends its Worker; nothing is lost, a new one cleans", async () => {
    const slow = { ioBufferBytes: 4096, ioMaxBytesPerSecond: 20_000 };
    const log = open({}, slow).getOrCreateLog("t", 0);
    writeRounds(log, 100, 10);
    log.roll();
    const before = readAllRecords(log);
    const cleaning = manager.cleaner.cleanOnce();
    await waitUntil(() => manager.cleaner.workerActivity.chunks >= 2, 10_000, "two chunks");
    manager.cleaner.requestStop();
    expect(await cleaning).toBeNull();
    expect(lines.join("\n")).toContain("abandoned: the cleaner is stopping");
    expect(lines.join("\n")).not.toContain("uncleanable");
    // Groups swapped in before the stop are cleaned; every record left is the one produced at
    // its offset, and every key's latest record is still there.
    const byOffset = new Map(before.map((r) => [r.offset, r]));
    for (const r of readAllRecords(log)) expect(byOffset.get(r.offset)).toEqual(r);
    expect(latestByKey(readAllRecords(log))).toEqual(latestByKey(before));
    expect(fs.readdirSync(log.dir).filter((f) => /\.(cleaned|swap)$/.test(f))).toEqual([]);
    manager.close();
    const reopened = open({}, { ioBufferBytes: 4096 }).getOrCreateLog("t", 0);
    expect(await manager.cleaner.cleanOnce()).not.toBeNull();
    expect(latestByKey(readAllRecords(reopened))).toEqual(latestByKey(before));
    expect(readAllRecords(reopened).length).toBe(10);
  });
});
