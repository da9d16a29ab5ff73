/**
 * The two ways record bytes can be refused. Both are operating errors (bad client or disk bytes,
 * never a bug in Quill) and KafkaErrors, so a handler answers them for the partition concerned
 * without knowing about record batches.
 */
import { ErrorCode, KafkaError } from "./errors.ts";

/**
 * The bytes break the record format: a bad batch length, a CRC mismatch, an unknown codec, a
 * truncated record, a compressed payload that does not decompress or decompresses past its
 * limit. Kafka answers these with CORRUPT_MESSAGE (its CorruptRecordException).
 */
export class CorruptRecordError extends KafkaError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.CORRUPT_MESSAGE, message, options);
  }
}

/**
 * The bytes are well formed but not allowed where they were sent: a produce request whose
 * records are a magic v0/v1 message set, hold no batch, or hold more than one batch. Kafka
 * answers these with INVALID_RECORD (its org.apache.kafka.common.InvalidRecordException).
 */
export class InvalidRecordError extends KafkaError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.INVALID_RECORD, message, options);
  }
}
