/**
 * Records inside a magic v2 batch, after the 61-byte header (and after decompression):
 *
 *   length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
 *   keyLength varint, key, valueLength varint, value,
 *   headerCount varint, [headerKeyLength varint, headerKey, headerValueLength varint, value]...
 *
 * A length of -1 means null for keys and values. Header keys are UTF-8 and never null.
 */
import { assert } from "../util/assert.ts";
import { CorruptRecordError } from "./record-errors.ts";
import {
  VarintReader,
  varintSizeBytes,
  varlongSizeBytes,
  writeVarint,
  writeVarlong,
} from "./varint.ts";

export interface RecordHeader {
  key: string;
  value: Uint8Array | null;
}

export interface Record {
  offsetDelta: number;
  timestampDelta: bigint;
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers: RecordHeader[];
}

/** What a producer hands in to build a batch: offsets and deltas are assigned by the builder. */
export interface RecordInput {
  key?: Uint8Array | null;
  value: Uint8Array | null;
  headers?: RecordHeader[];
  timestampMs?: number;
}

/**
 * The smallest record: length, attributes, timestampDelta, offsetDelta, keyLength, valueLength
 * and headerCount take one byte each. Used to refuse a record count the bytes cannot hold before
 * allocating anything for it.
 */
export const RECORD_MIN_SIZE_BYTES = 7;

const textDecoder = new TextDecoder("utf-8", { fatal: true });
const textEncoder = new TextEncoder();

/**
 * Decodes `recordCount` records from `body[start, end)`. Keys, values and header values are
 * views into `body`, not copies. Throws CorruptRecordError on any malformed record, or when
 * the bytes and the count disagree.
 */
export function decodeRecordBody(
  body: Uint8Array,
  start: number,
  end: number,
  recordCount: number,
): Record[] {
  if (recordCount < 0 || recordCount > (end - start) / RECORD_MIN_SIZE_BYTES) {
    throw new CorruptRecordError(
      `record count ${recordCount} impossible in a body of ${end - start} bytes`,
    );
  }
  const reader = new VarintReader(body, start, end);
  const records: Record[] = new Array(recordCount);
  for (let i = 0; i < recordCount; i++) records[i] = decodeRecord(reader);
  if (reader.pos !== end) {
    throw new CorruptRecordError(
      `${end - reader.pos} bytes left after the batch's ${recordCount} records`,
    );
  }
  return records;
}

function decodeRecord(reader: VarintReader): Record {
  const sizeBytes = reader.varint();
  if (sizeBytes < RECORD_MIN_SIZE_BYTES - 1 || sizeBytes > reader.remaining()) {
    throw new CorruptRecordError(
      `record length ${sizeBytes} at ${reader.pos} invalid with ${reader.remaining()} bytes left`,
    );
  }
  const recordEnd = reader.pos + sizeBytes;
  const fields = new VarintReader(reader.buf, reader.pos, recordEnd);
  fields.int8(); // Record attributes are unused by every magic v2 version so far.
  const timestampDelta = fields.varlong();
  const offsetDelta = fields.varint();
  const key = nullableBytes(fields);
  const value = nullableBytes(fields);
  const headerCount = fields.varint();
  if (headerCount < 0 || headerCount > fields.remaining() / 2) {
    throw new CorruptRecordError(`header count ${headerCount} invalid in a record`);
  }
  const headers: RecordHeader[] = new Array(headerCount);
  for (let h = 0; h < headerCount; h++) {
    const keyLengthBytes = fields.varint();
    if (keyLengthBytes < 0) throw new CorruptRecordError("null header key");
    headers[h] = { key: decodeUtf8(fields.bytes(keyLengthBytes)), value: nullableBytes(fields) };
  }
  if (fields.pos !== recordEnd) {
    throw new CorruptRecordError(`record declared ${sizeBytes} bytes but its fields differ`);
  }
  reader.pos = recordEnd;
  return { offsetDelta, timestampDelta, key, value, headers };
}

function nullableBytes(reader: VarintReader): Uint8Array | null {
  const lengthBytes = reader.varint();
  if (lengthBytes === -1) return null;
  return reader.bytes(lengthBytes);
}

function decodeUtf8(bytes: Uint8Array): string {
  try {
    return textDecoder.decode(bytes);
  } catch (cause) {
    throw new CorruptRecordError("header key is not valid UTF-8", { cause });
  }
}

/** A record prepared for encoding: sizes computed once, header keys encoded once. */
interface PreparedRecord {
  bodySizeBytes: number;
  timestampDelta: bigint;
  offsetDelta: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  headerKeys: Uint8Array[];
  headerValues: (Uint8Array | null)[];
}

/**
 * Encodes records into one buffer: record i gets offsetDelta i and a timestamp delta from
 * `baseTimestampMs`.
 */
export function encodeRecordBody(
  records: readonly RecordInput[],
  baseTimestampMs: number,
  defaultTimestampMs: number,
): Uint8Array {
  const prepared = records.map((r, i) => prepareRecord(r, i, baseTimestampMs, defaultTimestampMs));
  let totalBytes = 0;
  for (const p of prepared) totalBytes += varintSizeBytes(p.bodySizeBytes) + p.bodySizeBytes;
  const out = new Uint8Array(totalBytes);
  let pos = 0;
  for (const p of prepared) pos = writeRecord(out, pos, p);
  assert(pos === totalBytes, `record encoder wrote ${pos} of ${totalBytes} bytes`);
  return out;
}

function prepareRecord(
  r: RecordInput,
  offsetDelta: number,
  baseTimestampMs: number,
  defaultTimestampMs: number,
): PreparedRecord {
  const timestampDelta = BigInt((r.timestampMs ?? defaultTimestampMs) - baseTimestampMs);
  const key = r.key ?? null;
  const value = r.value;
  const headers = r.headers ?? [];
  const headerKeys = headers.map((h) => textEncoder.encode(h.key));
  const headerValues = headers.map((h) => h.value);
  let bodySizeBytes =
    1 +
    varlongSizeBytes(timestampDelta) +
    varintSizeBytes(offsetDelta) +
    nullableSizeBytes(key) +
    nullableSizeBytes(value) +
    varintSizeBytes(headers.length);
  for (let h = 0; h < headers.length; h++) {
    bodySizeBytes += nullableSizeBytes(headerKeys[h]) + nullableSizeBytes(headerValues[h]);
  }
  return { bodySizeBytes, timestampDelta, offsetDelta, key, value, headerKeys, headerValues };
}

function nullableSizeBytes(bytes: Uint8Array | null): number {
  return bytes === null ? 1 : varintSizeBytes(bytes.length) + bytes.length;
}

function writeRecord(out: Uint8Array, pos: number, p: PreparedRecord): number {
  pos = writeVarint(out, pos, p.bodySizeBytes);
  out[pos++] = 0; // Record attributes: unused.
  pos = writeVarlong(out, pos, p.timestampDelta);
  pos = writeVarint(out, pos, p.offsetDelta);
  pos = writeNullable(out, pos, p.key);
  pos = writeNullable(out, pos, p.value);
  pos = writeVarint(out, pos, p.headerKeys.length);
  for (let h = 0; h < p.headerKeys.length; h++) {
    pos = writeNullable(out, pos, p.headerKeys[h]);
    pos = writeNullable(out, pos, p.headerValues[h]);
  }
  return pos;
}

function writeNullable(out: Uint8Array, pos: number, bytes: Uint8Array | null): number {
  if (bytes === null) return writeVarint(out, pos, -1);
  pos = writeVarint(out, pos, bytes.length);
  out.set(bytes, pos);
  return pos + bytes.length;
}
