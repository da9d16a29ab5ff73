/**
 * A topic's compression.type applied to the batches a leader appends, as Kafka's LogValidator
 * does: `producer` stores every batch exactly as the producer compressed it (no decompression:
 * the CRC-32C already protects the compressed bytes), and a codec name (`uncompressed`, `gzip`,
 * `snappy`, `lz4`, `zstd`) rebuilds each batch whose codec differs, keeping its producer id,
 * epoch, base sequence, attributes and record timestamps. Only this rebuild decodes records, so
 * only here can a corrupt compressed payload be found; it is CORRUPT_MESSAGE and nothing of the
 * append is written. The rebuild compresses at the topic's compression.gzip.level or
 * compression.zstd.level (KIP-390): those levels matter only here, never for producer batches.
 */
import { CompressionType } from "../protocol/compression.ts";
import {
  buildRecordBatch,
  CorruptRecordError,
  checkMagic,
  compressionType,
  decodeRecords,
  InvalidRecordError,
  isControl,
  isTransactional,
  iterateBatches,
  readBatchHeader,
  timestampType,
  verifyBatchCrc,
} from "../protocol/record-batch.ts";

export type CompressionPolicy = "producer" | "uncompressed" | "gzip" | "snappy" | "lz4" | "zstd";

const TARGET_CODEC: { readonly [P in Exclude<CompressionPolicy, "producer">]: CompressionType } = {
  uncompressed: CompressionType.None,
  gzip: CompressionType.Gzip,
  snappy: CompressionType.Snappy,
  lz4: CompressionType.Lz4,
  zstd: CompressionType.Zstd,
};

/** The levels a rebuild compresses at; lz4 has none here (lz4-napi's frame API takes none). */
export interface CompressionLevels {
  /** compression.gzip.level: -1 (zlib's default, 6) or 1-9. */
  readonly gzipLevel: number;
  /** compression.zstd.level: -131072..22; 3 is zstd's default. */
  readonly zstdLevel: number;
}

/**
 * The records to store under `policy`: `records` itself when no batch needs a new codec, else
 * new bytes with those batches rebuilt at `levels`. Throws CorruptRecordError for a bad CRC or
 * a payload that does not decode.
 */
export function applyCompressionPolicy(
  records: Uint8Array,
  policy: CompressionPolicy,
  levels: CompressionLevels,
): Uint8Array {
  if (policy === "producer") return records;
  const target = TARGET_CODEC[policy];
  const level = levelFor(target, levels);
  const parts: Uint8Array[] = [];
  let rebuilt = false;
  for (const { position, sizeBytes } of iterateBatches(records)) {
    checkMagic(records, position);
    const batch = records.subarray(position, position + sizeBytes);
    const header = readBatchHeader(batch, 0);
    if (compressionType(header.attributes) === target) {
      parts.push(batch);
      continue;
    }
    parts.push(recompress(batch, target, level));
    rebuilt = true;
  }
  return rebuilt ? concat(parts) : records;
}

function levelFor(target: CompressionType, levels: CompressionLevels): number | undefined {
  if (target === CompressionType.Gzip) return levels.gzipLevel;
  if (target === CompressionType.Zstd) return levels.zstdLevel;
  return undefined;
}

function recompress(
  batch: Uint8Array,
  target: CompressionType,
  level: number | undefined,
): Uint8Array {
  if (!verifyBatchCrc(batch, 0)) throw new CorruptRecordError("CRC mismatch in batch");
  const header = readBatchHeader(batch, 0);
  const records = decodeRecords(batch);
  // buildRecordBatch needs a record; the validator would refuse the count anyway.
  if (records.length === 0) throw new InvalidRecordError("record batch holds no record");
  const baseTimestampMs = header.baseTimestamp;
  return buildRecordBatch(
    records.map((r) => ({
      key: r.key,
      value: r.value,
      headers: r.headers,
      timestampMs: Number(baseTimestampMs + r.timestampDelta),
    })),
    {
      baseOffset: header.baseOffset,
      compression: target,
      compressionLevel: level,
      producerId: header.producerId,
      producerEpoch: header.producerEpoch,
      baseSequence: header.baseSequence,
      timestampMs: Number(baseTimestampMs),
      partitionLeaderEpoch: header.partitionLeaderEpoch,
      isTransactional: isTransactional(header.attributes),
      isControl: isControl(header.attributes),
      timestampType: timestampType(header.attributes),
    },
  );
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const p of parts) total += p.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
