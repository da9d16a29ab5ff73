/**
 * Checks the batches of an append before any byte reaches the disk, and assigns their offsets,
 * as Kafka's LogValidator and UnifiedLog.analyzeAndValidateRecords do: whole entries only,
 * magic v2, each batch within max.message.bytes and the whole append within segment.bytes, a
 * matching CRC, and a consistent offset range. On the leader each batch's base offset and
 * partition leader epoch are patched in place in the same pass (the CRC covers neither);
 * LogAppendTime topics also get their max timestamp stamped. So an appended batch is walked once.
 *
 * This is the per-batch hot path of produce, so it walks the buffer with one DataView instead of
 * the generic iterateBatches/readBatchHeader (which allocate per batch); the CRC check, the
 * dominant cost, stays in the protocol layer.
 */
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import {
  CorruptRecordError,
  checkMagic,
  LOG_OVERHEAD,
  RECORD_BATCH_OVERHEAD,
  setMaxTimestampAndLogAppendTime,
  verifyBatchCrc,
} from "../protocol/record-batch.ts";
import { assert } from "../util/assert.ts";
import type { AppendedBatch } from "./log-segment.ts";
import type { BatchEntry } from "./segment-batch-reader.ts";
import { batchEntryAt } from "./segment-batch-reader.ts";

/** Where a batch header keeps its partition leader epoch (after baseOffset and length). */
const PARTITION_LEADER_EPOCH_AT = 12;

export interface ValidationInput {
  /**
   * On the leader, the epoch stamped on every batch, whose offsets are assigned here; null for a
   * follower, which keeps the leader's offsets and epochs.
   */
  readonly leaderEpoch: number | null;
  /** The log end offset: the first offset to assign, or the lowest acceptable one. */
  readonly nextOffset: bigint;
  readonly maxMessageBytes: number;
  readonly segmentBytes: number;
  /** Non-null for LogAppendTime topics on the leader: the time to stamp. */
  readonly logAppendTimeMs: number | null;
  /** CreateTime topics on the leader with a timestamp bound; null when nothing is bounded. */
  readonly timestampBounds?: TimestampBounds | null;
}

/** The broker's clock and message.timestamp.before/after.max.ms, for CreateTime batches. */
export interface TimestampBounds {
  readonly nowMs: number;
  readonly beforeMaxMs: number;
  readonly afterMaxMs: number;
}

/** Where a batch header keeps its first timestamp. */
const BASE_TIMESTAMP_AT = 27;

/**
 * Kafka checks every record's timestamp; Quill checks the batch's first and largest, which its
 * header holds, so no record is decoded (a middle record older than the first passes).
 */
function checkTimestamps(view: DataView, position: number, maxTs: bigint, b: TimestampBounds) {
  const low = BigInt(b.nowMs - b.beforeMaxMs);
  const high = BigInt(b.nowMs + b.afterMaxMs);
  for (const ts of [view.getBigInt64(position + BASE_TIMESTAMP_AT), maxTs]) {
    if (ts !== -1n && (ts < low || ts > high)) {
      throw new KafkaError(
        ErrorCode.INVALID_TIMESTAMP,
        "One or more records have been rejected due to invalid timestamp",
      );
    }
  }
}

export interface ValidatedAppend {
  readonly batches: ValidatedBatch[];
  /** -1 when the records held no batch. */
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  readonly maxTimestamp: bigint;
  readonly recordCount: number;
}

/** Validates `records`; on the leader assigns offsets and epochs in place. Throws KafkaError. */
export function validateAndAssignOffsets(
  records: Uint8Array,
  input: ValidationInput,
): ValidatedAppend {
  if (records.length > input.segmentBytes) {
    throw new KafkaError(
      ErrorCode.RECORD_LIST_TOO_LARGE,
      `append of ${records.length} bytes exceeds segment.bytes ${input.segmentBytes}`,
    );
  }
  const view = new DataView(records.buffer, records.byteOffset, records.byteLength);
  const batches: ValidatedBatch[] = [];
  let nextOffset = input.nextOffset;
  let maxTimestamp = -1n;
  let recordCount = 0;
  let position = 0;
  // Each pass consumes a whole batch (at least RECORD_BATCH_OVERHEAD bytes) or throws.
  while (position < records.length) {
    const sizeBytes = checkedBatchSize(records, view, position, input.maxMessageBytes);
    const batch = validateBatch(records, view, position, sizeBytes, nextOffset, input);
    batches.push(batch);
    nextOffset = batch.lastOffset + 1n;
    if (batch.maxTimestamp > maxTimestamp) maxTimestamp = batch.maxTimestamp;
    recordCount += batch.recordCount;
    position += sizeBytes;
  }
  const baseOffset = batches.length === 0 ? -1n : batches[0].baseOffset;
  return { batches, baseOffset, lastOffset: nextOffset - 1n, maxTimestamp, recordCount };
}

