/**
 * Shared test helpers for the storage tests: temporary log dirs on the real filesystem and
 * record batches built the way a producer builds them.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import type { FileRange } from "../../src/protocol/records.ts";
import type { UnifiedLog } from "../../src/storage/unified-log.ts";

export function tempDir(prefix = "quill-storage-"): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function removeDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

/** A batch of `count` records whose values are `value-<i>` padded to `valueBytes`. */
export function batch(count: number, opts: { valueBytes?: number; timestampMs?: number } = {}) {
  const records = Array.from({ length: count }, (_, i) => ({
    key: null,
    value: new TextEncoder().encode(`value-${i}`.padEnd(opts.valueBytes ?? 10, ".")),
  }));
  return buildRecordBatch(records, { timestampMs: opts.timestampMs ?? Date.now() });
}

/** Copies the bytes of FileRanges out of their fds (what sendfile would send). */
export function readRanges(ranges: readonly FileRange[]): Uint8Array {
  const total = ranges.reduce((n, r) => n + r.sizeBytes, 0);
  const out = new Uint8Array(total);
  let at = 0;
  for (const r of ranges) {
    const n = fs.readSync(r.fd, out, at, r.sizeBytes, r.position);
    if (n !== r.sizeBytes) throw new Error(`short read ${n} of ${r.sizeBytes}`);
    at += n;
  }
  return out;
}

/** Reads from `offset` and returns the bytes, releasing the ranges. */
export function readBytes(
  log: UnifiedLog,
  offset: bigint,
  maxBytes: number,
  maxOffset = log.logEndOffset,
  minOneMessage = true,
): Uint8Array {
  const { ranges } = log.read(offset, maxBytes, { maxOffset, minOneMessage });
  try {
    return readRanges(ranges);
  } finally {
    for (const r of ranges) r.release();
  }
}

/**
 * A replica's first fetch: closes `leader` and appends all it held, as a follower, to the new log
 * that `open` opens (its directory under `dir`, created here).
 */
export function replicateInto(leader: UnifiedLog, dir: string, open: () => UnifiedLog): UnifiedLog {
  const replicated = readBytes(leader, 0n, 1 << 20);
  leader.close();
  fs.mkdirSync(dir);
  const follower = open();
  follower.appendAsFollower(replicated.slice());
  return follower;
}

/** Base offsets and last offsets of the batches in `bytes`. */
export function batchOffsets(bytes: Uint8Array): { base: bigint; last: bigint }[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: { base: bigint; last: bigint }[] = [];
  let at = 0;
  while (at < bytes.length) {
    const base = view.getBigInt64(at);
    out.push({ base, last: base + BigInt(view.getInt32(at + 23)) });
    at += 12 + view.getInt32(at + 8);
  }
  return out;
}
