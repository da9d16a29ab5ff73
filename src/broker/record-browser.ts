import * as fs from "node:fs";
import {
  decodeRecords,
  isControl,
  iterateBatches,
  readBatchHeader,
} from "../protocol/record-batch.ts";
import type { Partition } from "../server/partition.ts";

/** Most records one page shows, and most bytes it reads from the log for them. */
export const BROWSE_RECORDS_MAX = 100;
const BROWSE_BYTES_MAX = 1024 * 1024;

export interface BrowsedRecord {
  readonly offset: bigint;
  readonly timestampMs: bigint;
  readonly key: Uint8Array | null;
  readonly value: Uint8Array | null;
  readonly headers: readonly { key: string; value: Uint8Array | null }[];
}

/**
 * Up to `count` records of a local replica from `offset` (clamped into the log; below the high
 * watermark only, as a consumer sees them), for the console's record browser. Reads at most
 * 1 MiB of whole batches from the page cache and decodes them (decompressing if needed);
 * control batches (transaction markers) are skipped. A page view, not a request path.
 */
export function browseRecords(p: Partition, offset: bigint, count: number): BrowsedRecord[] {
  const log = p.log;
  const limit = Math.min(Math.max(count, 1), BROWSE_RECORDS_MAX);
  let from = offset < log.logStartOffset ? log.logStartOffset : offset;
  const records: BrowsedRecord[] = [];
  while (records.length < limit && from < log.highWatermark) {
    const read = log.read(from as never, BROWSE_BYTES_MAX, {
      maxOffset: log.highWatermark,
      minOneMessage: true,
    });
    const range = read.ranges[0];
    if (range === undefined) break;
    const bytes = new Uint8Array(range.sizeBytes);
    try {
      fs.readSync(range.fd, bytes, 0, range.sizeBytes, range.position);
    } finally {
      range.release();
    }
    let next = from;
    for (const { position, sizeBytes } of iterateBatches(bytes)) {
      const batch = bytes.subarray(position, position + sizeBytes);
      const header = readBatchHeader(batch);
      next = header.baseOffset + BigInt(header.lastOffsetDelta) + 1n;
      if (isControl(header.attributes)) continue;
      for (const r of decodeRecords(batch)) {
        const at = header.baseOffset + BigInt(r.offsetDelta);
        if (at < from || records.length >= limit) continue;
        const timestampMs = header.baseTimestamp + r.timestampDelta;
        const headers = r.headers.map((h) => ({ key: h.key, value: h.value }));
        records.push({ offset: at, timestampMs, key: r.key, value: r.value, headers });
      }
    }
    if (next <= from) break;
    from = next;
  }
  return records;
}

/** The first offset at or after `timestampMs`, or the high watermark when there is none. */
export function offsetForTime(p: Partition, timestampMs: bigint): bigint {
  return p.log.offsetForTimestamp(timestampMs)?.offset ?? p.log.highWatermark;
}
