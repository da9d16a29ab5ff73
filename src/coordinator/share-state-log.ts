/**
 * Records of the internal compacted topic `__share_group_state`, where the share coordinator
 * keeps each share partition's delivery state (KIP-932; docs/share-groups.md, "Durability").
 * One record per write, keyed by the share partition; the newest record of a key is its whole
 * state (Quill writes snapshots only, so compaction keeps exactly one record per key), and a
 * null value (tombstone) forgets it.
 *
 *   key   : type int16 (0, a snapshot, as Kafka's ShareSnapshotKey) | group_id string
 *           | topic_id uuid (16 bytes) | partition int32
 *   value : version int16 (0) | state_epoch int32 | leader_epoch int32 | start_offset int64
 *           | write_timestamp_ms int64 | batch count int32
 *           | per batch: first_offset int64 | last_offset int64 | delivery_state int8
 *             | delivery_count int16
 *
 * The key's partition is Kafka's: abs(Java String.hashCode("group:topicId:partition")) % count,
 * with the topic id in Kafka's base64 form, so FindCoordinator (key type 2) names the same
 * broker for the same key as Kafka would.
 */
import { Reader } from "../protocol/reader.ts";
import { Writer } from "../protocol/writer.ts";
import { RecordState } from "../server/share-partition.ts";
import { partitionForKey } from "./transaction-log.ts";

export const SHARE_STATE_TOPIC = "__share_group_state";
const SNAPSHOT_KEY_TYPE = 0;
const VALUE_VERSION = 0;
/** State batches one value may hold (the in-flight window is at most 10,000 records). */
export const STATE_BATCHES_MAX = 10_000;

/** Offsets with one delivery state and count (WriteShareGroupState's StateBatch). */
export interface StateBatch {
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
  readonly deliveryState: number;
  readonly deliveryCount: number;
}

export interface ShareStateKey {
  readonly groupId: string;
  readonly topicId: Uint8Array;
  readonly partition: number;
}

export interface ShareStateValue {
  readonly stateEpoch: number;
  readonly leaderEpoch: number;
  /** -1 when the state exists but no start offset was chosen yet. */
  readonly startOffset: bigint;
  readonly writeTimestampMs: number;
  readonly stateBatches: readonly StateBatch[];
}

/** Offsets at or above the start offset already done: ACKNOWLEDGED or ARCHIVED. */
export function deliveryCompleteCount(v: ShareStateValue): number {
  let n = 0;
  for (const b of v.stateBatches) {
    const done = b.deliveryState === RecordState.ACKNOWLEDGED;
    if (!done && b.deliveryState !== RecordState.ARCHIVED) continue;
    const first = b.firstOffset < v.startOffset ? v.startOffset : b.firstOffset;
    if (b.lastOffset >= first) n += Number(b.lastOffset - first) + 1;
  }
  return n;
}

/** Kafka's base64url topic id, no padding (Uuid.toString). */
export function topicIdString(topicId: Uint8Array): string {
  return Buffer.from(topicId).toString("base64url");
}

/** The coordinator key (FindCoordinator key type 2): "group:topicId:partition". */
export function coordinatorKey(k: ShareStateKey): string {
  return `${k.groupId}:${topicIdString(k.topicId)}:${k.partition}`;
}

export function shareStatePartitionFor(k: ShareStateKey, partitionCount: number): number {
  return partitionForKey(coordinatorKey(k), partitionCount);
}

export function encodeShareStateKey(k: ShareStateKey): Uint8Array {
  const w = new Writer();
  w.int16(SNAPSHOT_KEY_TYPE);
  w.string(k.groupId);
  w.uuid(k.topicId);
  w.int32(k.partition);
  return w.toBytes();
}

/** The key, or null for a key type Quill does not write (skipped when loading). */
export function decodeShareStateKey(bytes: Uint8Array): ShareStateKey | null {
  const r = new Reader(bytes);
  if (r.int16() !== SNAPSHOT_KEY_TYPE) return null;
  return { groupId: r.string(), topicId: r.uuid(), partition: r.int32() };
}

export function encodeShareStateValue(v: ShareStateValue): Uint8Array {
  const w = new Writer();
  w.int16(VALUE_VERSION);
  w.int32(v.stateEpoch);
  w.int32(v.leaderEpoch);
  w.int64(v.startOffset);
  w.int64(BigInt(v.writeTimestampMs));
  w.int32(v.stateBatches.length);
  for (const b of v.stateBatches) {
    w.int64(b.firstOffset);
    w.int64(b.lastOffset);
    w.int8(b.deliveryState);
    w.int16(b.deliveryCount);
  }
  return w.toBytes();
}

export function decodeShareStateValue(bytes: Uint8Array): ShareStateValue {
  const r = new Reader(bytes);
  const version = r.int16();
  if (version !== VALUE_VERSION) throw new Error(`share state value version ${version}`);
  const stateEpoch = r.int32();
  const leaderEpoch = r.int32();
  const startOffset = r.int64();
  const writeTimestampMs = Number(r.int64());
  const count = r.int32();
  if (count < 0 || count > STATE_BATCHES_MAX) throw new Error(`${count} share state batches`);
  const stateBatches: StateBatch[] = [];
  for (let i = 0; i < count; i++) {
    stateBatches.push({
      firstOffset: r.int64(),
      lastOffset: r.int64(),
      deliveryState: r.int8(),
      deliveryCount: r.int16(),
    });
  }
  return { stateEpoch, leaderEpoch, startOffset, writeTimestampMs, stateBatches };
}
