/**
 * Helpers for the log cleaner tests: keyed batches, reading a whole log back as records with
 * their offsets, and the model of what compaction must keep.
 */
import type { CompressionType } from "../../src/protocol/compression.ts";
import {
  buildRecordBatch,
  decodeRecords,
  readBatchHeader,
  verifyBatchCrc,
} from "../../src/protocol/record-batch.ts";
import type { UnifiedLog } from "../../src/storage/unified-log.ts";
import { readBytes } from "./helpers.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface KeyedRecord {
  readonly key: string | null;
  /** null: a tombstone. */
  readonly value: string | null;
}

export interface StoredRecord extends KeyedRecord {
  readonly offset: bigint;
  readonly timestamp: bigint;
}

export interface StoredBatch {
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  readonly attributes: number;
  readonly producerId: bigint;
  readonly baseSequence: number;
  readonly records: StoredRecord[];
}

export function keyedBatch(
  records: readonly KeyedRecord[],
  opts: {
    compression?: CompressionType;
    timestampMs?: number;
    producerId?: bigint;
    producerEpoch?: number;
    baseSequence?: number;
    isTransactional?: boolean;
  } = {},
): Uint8Array {
  return buildRecordBatch(
    records.map((r) => ({
      key: r.key === null ? null : encoder.encode(r.key),
      value: r.value === null ? null : encoder.encode(r.value),
    })),
    {
      timestampMs: opts.timestampMs,
      compression: opts.compression,
      producerId: opts.producerId,
      producerEpoch: opts.producerEpoch,
      baseSequence: opts.baseSequence,
      isTransactional: opts.isTransactional,
    },
  );
}

/** Every batch of the log from its start to its end, decoded. */
export function readAllBatches(log: UnifiedLog): StoredBatch[] {
  const out: StoredBatch[] = [];
  let offset = log.logStartOffset;
  // Each pass reads at least one batch (minOneMessage) and moves past it.
  while (offset < log.logEndOffset) {
    const bytes = readBytes(log, offset, 1 << 20);
    if (bytes.length === 0) break;
    let at = 0;
    while (at < bytes.length) {
      const header = readBatchHeader(bytes, at);
      const size = 12 + header.batchLength;
      const batchBytes = bytes.subarray(at, at + size);
      // Cleaned batches are rewritten: every one read back must carry a correct CRC.
      if (!verifyBatchCrc(batchBytes)) throw new Error(`CRC mismatch at ${header.baseOffset}`);
      const logAppend = (header.attributes & 0x08) !== 0;
      const records = decodeRecords(batchBytes).map((r) => ({
        offset: header.baseOffset + BigInt(r.offsetDelta),
        timestamp: logAppend ? header.maxTimestamp : header.baseTimestamp + r.timestampDelta,
        key: r.key === null ? null : decoder.decode(r.key),
        value: r.value === null ? null : decoder.decode(r.value),
      }));
      const lastOffset = header.baseOffset + BigInt(header.lastOffsetDelta);
      out.push({
        baseOffset: header.baseOffset,
        lastOffset,
        attributes: header.attributes,
        producerId: header.producerId,
        baseSequence: header.baseSequence,
        records,
      });
      offset = lastOffset + 1n;
      at += size;
    }
  }
  return out;
}

export function readAllRecords(log: UnifiedLog): StoredRecord[] {
  return readAllBatches(log).flatMap((b) => b.records);
}

/** Latest record per key as (key -> value), in the order a consumer would apply them. */
export function latestByKey(records: readonly { key: string | null; value: string | null }[]) {
  const latest = new Map<string, string | null>();
  for (const r of records) if (r.key !== null) latest.set(r.key, r.value);
  return latest;
}
