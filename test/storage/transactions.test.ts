import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { buildEndTxnMarkerBatch } from "../../src/protocol/control-record.ts";
import { ErrorCode, KafkaError } from "../../src/protocol/errors.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import type { LogConfig } from "../../src/storage/log-config.ts";
import { DEFAULT_LOG_CONFIG } from "../../src/storage/log-config.ts";
import { OpenFilePool } from "../../src/storage/open-file-pool.ts";
import { UnifiedLog } from "../../src/storage/unified-log.ts";
import { LineLogger } from "../support/line-logger.ts";
import { batch, removeDir, replicateInto, tempDir } from "./helpers.ts";

let root: string;
let lines: string[];
const dirOf = () => path.join(root, "events-0");

function open(opts: { clean?: boolean; config?: Partial<LogConfig> } = {}) {
  const log = UnifiedLog.load({
    dir: dirOf(),
    topic: "events",
    partition: 0,
    config: { ...DEFAULT_LOG_CONFIG, ...opts.config },
    recoveryPoint: 0n,
    logStartOffset: 0n,
    cleanShutdown: opts.clean ?? true,
    env: { pool: new OpenFilePool(64), logger: new LineLogger(lines), maxSegmentsPerLog: 1000 },
  });
  log.highWatermark = log.logEndOffset;
  return log;
}

/** A transactional batch of `count` records from sequence `seq`. */
function txn(producerId: bigint, epoch: number, seq: number, count = 3) {
  const records = Array.from({ length: count }, (_, i) => ({
    key: null,
    value: new TextEncoder().encode(`p${producerId}-${seq + i}`),
  }));
  return buildRecordBatch(records, {
    producerId,
    producerEpoch: epoch,
    baseSequence: seq,
    isTransactional: true,
  });
}

function marker(producerId: bigint, epoch: number, commit: boolean, coordinatorEpoch = 0) {
  return buildEndTxnMarkerBatch(
    { producerId, producerEpoch: epoch, coordinatorEpoch, commit },
    Date.now(),
  );
}

const client = {} as const;
const coordinator = { origin: "coordinator" } as const;

function append(log: UnifiedLog, records: Uint8Array, opts: typeof client | typeof coordinator) {
  const result = log.appendAsLeader(records, -1, opts);
  log.highWatermark = log.logEndOffset;
  return result;
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
  root = tempDir();
  lines = [];
});
afterEach(() => removeDir(root));

describe("last stable offset", () => {
  test("stops at the first open transaction and moves when its marker is written", () => {
    const log = open();
    append(log, batch(2), client); // 0-1 plain
    append(log, txn(7n, 0, 0), client); // 2-4 open
    append(log, txn(8n, 0, 0), client); // 5-7 open
    expect(log.lastStableOffset).toBe(2n);
    append(log, marker(7n, 0, true), coordinator); // 8
    expect(log.lastStableOffset).toBe(5n);
    append(log, marker(8n, 0, false), coordinator); // 9
    expect(log.lastStableOffset).toBe(10n);
    expect(log.highWatermark).toBe(10n);
    log.close();
  });

  test("is capped at the high watermark", () => {
    const log = open();
    log.appendAsLeader(batch(3), -1);
    expect(log.lastStableOffset).toBe(0n);
    log.close();
  });
});

