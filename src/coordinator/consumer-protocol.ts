import { Reader } from "../protocol/reader.ts";
import { Writer } from "../protocol/writer.ts";

/** The protocol type of Kafka consumers; only its metadata is decoded by the coordinator. */
export const CONSUMER_PROTOCOL_TYPE = "consumer";

/**
 * The topics a consumer subscribes to, read from its JoinGroup metadata: a
 * ConsumerProtocolSubscription (version int16, then `Topics: [string]`; later versions only
 * append fields, and the message is never flexible). The coordinator needs nothing else from
 * it, for OffsetDelete's GROUP_SUBSCRIBED_TO_TOPIC check.
 *
 * Returns null when the bytes are not a subscription (a client with a custom protocol type
 * field or a broken one), so the caller can treat the member as possibly subscribed to anything.
 */
export function subscribedTopics(metadata: Uint8Array): string[] | null {
  try {
    const r = new Reader(metadata);
    const version = r.int16();
    if (version < 0) return null;
    return r.array(false, version, (reader) => reader.string());
  } catch {
    return null;
  }
}

/** A classic consumer's JoinGroup metadata, as a consumer group with classic members needs it. */
export interface ConsumerSubscription {
  /** The message's version: the SyncGroup assignment is written back in it. */
  readonly version: number;
  readonly topics: readonly string[];
  /** What the member owns as it joins (v1+; eager members have revoked everything by then). */
  readonly owned: Map<string, Set<number>>;
  readonly rackId: string | null;
}

/** The newest ConsumerProtocolSubscription and ConsumerProtocolAssignment version. */
const CONSUMER_PROTOCOL_VERSION_MAX = 3;

/**
 * Decodes a whole ConsumerProtocolSubscription: v0 `Topics, UserData`; v1 adds
 * `OwnedPartitions: [Topic, [Partition]]`; v2 `GenerationId`; v3 `RackId`. Later versions
 * only append fields. Null when the bytes are not one.
 */
export function decodeSubscription(metadata: Uint8Array): ConsumerSubscription | null {
  try {
    const r = new Reader(metadata);
    const version = r.int16();
    if (version < 0) return null;
    const topics = r.array(false, version, (reader) => reader.string());
    r.nullableBytes();
    const owned = new Map<string, Set<number>>();
    if (version >= 1) {
      r.array(false, version, (reader) => {
        const topic = reader.string();
        const partitions = reader.array(false, version, (p) => p.int32());
        owned.set(topic, new Set([...(owned.get(topic) ?? []), ...partitions]));
      });
    }
    if (version >= 2) r.int32();
    const rackId = version >= 3 ? r.nullableString() : null;
    return { version, topics, owned, rackId };
  } catch {
    return null;
  }
}

/** Decodes a ConsumerProtocolAssignment's partitions (every version starts with them). */
export function decodeAssignment(bytes: Uint8Array): Map<string, Set<number>> | null {
  const out = new Map<string, Set<number>>();
  if (bytes.length === 0) return out; // members the leader left out get nothing
  try {
    const r = new Reader(bytes);
    const version = r.int16();
    if (version < 0) return null;
    r.array(false, version, (reader) => {
      const topic = reader.string();
      const partitions = reader.array(false, version, (p) => p.int32());
      out.set(topic, new Set([...(out.get(topic) ?? []), ...partitions]));
    });
    return out;
  } catch {
    return null;
  }
}

/**
 * Encodes a ConsumerProtocolAssignment (`AssignedPartitions`, null `UserData`) in the version of
 * the member's subscription (at most 3), as Kafka's coordinator answers a classic member of a
 * consumer group in SyncGroup.
 */
export function encodeAssignment(
  assignment: ReadonlyMap<string, ReadonlySet<number>>,
  version: number,
): Uint8Array {
  const w = new Writer();
  w.int16(Math.min(Math.max(version, 0), CONSUMER_PROTOCOL_VERSION_MAX));
  const topics = [...assignment].filter(([, ps]) => ps.size > 0);
  w.arrayLength(topics.length, false);
  for (const [topic, partitions] of topics) {
    w.string(topic);
    w.arrayLength(partitions.size, false);
    for (const p of [...partitions].sort((a, b) => a - b)) w.int32(p);
  }
  w.nullableBytes(null);
  return w.toBytes();
}

/** The version a subscription was written in (0 when unreadable). */
export function subscriptionVersion(metadata: Uint8Array): number {
  return decodeSubscription(metadata)?.version ?? 0;
}
