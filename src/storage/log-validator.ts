/**
 * Checks the batches of an append before any byte reaches the disk, and assigns their offsets,
 * as Kafka's LogValidator and UnifiedLog.analyzeAndValidateRecords do: whole entries only,
 * magic v2, each batch within max.message.bytes and the whole append within segment.bytes, a
 * matching CRC, and a consistent offset range. On the leader each base offset is patched in
 * place (the CRC does not cover it); LogAppendTime topics also get their max timestamp stamped.
 */
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import {
  checkMagic,
  iterateBatches,
  readBatchHeader,
  setBaseOffset,
  setMaxTimestampAndLogAppendTime,
  verifyBatchCrc,
} from "../protocol/record-batch.ts";
import { assert } from "../util/assert.ts";
import type { AppendedBatch } from "./log-segment.ts";

export interface ValidationInput {
  readonly assignOffsets: boolean;
  /** The log end offset: the first offset to assign, or the lowest acceptable one. */
  readonly nextOffset: bigint;
  readonly maxMessageBytes: number;
  readonly segmentBytes: number;
  /** Non-null for LogAppendTime topics on the leader: the time to stamp. */
  readonly logAppendTimeMs: number | null;
}

export interface ValidatedAppend {
  readonly batches: AppendedBatch[];
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  readonly maxTimestamp: bigint;
  readonly recordCount: number;
}

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
  const batches: AppendedBatch[] = [];
  let nextOffset = input.nextOffset;
  let maxTimestamp = -1n;
  let recordCount = 0;
  let baseOffset = -1n;
  // iterateBatches, checkMagic and readBatchHeader throw CorruptRecordError (CORRUPT_MESSAGE)
  // or InvalidRecordError (INVALID_RECORD, magic 0/1), both KafkaErrors the broker answers.
  for (const { position, sizeBytes } of iterateBatches(records)) {
    const batch = validateBatch(records, position, sizeBytes, nextOffset, input);
    if (baseOffset < 0n) baseOffset = batch.lastOffset - BigInt(batch.recordOffsets) + 1n;
    batches.push(batch);
    nextOffset = batch.lastOffset + 1n;
    if (batch.maxTimestamp > maxTimestamp) maxTimestamp = batch.maxTimestamp;
    recordCount += batch.recordCount;
  }
  return { batches, baseOffset, lastOffset: nextOffset - 1n, maxTimestamp, recordCount };
}

interface ValidatedBatch extends AppendedBatch {
  readonly recordCount: number;
  /** lastOffsetDelta + 1: how many offsets the batch spans. */
  readonly recordOffsets: number;
}

function validateBatch(
  records: Uint8Array,
  position: number,
  sizeBytes: number,
  nextOffset: bigint,
  input: ValidationInput,
): ValidatedBatch {
  if (sizeBytes > input.maxMessageBytes) {
    throw new KafkaError(
      ErrorCode.MESSAGE_TOO_LARGE,
      `batch of ${sizeBytes} bytes exceeds max.message.bytes ${input.maxMessageBytes}`,
    );
  }
  checkMagic(records, position);
  const header = readBatchHeader(records, position);
  if (!verifyBatchCrc(records, position)) {
    throw new KafkaError(ErrorCode.CORRUPT_MESSAGE, `CRC mismatch in batch at byte ${position}`);
  }
  // Compaction can leave gaps inside replicated batches, so the count check is leader-only.
  const inconsistent = input.assignOffsets && header.recordCount !== header.lastOffsetDelta + 1;
  if (header.lastOffsetDelta < 0 || inconsistent) {
    throw new KafkaError(
      ErrorCode.INVALID_RECORD,
      `batch at byte ${position} has ${header.recordCount} records but last offset delta ` +
        `${header.lastOffsetDelta}`,
    );
  }
  let baseOffset = header.baseOffset;
  let maxTimestamp = header.maxTimestamp;
  if (input.assignOffsets) {
    baseOffset = nextOffset;
    setBaseOffset(records, position, baseOffset);
    if (input.logAppendTimeMs !== null) {
      maxTimestamp = BigInt(input.logAppendTimeMs);
      setMaxTimestampAndLogAppendTime(records, position, maxTimestamp);
    }
  } else if (baseOffset < nextOffset) {
    throw new KafkaError(
      ErrorCode.INVALID_RECORD,
      `replicated batch at offset ${baseOffset} is below the log end ${nextOffset}`,
    );
  }
  assert(baseOffset >= nextOffset, `assigned offset ${baseOffset} below ${nextOffset}`);
  return {
    relativePosition: position,
    sizeBytes,
    lastOffset: baseOffset + BigInt(header.lastOffsetDelta),
    maxTimestamp,
    recordCount: header.recordCount,
    recordOffsets: header.lastOffsetDelta + 1,
  };
}
