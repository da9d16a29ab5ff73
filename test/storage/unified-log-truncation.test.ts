import { afterEach, beforeEach, expect, test } from "bun:test";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import type { LogConfig } from "../../src/storage/log-config.ts";
import { DEFAULT_LOG_CONFIG } from "../../src/storage/log-config.ts";
import { LogManager } from "../../src/storage/log-manager.ts";
import type { UnifiedLog } from "../../src/storage/unified-log.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";
import { batchOffsets, readBytes, removeDir, tempDir } from "./helpers.ts";

let dir: string;
let manager: LogManager;

function open(config: Partial<LogConfig> = {}): UnifiedLog {
  manager = LogManager.open({
    logDirs: [dir],
    defaultConfig: { ...DEFAULT_LOG_CONFIG, ...config },
    logger: SILENT_LOGGER,
  });
  return manager.getOrCreateLog("orders", 0);
}

beforeEach(() => (dir = tempDir("quill-truncate-")));
afterEach(() => {
  manager.close();
  removeDir(dir);
});

/** A follower's copy of a leader batch: offsets and leader epoch already set. */
const leaderBatch = (baseOffset: bigint, count: number, epoch: number, tag = "x") =>
  buildRecordBatch(
    Array.from({ length: count }, (_, i) => ({
      key: null,
      value: new TextEncoder().encode(`${tag}-${baseOffset + BigInt(i)}`),
    })),
    { baseOffset, partitionLeaderEpoch: epoch },
  );

test("appends record the first offset of each new leader epoch", () => {
  const log = open();
  log.appendAsFollower(leaderBatch(0n, 2, 0));
  log.appendAsFollower(leaderBatch(2n, 2, 0));
  log.appendAsFollower(leaderBatch(4n, 3, 2));
  expect(log.leaderEpochCache.all()).toEqual([
    { epoch: 0, startOffset: 0n },
    { epoch: 2, startOffset: 4n },
  ]);
});

test("truncateTo cuts the active segment at a batch boundary; appends go on from there", () => {
  const log = open();
  for (let i = 0; i < 5; i++) {
    log.appendAsFollower(leaderBatch(BigInt(i * 2), 2, i < 3 ? 1 : 2));
  }
  log.highWatermark = 8n;
  log.truncateTo(6n);
  expect(log.logEndOffset).toBe(6n);
  expect(log.highWatermark).toBe(6n);
  expect(log.leaderEpochCache.all()).toEqual([{ epoch: 1, startOffset: 0n }]);
  expect(batchOffsets(readBytes(log, 0n, 1 << 20)).map((b) => b.base)).toEqual([0n, 2n, 4n]);
  // The leader's divergent history replaces what was cut.
  log.appendAsFollower(leaderBatch(6n, 4, 3, "new"));
  expect(log.logEndOffset).toBe(10n);
  expect(log.leaderEpochCache.latestEpoch).toBe(3);
  expect(batchOffsets(readBytes(log, 6n, 1 << 20))).toEqual([{ base: 6n, last: 9n }]);
});

test("an offset inside a batch drops that whole batch", () => {
  const log = open();
  log.appendAsFollower(leaderBatch(0n, 3, 0));
  log.appendAsFollower(leaderBatch(3n, 3, 0));
  log.truncateTo(4n);
  expect(log.logEndOffset).toBe(3n);
});

test("truncating into a sealed segment deletes later segments and rolls a writable one", () => {
  const log = open({ segmentBytes: 300 });
  for (let i = 0; i < 12; i++) log.appendAsFollower(leaderBatch(BigInt(i), 1, 0));
  const bases = log.segmentBaseOffsets();
  expect(bases.length).toBeGreaterThan(2);
  const cutInside = bases[1]! + 1n;
  log.truncateTo(cutInside);
  expect(log.logEndOffset).toBe(cutInside);
  expect(log.segmentBaseOffsets()).toEqual([bases[0]!, bases[1]!, cutInside]);
  log.appendAsFollower(leaderBatch(cutInside, 1, 1));
  expect(log.logEndOffset).toBe(cutInside + 1n);
  // The truncated state survives a restart: the same end, the same epochs.
  manager.close();
  const reopened = open({ segmentBytes: 300 });
  expect(reopened.logEndOffset).toBe(cutInside + 1n);
  expect(reopened.leaderEpochCache.all()).toEqual([
    { epoch: 0, startOffset: 0n },
    { epoch: 1, startOffset: cutInside },
  ]);
});

test("truncating to the log start empties the log", () => {
  const log = open();
  log.appendAsFollower(leaderBatch(0n, 5, 0));
  log.truncateTo(0n);
  expect(log.logEndOffset).toBe(0n);
  expect(log.leaderEpochCache.all()).toEqual([]);
  log.appendAsFollower(leaderBatch(0n, 1, 4));
  expect(log.logEndOffset).toBe(1n);
});

test("truncateFullyAndStartAt empties the log and starts it over at the leader's log start", () => {
  const log = open({ segmentBytes: 300 });
  for (let i = 0; i < 8; i++) log.appendAsFollower(leaderBatch(BigInt(i), 1, 0));
  log.truncateFullyAndStartAt(40n);
  expect([log.logStartOffset, log.logEndOffset, log.highWatermark]).toEqual([40n, 40n, 40n]);
  expect(log.segmentBaseOffsets()).toEqual([40n]);
  expect(log.leaderEpochCache.all()).toEqual([]);
  log.appendAsFollower(leaderBatch(40n, 2, 3));
  expect(batchOffsets(readBytes(log, 40n, 1 << 20))).toEqual([{ base: 40n, last: 41n }]);
  manager.close();
  const reopened = open({ segmentBytes: 300 });
  expect([reopened.logStartOffset, reopened.logEndOffset]).toEqual([40n, 42n]);
});
