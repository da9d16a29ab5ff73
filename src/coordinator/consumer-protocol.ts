import {
  decodeConsumerProtocolAssignment,
  decodeConsumerProtocolSubscription,
  encodeConsumerProtocolAssignment,
} from "../protocol/generated/index.ts";
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

/** Topic to partitions of the generated codecs' `[{topic, partitions}]`, repeats merged. */
function partitionsByTopic(
  list: readonly { topic: string; partitions: number[] }[],
): Map<string, Set<number>> {
  const out = new Map<string, Set<number>>();
  for (const { topic, partitions } of list) {
    out.set(topic, new Set([...(out.get(topic) ?? []), ...partitions]));
  }
  return out;
}

/**
 * Decodes a whole ConsumerProtocolSubscription with the generated codec (later versions than
 * 3 only append fields, so they are read as 3). Null when the bytes are not one.
 */
export function decodeSubscription(metadata: Uint8Array): ConsumerSubscription | null {
  try {
    const r = new Reader(metadata);
    const version = r.int16();
    if (version < 0) return null;
    const decoded = decodeConsumerProtocolSubscription(
      r,
      Math.min(version, CONSUMER_PROTOCOL_VERSION_MAX),
    );
    const owned = partitionsByTopic(decoded.ownedPartitions);
    return { version, topics: decoded.topics, owned, rackId: decoded.rackId };
  } catch {
    return null;
  }
}

/** Decodes a ConsumerProtocolAssignment's partitions with the generated codec. */
export function decodeAssignment(bytes: Uint8Array): Map<string, Set<number>> | null {
  if (bytes.length === 0) return new Map(); // members the leader left out get nothing
  try {
    const r = new Reader(bytes);
    const version = r.int16();
    if (version < 0) return null;
    const v = Math.min(version, CONSUMER_PROTOCOL_VERSION_MAX);
    return partitionsByTopic(decodeConsumerProtocolAssignment(r, v).assignedPartitions);
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
  const v = Math.min(Math.max(version, 0), CONSUMER_PROTOCOL_VERSION_MAX);
  const w = new Writer();
  w.int16(v);
  const assignedPartitions = [...assignment]
    .filter(([, ps]) => ps.size > 0)
    .map(([topic, ps]) => ({ topic, partitions: [...ps].sort((a, b) => a - b) }));
  encodeConsumerProtocolAssignment(w, v, { assignedPartitions, userData: null });
  return w.toBytes();
}

/** The version a subscription was written in (0 when unreadable). */
export function subscriptionVersion(metadata: Uint8Array): number {
  return decodeSubscription(metadata)?.version ?? 0;
}
