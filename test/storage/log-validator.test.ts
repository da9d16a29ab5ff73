import { describe, expect, test } from "bun:test";
import { ErrorCode, KafkaError } from "../../src/protocol/errors.ts";
import { buildRecordBatch, verifyBatchCrc } from "../../src/protocol/record-batch.ts";
import type { ValidationInput } from "../../src/storage/log-validator.ts";
import { validateAndAssignOffsets } from "../../src/storage/log-validator.ts";

const leader: ValidationInput = {
  leaderEpoch: -1,
  nextOffset: 100n,
  maxMessageBytes: 1 << 20,
  segmentBytes: 1 << 30,
  logAppendTimeMs: null,
};

function codeOf(fn: () => unknown): number {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(KafkaError);
    return (error as KafkaError).code;
  }
  throw new Error("expected a KafkaError");
}

const twoBatches = () =>
  new Uint8Array(
    Buffer.concat([
      buildRecordBatch([{ value: null }, { value: null }], { timestampMs: 5 }),
      buildRecordBatch([{ value: null }], { timestampMs: 9 }),
    ]),
  );

describe("validateAndAssignOffsets", () => {
  test("assigns consecutive offsets in place and sums up the append", () => {
    const records = twoBatches();
    const result = validateAndAssignOffsets(records, leader);
    expect([result.baseOffset, result.lastOffset, result.recordCount]).toEqual([100n, 102n, 3]);
    expect(result.maxTimestamp).toBe(9n);
    const view = new DataView(records.buffer);
    expect(view.getBigInt64(0)).toBe(100n);
    expect(view.getBigInt64(result.batches[1].relativePosition)).toBe(102n);
    expect(verifyBatchCrc(records, 0)).toBe(true);
  });

  test("stamps LogAppendTime and keeps the CRC valid", () => {
    const records = twoBatches();
    const result = validateAndAssignOffsets(records, { ...leader, logAppendTimeMs: 777 });
    expect(result.maxTimestamp).toBe(777n);
    expect(verifyBatchCrc(records, result.batches[1].relativePosition)).toBe(true);
  });

  test("maps each kind of bad input to Kafka's error code", () => {
    const flipped = twoBatches();
    flipped[70] ^= 1;
    expect(codeOf(() => validateAndAssignOffsets(flipped, leader))).toBe(ErrorCode.CORRUPT_MESSAGE);
    const cut = twoBatches().subarray(0, 100);
    expect(codeOf(() => validateAndAssignOffsets(cut, leader))).toBe(ErrorCode.CORRUPT_MESSAGE);
    const magic1 = twoBatches();
    magic1[16] = 1;
    expect(codeOf(() => validateAndAssignOffsets(magic1, leader))).toBe(ErrorCode.INVALID_RECORD);
    const small = { ...leader, maxMessageBytes: 50 };
    expect(codeOf(() => validateAndAssignOffsets(twoBatches(), small))).toBe(
      ErrorCode.MESSAGE_TOO_LARGE,
    );
    const tinySegment = { ...leader, segmentBytes: 100 };
    expect(codeOf(() => validateAndAssignOffsets(twoBatches(), tinySegment))).toBe(
      ErrorCode.RECORD_LIST_TOO_LARGE,
    );
  });

  test("an empty append is not an error and assigns nothing", () => {
    const result = validateAndAssignOffsets(new Uint8Array(0), leader);
    expect(result.batches).toEqual([]);
    expect(result.baseOffset).toBe(-1n);
  });
});
