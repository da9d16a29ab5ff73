import { ErrorCode, KafkaError } from "./errors.ts";

/**
 * Raised when record bytes from a client or from disk break the record format: a bad batch
 * length, a CRC mismatch, an unknown magic or codec, a truncated record, a compressed payload
 * that does not decompress or decompresses past its limit. It is an operating error, never a
 * bug in Quill, and a KafkaError with code CORRUPT_MESSAGE, so handlers can answer it for the
 * partition concerned without knowing about record batches.
 */
export class CorruptRecordError extends KafkaError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.CORRUPT_MESSAGE, message, options);
  }
}
