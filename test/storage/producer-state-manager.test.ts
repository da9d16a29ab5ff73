import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { ErrorCode, KafkaError } from "../../src/protocol/errors.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import type { LogConfig } from "../../src/storage/log-config.ts";
import { DEFAULT_LOG_CONFIG } from "../../src/storage/log-config.ts";
import { OpenFilePool } from "../../src/storage/open-file-pool.ts";
import { incrementSequence, ProducerStateEntry } from "../../src/storage/producer-state-entry.ts";
import { ProducerStateManager } from "../../src/storage/producer-state-manager.ts";
import {
  decodeSnapshot,
  encodeSnapshot,
  listSnapshotOffsets,
} from "../../src/storage/producer-state-snapshot.ts";
import { UnifiedLog } from "../../src/storage/unified-log.ts";
import { LineLogger } from "../support/line-logger.ts";
import { batchOffsets, readBytes, removeDir, replicateInto, tempDir } from "./helpers.ts";

let root: string;
let lines: string[];
const dirOf = () => path.join(root, "events-0");

function open(opts: { clean?: boolean; config?: Partial<LogConfig>; expirationMs?: number } = {}) {
  return UnifiedLog.load({
    dir: dirOf(),
    topic: "events",
    partition: 0,
    config: { ...DEFAULT_LOG_CONFIG, ...opts.config },
    recoveryPoint: 0n,
    logStartOffset: 0n,
    cleanShutdown: opts.clean ?? true,
    env: { pool: new OpenFilePool(64), logger: new LineLogger(lines), maxSegmentsPerLog: 1000 },
    producerIdExpirationMs: opts.expirationMs,
  });
}

/** An idempotent batch of `count` records from sequence `seq`. */
function idem(producerId: bigint, epoch: number, seq: number, count = 5, timestampMs = Date.now()) {
  const records = Array.from({ length: count }, (_, i) => ({
    key: null,
    value: new TextEncoder().encode(`p${producerId}-e${epoch}-s${seq + i}`),
  }));
  return buildRecordBatch(records, {
    producerId,
    producerEpoch: epoch,
    baseSequence: seq,
    timestampMs,
  });
}

function codeOf(action: () => unknown): number {
  try {
    action();
  } catch (e) {
    if (e instanceof KafkaError) return e.code;
    throw e;
  }
  return ErrorCode.NONE;
}

beforeEach(() => {
  root = tempDir("quill-producer-state-");
  lines = [];
});
afterEach(() => removeDir(root));