describe("aborted transactions", () => {
  test("ABORT markers are indexed in Kafka's .txnindex format and collected by range", () => {
    const log = open();
    append(log, txn(7n, 0, 0), client); // 0-2
    append(log, txn(8n, 0, 0), client); // 3-5
    append(log, marker(8n, 0, false), coordinator); // 6: abort 3..6, LSO stays 0
    append(log, marker(7n, 0, true), coordinator); // 7
    append(log, txn(7n, 0, 3), client); // 8-10
    append(log, marker(7n, 0, false), coordinator); // 11
    const file = path.join(dirOf(), "00000000000000000000.txnindex");
    const bytes = fs.readFileSync(file);
    expect(bytes.length).toBe(2 * 34);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    expect([
      view.getInt16(0),
      view.getBigInt64(2),
      view.getBigInt64(10),
      view.getBigInt64(18),
      view.getBigInt64(26),
    ]).toEqual([0, 8n, 3n, 6n, 0n]);
    expect(view.getBigInt64(34 + 26)).toBe(12n);
    expect(log.collectAbortedTransactions(0n, 3n, 100)).toEqual([]);
    expect(log.collectAbortedTransactions(0n, 12n, 100).map((t) => t.producerId)).toEqual([8n, 7n]);
    expect(log.collectAbortedTransactions(7n, 12n, 100).map((t) => t.producerId)).toEqual([7n]);
    log.close();
  });

  test("survive a crash: the state and the index are rebuilt, torn entries re-added", () => {
    const log = open();
    append(log, txn(7n, 0, 0), client); // 0-2
    append(log, marker(7n, 0, false), coordinator); // 3
    append(log, txn(9n, 0, 0), client); // 4-6, left open
    // A crash that lost the index entry (written after the marker) and no snapshot.
    fs.truncateSync(path.join(dirOf(), "00000000000000000000.txnindex"), 20);
    const reopened = open({ clean: false });
    expect(reopened.lastStableOffset).toBe(4n);
    expect(reopened.collectAbortedTransactions(0n, 7n, 10)).toEqual([
      { producerId: 7n, firstOffset: 0n, lastOffset: 3n, lastStableOffset: 4n },
    ]);
    reopened.close();
  });

  test("an open transaction survives a snapshot and a clean restart", () => {
    const log = open();
    append(log, txn(7n, 0, 0), client);
    log.roll();
    append(log, batch(1), client);
    log.close();
    const reopened = open();
    expect(reopened.lastStableOffset).toBe(0n);
    expect(reopened.producerState.entry(7n)?.currentTxnFirstOffset).toBe(0n);
    append(reopened, marker(7n, 0, false), coordinator);
    expect(reopened.lastStableOffset).toBe(reopened.logEndOffset);
    reopened.close();
  });

  test("truncation drops index entries of markers cut off", () => {
    const log = open();
    append(log, txn(7n, 0, 0), client); // 0-2
    append(log, marker(7n, 0, false), coordinator); // 3
    log.truncateTo(3n);
    expect(log.collectAbortedTransactions(0n, 10n, 10)).toEqual([]);
    expect(log.lastStableOffset).toBe(0n);
    log.close();
  });
});

describe("followers", () => {
  test("track open and aborted transactions from what they replicate, and keep them as leader", () => {
    const leader = open();
    append(leader, txn(7n, 0, 0), client); // 0-2
    append(leader, txn(8n, 0, 0), client); // 3-5
    append(leader, marker(7n, 0, false), coordinator); // 6: abort 0..6
    append(leader, batch(1), client); // 7
    const base = root;
    root = path.join(base, "follower");
    const follower = replicateInto(leader, root, open);
    follower.highWatermark = follower.logEndOffset;
    // Producer 8's transaction is still open on the follower: its LSO stops there, and the
    // aborted one is in the follower's own .txnindex.
    expect(follower.lastStableOffset).toBe(3n);
    expect(follower.producerState.entry(8n)?.currentTxnFirstOffset).toBe(3n);
    expect(follower.collectAbortedTransactions(0n, 8n, 10)).toEqual([
      { producerId: 7n, firstOffset: 0n, lastOffset: 6n, lastStableOffset: 3n },
    ]);
    // Leadership moves here; the coordinator's marker for producer 8 closes the transaction.
    append(follower, marker(8n, 0, true), coordinator); // 8
    expect(follower.lastStableOffset).toBe(9n);
    follower.close();
    root = base;
  });
});

describe("checks", () => {
  test("clients may not write control batches", () => {
    const log = open();
    append(log, txn(7n, 0, 0), client);
    expect(codeOf(() => log.appendAsLeader(marker(7n, 0, true), -1))).toBe(
      ErrorCode.INVALID_RECORD,
    );
    log.close();
  });

  test("a plain idempotent batch inside an open transaction is INVALID_TXN_STATE", () => {
    const log = open();
    append(log, txn(7n, 0, 0), client);
    const plain = buildRecordBatch([{ value: new Uint8Array(1) }], {
      producerId: 7n,
      producerEpoch: 0,
      baseSequence: 3,
    });
    expect(codeOf(() => log.appendAsLeader(plain, -1))).toBe(ErrorCode.INVALID_TXN_STATE);
    log.close();
  });

  test("markers from an old producer epoch or coordinator epoch are fenced", () => {
    const log = open();
    append(log, txn(7n, 3, 0), client);
    expect(codeOf(() => log.appendAsLeader(marker(7n, 2, true), -1, coordinator))).toBe(
      ErrorCode.INVALID_PRODUCER_EPOCH,
    );
    append(log, marker(7n, 3, true, 5), coordinator);
    append(log, txn(7n, 3, 3), client);
    expect(codeOf(() => log.appendAsLeader(marker(7n, 3, true, 4), -1, coordinator))).toBe(
      ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    );
    // A fencing abort may carry a bumped epoch; the producer's old epoch is then refused.
    append(log, marker(7n, 4, false, 5), coordinator);
    expect(codeOf(() => log.appendAsLeader(txn(7n, 3, 6), -1))).toBe(
      ErrorCode.INVALID_PRODUCER_EPOCH,
    );
    log.close();
  });
});