/**
 * The size of the entry at `position`, checked before anything past its length field is read:
 * magic v2 (magic 0/1 is INVALID_RECORD as in Kafka 4), at least a v2 header, inside the buffer,
 * and within max.message.bytes.
 */
function checkedBatchSize(
  records: Uint8Array,
  view: DataView,
  position: number,
  maxMessageBytes: number,
): number {
  const remaining = records.length - position;
  if (remaining < LOG_OVERHEAD) {
    throw new CorruptRecordError(`${remaining} trailing bytes at ${position} are not a batch`);
  }
  checkMagic(records, position);
  const sizeBytes = LOG_OVERHEAD + view.getInt32(position + 8);
  if (sizeBytes < RECORD_BATCH_OVERHEAD || sizeBytes > remaining) {
    throw new CorruptRecordError(
      `batch at ${position} declares ${sizeBytes} bytes with ${remaining} left`,
    );
  }
  if (sizeBytes > maxMessageBytes) {
    throw new KafkaError(
      ErrorCode.MESSAGE_TOO_LARGE,
      `batch of ${sizeBytes} bytes exceeds max.message.bytes ${maxMessageBytes}`,
    );
  }
  return sizeBytes;
}

export interface ValidatedBatch extends AppendedBatch {
  readonly baseOffset: bigint;
  readonly recordCount: number;
  /** The partition leader epoch the batch carries (on the leader, the one just stamped). */
  readonly leaderEpoch: number;
}

function validateBatch(
  records: Uint8Array,
  view: DataView,
  position: number,
  sizeBytes: number,
  nextOffset: bigint,
  input: ValidationInput,
): ValidatedBatch {
  if (!verifyBatchCrc(records, position)) {
    throw new CorruptRecordError(`CRC mismatch in batch at byte ${position}`);
  }
  const header = batchEntryAt(view, position, position);
  const lastOffsetDelta = Number(header.lastOffset - header.baseOffset);
  // Compaction can leave gaps inside replicated batches, so the count check is leader-only.
  const inconsistent = input.leaderEpoch !== null && header.recordCount !== lastOffsetDelta + 1;
  if (lastOffsetDelta < 0 || inconsistent) {
    throw new KafkaError(
      ErrorCode.INVALID_RECORD,
      `batch at byte ${position} has ${header.recordCount} records but last offset delta ` +
        `${lastOffsetDelta}`,
    );
  }
  if (input.leaderEpoch === null) {
    const leaderEpoch = view.getInt32(position + PARTITION_LEADER_EPOCH_AT);
    return followerBatch(header, sizeBytes, nextOffset, leaderEpoch);
  }
  if (input.timestampBounds != null) {
    checkTimestamps(view, position, header.maxTimestamp, input.timestampBounds);
  }
  // The base offset is the entry's first 8 bytes and the epoch follows the length; the CRC
  // covers neither.
  view.setBigInt64(position, nextOffset);
  view.setInt32(position + PARTITION_LEADER_EPOCH_AT, input.leaderEpoch);
  let maxTimestamp = header.maxTimestamp;
  if (input.logAppendTimeMs !== null) {
    maxTimestamp = BigInt(input.logAppendTimeMs);
    setMaxTimestampAndLogAppendTime(records, position, maxTimestamp);
  }
  return {
    relativePosition: position,
    sizeBytes,
    baseOffset: nextOffset,
    lastOffset: nextOffset + BigInt(lastOffsetDelta),
    maxTimestamp,
    recordCount: header.recordCount,
    leaderEpoch: input.leaderEpoch,
  };
}

/** A follower keeps the leader's offsets, which must continue the log without going back. */
function followerBatch(
  header: BatchEntry,
  sizeBytes: number,
  nextOffset: bigint,
  leaderEpoch: number,
): ValidatedBatch {
  if (header.baseOffset < nextOffset) {
    throw new KafkaError(
      ErrorCode.INVALID_RECORD,
      `replicated batch at offset ${header.baseOffset} is below the log end ${nextOffset}`,
    );
  }
  assert(header.lastOffset >= header.baseOffset, "replicated batch offsets go backwards");
  return {
    relativePosition: header.position,
    sizeBytes,
    baseOffset: header.baseOffset,
    lastOffset: header.lastOffset,
    maxTimestamp: header.maxTimestamp,
    recordCount: header.recordCount,
    leaderEpoch,
  };
}