describe("sequence checks on the leader", () => {
  test("a retried batch gets its original offsets and is not written again", () => {
    const log = open();
    expect(log.appendAsLeader(idem(7n, 0, 0), -1).baseOffset).toBe(0n);
    expect(log.appendAsLeader(idem(7n, 0, 5), -1).baseOffset).toBe(5n);
    const retry = log.appendAsLeader(idem(7n, 0, 0), -1);
    expect(retry.baseOffset).toBe(0n);
    expect(retry.lastOffset).toBe(4n);
    expect(log.logEndOffset).toBe(10n);
    expect(batchOffsets(readBytes(log, 0n, 1 << 20)).length).toBe(2);
    log.close();
  });

  test("only the last five batches are remembered, as in Kafka", () => {
    const log = open();
    for (let i = 0; i < 6; i++) log.appendAsLeader(idem(7n, 0, i * 5), -1);
    // Batch 1 (sequences 5-9) is still retained; batch 0 was pushed out.
    expect(log.appendAsLeader(idem(7n, 0, 5), -1).baseOffset).toBe(5n);
    expect(codeOf(() => log.appendAsLeader(idem(7n, 0, 0), -1))).toBe(
      ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    );
    expect(log.logEndOffset).toBe(30n);
    log.close();
  });

  test("a gap is OUT_OF_ORDER_SEQUENCE_NUMBER and writes nothing", () => {
    const log = open();
    log.appendAsLeader(idem(7n, 0, 0), -1);
    expect(codeOf(() => log.appendAsLeader(idem(7n, 0, 6), -1))).toBe(
      ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    );
    expect(log.logEndOffset).toBe(5n);
    expect(log.appendAsLeader(idem(7n, 0, 5), -1).baseOffset).toBe(5n);
    log.close();
  });

  test("an older epoch is INVALID_PRODUCER_EPOCH; a new epoch must start at 0", () => {
    const log = open();
    log.appendAsLeader(idem(7n, 3, 0), -1);
    expect(codeOf(() => log.appendAsLeader(idem(7n, 2, 5), -1))).toBe(
      ErrorCode.INVALID_PRODUCER_EPOCH,
    );
    expect(codeOf(() => log.appendAsLeader(idem(7n, 4, 5), -1))).toBe(
      ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    );
    expect(log.appendAsLeader(idem(7n, 4, 0), -1).baseOffset).toBe(5n);
    // The bumped epoch fences the old one for good.
    expect(codeOf(() => log.appendAsLeader(idem(7n, 3, 5), -1))).toBe(
      ErrorCode.INVALID_PRODUCER_EPOCH,
    );
    expect(log.producerState.entry(7n)?.producerEpoch).toBe(4);
    log.close();
  });

  test("a producer the partition does not know may start at any sequence (KIP-360)", () => {
    const log = open();
    expect(log.appendAsLeader(idem(9n, 0, 42), -1).baseOffset).toBe(0n);
    expect(log.producerState.entry(9n)?.lastSeq).toBe(46);
    log.close();
  });

  test("a batch with a producer id and no sequence is INVALID_RECORD", () => {
    const log = open();
    expect(codeOf(() => log.appendAsLeader(idem(9n, 0, -1), -1))).toBe(ErrorCode.INVALID_RECORD);
    expect(log.logEndOffset).toBe(0n);
    log.close();
  });

  test("producers are independent, and plain batches are not tracked", () => {
    const log = open();
    log.appendAsLeader(idem(1n, 0, 0), -1);
    log.appendAsLeader(buildRecordBatch([{ value: new Uint8Array(1) }]), -1);
    log.appendAsLeader(idem(2n, 0, 0), -1);
    expect(log.appendAsLeader(idem(1n, 0, 0), -1).baseOffset).toBe(0n);
    expect(log.appendAsLeader(idem(2n, 0, 0), -1).baseOffset).toBe(6n);
    expect(log.producerState.producerCount).toBe(2);
    log.close();
  });

  test("a follower that becomes leader deduplicates what it replicated", () => {
    const leader = open();
    for (let i = 0; i < 3; i++) leader.appendAsLeader(idem(7n, 0, i * 5), -1);
    const base = root;
    root = path.join(base, "follower");
    const follower = replicateInto(leader, root, open);
    root = base;
    // Leadership moves: the producer retries its last two batches against the new leader.
    expect(follower.appendAsLeader(idem(7n, 0, 10), -1).baseOffset).toBe(10n);
    expect(follower.appendAsLeader(idem(7n, 0, 5), -1).baseOffset).toBe(5n);
    expect(follower.logEndOffset).toBe(15n);
    expect(follower.appendAsLeader(idem(7n, 0, 15), -1).baseOffset).toBe(15n);
    follower.close();
  });

  test("a follower's batches update the state without checks", () => {
    const log = open();
    const batch = idem(5n, 1, 10);
    new DataView(batch.buffer).setBigInt64(0, 0n);
    log.appendAsFollower(batch);
    expect(log.producerState.entry(5n)?.lastSeq).toBe(14);
    log.close();
  });
});

