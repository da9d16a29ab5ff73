/**
 * Turns a Fetch answer's record bytes into records with absolute offsets and timestamps.
 * A broker may end the bytes with a partial batch (cut at the byte budget): it is left for the
 * next fetch. Control batches (transaction markers) are skipped but move the position on.
 *
 * read_committed: the broker answers up to the last stable offset with the aborted transactions
 * that overlap the answer (producer id, first offset). As Kafka's consumer (Fetcher's
 * `abortedProducerIds`), a transactional batch is dropped when its producer has an aborted
 * transaction that started at or before the batch's last offset and whose ABORT marker has not
 * been passed yet.
 */
import {
  batchSizeBytes,
  decodeRecords,
  isControl,
  isTransactional,
  LOG_OVERHEAD,
  RECORD_BATCH_OVERHEAD,
  type RecordBatchHeader,
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
/** A control record's key: version int16, then type int16 (0 ABORT, 1 COMMIT). */
const CONTROL_TYPE_ABORT = 0;

export interface AbortedTransaction {
  readonly producerId: bigint;
  readonly firstOffset: bigint;
}

/** The aborted producers as the batches go by: Kafka's Fetcher logic for read_committed. */
class AbortedFilter {
  private readonly pending: AbortedTransaction[];
  private readonly aborted = new Set<bigint>();

  constructor(list: readonly AbortedTransaction[]) {
    this.pending = [...list].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : 1));
  }

  /** Whether the batch's records are to be dropped; control batches update the state. */
  skip(header: RecordBatchHeader, batch: Uint8Array): boolean {
    const last = header.baseOffset + BigInt(header.lastOffsetDelta);
    while (this.pending.length > 0 && this.pending[0]!.firstOffset <= last) {
      this.aborted.add(this.pending.shift()!.producerId);
    }
    if (isControl(header.attributes)) {
      const key = decodeRecords(batch)[0]?.key;
      const type =
        key && key.length >= 4 ? new DataView(key.buffer, key.byteOffset).getInt16(2) : -1;
      if (type === CONTROL_TYPE_ABORT) this.aborted.delete(header.producerId);
      return true;
    }
    return isTransactional(header.attributes) && this.aborted.has(header.producerId);
  }
}

export function decodeFetched(
  topic: string,
  partition: number,
  buf: Uint8Array,
  fetchOffset: bigint,
  abortedTransactions: readonly AbortedTransaction[] | null = null,
): DecodedFetch {
  const filter = abortedTransactions === null ? null : new AbortedFilter(abortedTransactions);
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
    if (filter?.skip(header, batch) === true || isControl(header.attributes)) continue;
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
