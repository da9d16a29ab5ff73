/**
 * Kafka's LogValidator.validateKey for the leader's appends to a compacted log: a record without
 * a key could never be compacted, so the whole append is refused with INVALID_RECORD and
 * nothing of it is written. The message is Kafka's, one RecordError per keyless record
 * (batchIndex is the record's index in its batch), the first three shown.
 */
import { CompressionType, decompress } from "../protocol/compression.ts";
import { InvalidRecordError, RECORD_BATCH_OVERHEAD } from "../protocol/record-batch.ts";
import { RecordCursor } from "../protocol/record-cursor.ts";
import type { AppendedBatch } from "./log-segment.ts";

const ATTRIBUTES_AT = 21;
const RECORD_COUNT_AT = 57;
const COMPRESSION_MASK = 0x07;
const CONTROL_BIT = 0x20;
const MAX_UNCOMPRESSED_BYTES = 256 * 1024 * 1024;
const ERRORS_SHOWN = 3;

export function refuseRecordsWithoutKey(
  records: Uint8Array,
  batches: readonly AppendedBatch[],
  partitionName: string,
): void {
  const view = new DataView(records.buffer, records.byteOffset, records.byteLength);
  const errors: string[] = [];
  for (const b of batches) {
    const at = b.relativePosition;
    const attributes = view.getInt16(at + ATTRIBUTES_AT);
    if ((attributes & CONTROL_BIT) !== 0) continue;
    const codec = attributes & COMPRESSION_MASK;
    const stored = records.subarray(at + RECORD_BATCH_OVERHEAD, at + b.sizeBytes);
    const body =
      codec === CompressionType.None ? stored : decompress(codec, stored, MAX_UNCOMPRESSED_BYTES);
    const cursor = new RecordCursor(body, 0, body.length, view.getInt32(at + RECORD_COUNT_AT));
    for (let index = 0; cursor.next(); index++) {
      if (cursor.keyLength >= 0) continue;
      errors.push(
        `RecordError(batchIndex=${index}, message='Compacted topic cannot accept ` +
          `message without key in topic partition ${partitionName}')`,
      );
    }
  }
  if (errors.length === 0) return;
  throw new InvalidRecordError(
    `One or more records have been rejected due to ${errors.length} ` +
      "record errors in total, and only showing the first three errors at most: " +
      `[${errors.slice(0, ERRORS_SHOWN).join(", ")}]`,
  );
}