describe("state across restarts", () => {
  test("a clean close writes <LEO>.snapshot and a reopened log still deduplicates", () => {
    let log = open();
    for (let i = 0; i < 3; i++) log.appendAsLeader(idem(7n, 0, i * 5), -1);
    log.close();
    expect(listSnapshotOffsets(dirOf())).toEqual([15n]);
    expect(fs.existsSync(path.join(dirOf(), "00000000000000000015.snapshot"))).toBe(true);
    log = open();
    // Every retained batch, not only the last, is recognised after the restart.
    expect(log.appendAsLeader(idem(7n, 0, 0), -1).baseOffset).toBe(0n);
    expect(log.appendAsLeader(idem(7n, 0, 10), -1).baseOffset).toBe(10n);
    expect(log.logEndOffset).toBe(15n);
    expect(lines.some((l) => l.includes("rebuilt"))).toBe(false);
    log.close();
  });

  test("after a crash the state is rebuilt from the log after the newest snapshot", () => {
    let log = open({ config: { segmentBytes: 400 } });
    for (let i = 0; i < 8; i++) log.appendAsLeader(idem(7n, 0, i * 5), -1);
    expect(log.segmentCount).toBeGreaterThan(1);
    const lastRollSnapshot = listSnapshotOffsets(dirOf()).at(-1)!;
    expect(lastRollSnapshot).toBeLessThan(40n);
    // No close: the process "dies" with only the roll snapshots on disk.
    log = open({ clean: false, config: { segmentBytes: 400 } });
    expect(lines.some((l) => l.includes(`after offset ${lastRollSnapshot}`))).toBe(true);
    expect(log.appendAsLeader(idem(7n, 0, 35), -1).baseOffset).toBe(35n);
    expect(log.appendAsLeader(idem(7n, 0, 40), -1).baseOffset).toBe(40n);
    log.close();
  });

  test("without any snapshot the state is rebuilt from the whole log", () => {
    let log = open();
    for (let i = 0; i < 4; i++) log.appendAsLeader(idem(7n, 2, i * 5), -1);
    log.close();
    for (const offset of listSnapshotOffsets(dirOf())) {
      fs.rmSync(path.join(dirOf(), `${String(offset).padStart(20, "0")}.snapshot`));
    }
    log = open({ clean: false });
    expect(log.appendAsLeader(idem(7n, 2, 15), -1).baseOffset).toBe(15n);
    expect(codeOf(() => log.appendAsLeader(idem(7n, 1, 20), -1))).toBe(
      ErrorCode.INVALID_PRODUCER_EPOCH,
    );
    log.close();
  });

  test("a sealed segment's header changed on disk stops the rebuild, not the load", () => {
    const config = { segmentBytes: 400 };
    let log = open({ config });
    for (let i = 0; i < 8; i++) log.appendAsLeader(idem(7n, 0, i * 5), -1);
    expect(log.segmentCount).toBeGreaterThan(2);
    log.close();
    for (const offset of listSnapshotOffsets(dirOf())) {
      fs.rmSync(path.join(dirOf(), `${String(offset).padStart(20, "0")}.snapshot`));
    }
    // Sealed segments are trusted after a clean shutdown, so only the replay reads this.
    const segment = path.join(dirOf(), "00000000000000000000.log");
    const bytes = fs.readFileSync(segment);
    bytes.writeInt32BE(1 << 30, 12 + bytes.readInt32BE(8) + 8);
    fs.writeFileSync(segment, bytes);
    log = open({ config });
    expect(lines.some((l) => l.includes("producer state rebuild stopped"))).toBe(true);
    // The first batch was replayed before the bad header; the log end is intact.
    expect(log.producerState.entry(7n)?.lastSeq).toBe(4);
    expect(log.logEndOffset).toBe(40n);
    log.close();
  });

  test("a snapshot above the recovered log end is deleted; a corrupt one is skipped", () => {
    let log = open();
    log.appendAsLeader(idem(7n, 0, 0), -1);
    log.close();
    const stray = path.join(dirOf(), "00000000000000000099.snapshot");
    fs.copyFileSync(path.join(dirOf(), "00000000000000000005.snapshot"), stray);
    fs.writeFileSync(path.join(dirOf(), "00000000000000000005.snapshot"), "garbage!!!!!");
    log = open({ clean: false });
    expect(fs.existsSync(stray)).toBe(false);
    expect(lines.some((l) => l.includes("skipping producer snapshot 5"))).toBe(true);
    expect(log.appendAsLeader(idem(7n, 0, 0), -1).baseOffset).toBe(0n);
    log.close();
  });

  test("producers expire by producer.id.expiration.ms, not when retention moves the start", () => {
    const log = open({ config: { segmentBytes: 300, retentionBytes: 1 }, expirationMs: 60_000 });
    const oldMs = Date.now() - 120_000;
    log.appendAsLeader(idem(1n, 0, 0, 5, oldMs), -1);
    for (let i = 0; i < 4; i++) log.appendAsLeader(idem(2n, 0, i * 5), -1);
    log.highWatermark = log.logEndOffset;
    expect(log.producerState.producerCount).toBe(2);
    log.deleteOldSegments(Date.now());
    expect(log.logStartOffset).toBeGreaterThan(5n);
    // Producer 1 went for its age; producer 2 stays although its early batches are gone.
    expect(log.producerState.entry(1n)).toBeUndefined();
    expect(log.producerState.entry(2n)?.lastSeq).toBe(19);
    expect(listSnapshotOffsets(dirOf()).every((o) => o >= log.logStartOffset)).toBe(true);
    log.close();
  });
});

