/**
 * Turns a Fetch answer's record bytes into records with absolute offsets and timestamps.
 * A broker may end the bytes with a partial batch (cut at the byte budget): it is left for the
 * next fetch. Control batches (transaction markers) are skipped but move the position on.
 */
import {
  batchSizeBytes,
  decodeRecords,
  isControl,
  LOG_OVERHEAD,
  RECORD_BATCH_OVERHEAD,
  type RecordHeader,
  readBatchHeader,
  TimestampType,
  timestampType,
  verifyBatchCrc,
} from "../protocol/record-batch.ts";
import { ClusterError } from "./client-errors.ts";

export interface ConsumedRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  readonly timestampMs: number;
  readonly key: Uint8Array | null;
  readonly value: Uint8Array | null;
  readonly headers: readonly RecordHeader[];
}

export interface DecodedFetch {
  readonly records: ConsumedRecord[];
  /** The offset to fetch next: past the last whole batch, or `fetchOffset` if none was whole. */
  readonly nextOffset: bigint;
  /** Record bytes of the whole batches (for throughput figures). */
  readonly bytes: number;
}

/** CORRUPT_MESSAGE's code. */
const CORRUPT_MESSAGE = 2;

export function decodeFetched(
  topic: string,
  partition: number,
  buf: Uint8Array,
  fetchOffset: bigint,
): DecodedFetch {
  const records: ConsumedRecord[] = [];
  let position = 0;
  let nextOffset = fetchOffset;
  while (buf.length - position >= RECORD_BATCH_OVERHEAD) {
    const size = batchSizeBytes(buf, position);
    if (size < RECORD_BATCH_OVERHEAD || size - LOG_OVERHEAD < 0) {
      throw new ClusterError(CORRUPT_MESSAGE, `in ${topic} partition ${partition}`);
    }
    if (size > buf.length - position) break;
    const header = readBatchHeader(buf, position);
    const batch = buf.subarray(position, position + size);
    if (!verifyBatchCrc(batch, 0)) {
      throw new ClusterError(CORRUPT_MESSAGE, `CRC mismatch in ${topic} partition ${partition}`);
    }
    position += size;
    nextOffset = header.baseOffset + BigInt(header.lastOffsetDelta) + 1n;
    if (isControl(header.attributes)) continue;
    const logAppend = timestampType(header.attributes) === TimestampType.LogAppendTime;
    const base = Number(header.baseTimestamp);
    for (const r of decodeRecords(batch)) {
      const offset = header.baseOffset + BigInt(r.offsetDelta);
      if (offset < fetchOffset) continue;
      records.push({
        topic,
        partition,
        offset,
        timestampMs: logAppend ? Number(header.maxTimestamp) : base + Number(r.timestampDelta),
        key: r.key,
        value: r.value,
        headers: r.headers,
      });
    }
  }
  return {
    records,
    nextOffset: nextOffset > fetchOffset ? nextOffset : fetchOffset,
    bytes: position,
  };
}
