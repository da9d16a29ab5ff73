import { encodeFrame, readFrames } from "../storage/checksummed-frames.ts";
import { assert } from "../util/assert.ts";
import type { CommittedOffset } from "./offset-store.ts";

/**
 * Records of the local offset store's commit log and snapshot. On disk each record is a
 * checksummed frame (storage/checksummed-frames.ts) of UTF-8 JSON. JSON keeps the files
 * readable with `strings`; offsets are decimal strings because they are int64. After a crash
 * only the log's tail can be torn; `readRecords` reports where the valid prefix ends.
 */
export type OffsetLogRecord =
  | { readonly type: "commit"; readonly groupId: string; readonly offsets: readonly StoredOffset[] }
  | {
      readonly type: "deleteOffsets";
      readonly groupId: string;
      readonly partitions: readonly PartitionRef[];
    }
  | { readonly type: "deleteGroup"; readonly groupId: string }
  | { readonly type: "groupMetadata"; readonly groupId: string; readonly protocolType: string };

export interface PartitionRef {
  readonly topic: string;
  readonly partition: number;
}

export interface StoredOffset extends PartitionRef {
  readonly committed: CommittedOffset;
}

/** Largest payload accepted; a longer length field on disk means a torn or corrupt tail. */
export const RECORD_PAYLOAD_BYTES_MAX = 64 << 20;

type OffsetTuple = [
  topic: string,
  partition: number,
  offset: string,
  leaderEpoch: number,
  metadata: string | null,
  commitTimestampMs: number,
];

type Payload =
  | { c: string; o: OffsetTuple[] }
  | { d: string; p: [topic: string, partition: number][] }
  | { x: string }
  | { g: string; t: string };

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** The framed bytes of one record, or null when its payload exceeds RECORD_PAYLOAD_BYTES_MAX. */
export function encodeRecord(record: OffsetLogRecord): Uint8Array | null {
  const payload = encoder.encode(JSON.stringify(toPayload(record)));
  if (payload.length > RECORD_PAYLOAD_BYTES_MAX) return null;
  return encodeFrame(payload);
}

function toPayload(record: OffsetLogRecord): Payload {
  switch (record.type) {
    case "commit":
      return {
        c: record.groupId,
        o: record.offsets.map(
          ({ topic, partition, committed: c }): OffsetTuple => [
            topic,
            partition,
            c.offset.toString(),
            c.leaderEpoch,
            c.metadata,
            c.commitTimestampMs,
          ],
        ),
      };
    case "deleteOffsets":
      return { d: record.groupId, p: record.partitions.map((p) => [p.topic, p.partition]) };
    case "deleteGroup":
      return { x: record.groupId };
    case "groupMetadata":
      return { g: record.groupId, t: record.protocolType };
  }
}

/**
 * Decodes records from the start of `buf` until the end or the first record that is
 * incomplete or fails its CRC. `validBytes` is where that valid prefix ends.
 * A record whose CRC matches but whose JSON is not a record is not a torn write but a bug or
 * foreign data, and fails an assertion naming the file.
 */
export function readRecords(
  buf: Uint8Array,
  filePath: string,
): { records: OffsetLogRecord[]; validBytes: number } {
  const records: OffsetLogRecord[] = [];
  const validBytes = readFrames(buf, RECORD_PAYLOAD_BYTES_MAX, (payload, position) => {
    records.push(fromPayload(decoder.decode(payload), `${filePath} at byte ${position}`));
  });
  return { records, validBytes };
}

function fromPayload(json: string, where: string): OffsetLogRecord {
  const p = JSON.parse(json) as Partial<Record<"c" | "d" | "x" | "o" | "p" | "g" | "t", unknown>>;
  if (typeof p.c === "string" && Array.isArray(p.o)) {
    const offsets = (p.o as OffsetTuple[]).map((t) => fromTuple(t, where));
    return { type: "commit", groupId: p.c, offsets };
  }
  if (typeof p.d === "string" && Array.isArray(p.p)) {
    const tuples = p.p as [string, number][];
    const partitions = tuples.map(([topic, partition]) => ({ topic, partition }));
    return { type: "deleteOffsets", groupId: p.d, partitions };
  }
  if (typeof p.g === "string" && typeof p.t === "string") {
    return { type: "groupMetadata", groupId: p.g, protocolType: p.t };
  }
  assert(typeof p.x === "string", `offset log record of no known type: ${where}`);
  return { type: "deleteGroup", groupId: p.x };
}

function fromTuple(t: OffsetTuple, where: string): StoredOffset {
  assert(t.length === 6, `offset tuple has ${t.length} fields instead of 6: ${where}`);
  assert(typeof t[0] === "string", `offset tuple without a topic name: ${where}`);
  assert(Number.isInteger(t[1]), `offset tuple without a partition number: ${where}`);
  const [topic, partition, offset, leaderEpoch, metadata, commitTimestampMs] = t;
  const committed = { offset: BigInt(offset), leaderEpoch, metadata, commitTimestampMs };
  return { topic, partition, committed };
}