describe("limits", () => {
  test("past the producer cap, the producer with the oldest batch is forgotten", () => {
    const state = new ProducerStateManager({
      dir: root,
      name: "events-0",
      expirationMs: 1e12,
      maxProducers: 3,
      logger: new LineLogger(lines),
    });
    const batch = (producerId: bigint, offset: bigint, timestampMs: bigint) => ({
      producerId,
      producerEpoch: 0,
      baseSequence: 0,
      firstOffset: offset,
      lastOffset: offset,
      offsetDelta: 0,
      maxTimestampMs: timestampMs,
      isTransactional: false,
      controlType: null,
      coordinatorEpoch: -1,
    });
    for (const [id, ts] of [
      [1n, 300n],
      [2n, 100n],
      [3n, 200n],
      [4n, 400n],
    ] as const) {
      state.commit(state.prepareAppend([batch(id, id, ts)], "client"), id + 1n);
    }
    expect(state.producerCount).toBe(3);
    expect(state.entry(2n)).toBeUndefined();
    expect(lines.some((l) => l.includes("forgot producer 2"))).toBe(true);
  });
});

describe("snapshot format", () => {
  test("round-trips every retained batch, including a wrapped sequence", () => {
    const entry = new ProducerStateEntry(123456789n, 17);
    const lastSeq = incrementSequence(0x7ffffffe, 3);
    expect(lastSeq).toBe(1);
    entry.addBatch(17, { lastSeq: 0x7ffffffd, lastOffset: 9n, offsetDelta: 2, timestampMs: 5n });
    entry.addBatch(17, { lastSeq, lastOffset: 13n, offsetDelta: 3, timestampMs: 6n });
    const [decoded] = decodeSnapshot(encodeSnapshot([entry]));
    expect(decoded.producerId).toBe(123456789n);
    expect(decoded.producerEpoch).toBe(17);
    expect(decoded.batches).toEqual(entry.batches);
    expect(decoded.lastTimestampMs).toBe(6n);
    expect(decoded.findDuplicate(17, 0x7ffffffe, 1)?.lastOffset).toBe(13n);
  });

  test("a flipped byte fails the CRC", () => {
    const entry = new ProducerStateEntry(1n, 0);
    entry.addBatch(0, { lastSeq: 4, lastOffset: 4n, offsetDelta: 4, timestampMs: 1n });
    const bytes = encodeSnapshot([entry]);
    bytes[bytes.length - 1] ^= 1;
    expect(() => decodeSnapshot(bytes)).toThrow("CRC mismatch");
  });
});
