// UnifiedLog.maybeIncrementLogStartOffset (DeleteRecords, a follower learning its leader's start)
// on real segment files: segments wholly below go at once, the one holding the offset stays,
// the start never moves back nor past the high watermark, and a compacted log still drops what
// lies below its start.

import { afterEach, beforeEach, expect, test } from "bun:test";
import * as fs from "node:fs";
import { ErrorCode, KafkaError } from "../../src/protocol/errors.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { DEFAULT_LOG_CONFIG, type LogConfig } from "../../src/storage/log-config.ts";
import { LogManager } from "../../src/storage/log-manager.ts";
import type { UnifiedLog } from "../../src/storage/unified-log.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";
import { batch, removeDir, tempDir } from "./helpers.ts";

let dir: string;
let manager: LogManager;

function open(config: Partial<LogConfig> = {}): UnifiedLog {
  manager = LogManager.open({
    logDirs: [dir],
    defaultConfig: { ...DEFAULT_LOG_CONFIG, ...config },
    logger: SILENT_LOGGER,
  });
  return manager.getOrCreateLog("trim", 0);
}

const keyed = (i: number) =>
  buildRecordBatch([{ key: new TextEncoder().encode(`k${i}`), value: new Uint8Array(8) }]);

/** Ten segments of ten one-record batches each (bases 0, 10, ..., 90), all below the HW. */
function tenSegments(config: Partial<LogConfig> = {}): UnifiedLog {
  const log = open(config);
  for (let i = 0; i < 100; i++) {
    if (i > 0 && i % 10 === 0) log.roll();
    log.appendAsLeader(config.cleanupPolicy === "compact" ? keyed(i) : batch(1), -1);
  }
  log.highWatermark = log.logEndOffset;
  return log;
}

beforeEach(() => (dir = tempDir()));
afterEach(() => {
  manager.close();
  removeDir(dir);
});

test("segments wholly below the new start are deleted; the one holding it stays", async () => {
  const log = tenSegments();
  expect(log.maybeIncrementLogStartOffset(35n, "test")).toBe(true);
  expect(log.logStartOffset).toBe(35n);
  expect(log.segmentBaseOffsets()).toEqual([30n, 40n, 50n, 60n, 70n, 80n, 90n]);
  // Exactly on a segment's base: the segment before it goes too.
  expect(log.maybeIncrementLogStartOffset(50n, "test")).toBe(true);
  expect(log.segmentBaseOffsets()).toEqual([50n, 60n, 70n, 80n, 90n]);
  await Bun.sleep(50); // Files are removed in the background.
  const files = fs.readdirSync(`${dir}/trim-0`).filter((f) => f.endsWith(".log"));
  expect(files.length).toBe(5);
  expect(log.offsetForTimestamp(-2n)?.offset).toBe(50n);
});

test("never backwards, never past the high watermark", () => {
  const log = tenSegments();
  log.maybeIncrementLogStartOffset(20n, "test");
  expect(log.maybeIncrementLogStartOffset(5n, "test")).toBe(false);
  expect(log.logStartOffset).toBe(20n);
  log.highWatermark = 60n;
  let error: unknown;
  try {
    log.maybeIncrementLogStartOffset(61n, "test");
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(KafkaError);
  expect((error as KafkaError).code).toBe(ErrorCode.OFFSET_OUT_OF_RANGE);
  expect(log.logStartOffset).toBe(20n);
  // Up to the high watermark, even into the active segment, which is never deleted.
  log.highWatermark = 100n;
  expect(log.maybeIncrementLogStartOffset(100n, "test")).toBe(true);
  expect(log.segmentBaseOffsets()).toEqual([90n]);
});

test("a reopened log starts at the checkpointed start, not its first segment's base", () => {
  const log = tenSegments();
  log.maybeIncrementLogStartOffset(47n, "test");
  manager.close();
  const reopened = open();
  expect(reopened.logStartOffset).toBe(47n);
  expect(reopened.segmentBaseOffsets()[0]).toBe(40n);
});

test("retention of a compact-only log still drops the segments below its start", () => {
  tenSegments({ cleanupPolicy: "compact" });
  manager.close();
  // A crash after the checkpoint was written but before the files were removed leaves
  // segments below the start; a compacted log must drop them too, as Kafka's does.
  const checkpoint = `${dir}/log-start-offset-checkpoint`;
  fs.writeFileSync(checkpoint, "0\n1\ntrim 0 25\n");
  const log = open({ cleanupPolicy: "compact" });
  log.highWatermark = log.logEndOffset;
  expect(log.logStartOffset).toBe(25n);
  expect(log.segmentBaseOffsets()[0]).toBe(0n);
  expect(log.deleteOldSegments(Date.now())).toBe(2);
  expect(log.segmentBaseOffsets()[0]).toBe(20n);
});
