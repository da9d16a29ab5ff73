/**
 * Kafka's RangeAssignor (the classic consumer's default): per topic, the members subscribed to
 * it in member id order each take a contiguous range of partitions; the first `count % members`
 * take one more. The consumer protocol's subscription and assignment bytes are encoded here.
 */
import {
  decodeConsumerProtocolAssignment,
  decodeConsumerProtocolSubscription,
  encodeConsumerProtocolAssignment,
  encodeConsumerProtocolSubscription,
} from "../protocol/generated/index.ts";
import { Reader } from "../protocol/reader.ts";
import { Writer } from "../protocol/writer.ts";

export const RANGE_ASSIGNOR = "range";

/** Topic name to its partition indexes. */
export type Assignment = Map<string, number[]>;

/** Version 0 of both messages: eager range assignment needs no owned partitions. */
const PROTOCOL_VERSION = 0;

export function encodeSubscription(topics: readonly string[]): Uint8Array {
  const w = new Writer();
  w.int16(PROTOCOL_VERSION);
  encodeConsumerProtocolSubscription(w, PROTOCOL_VERSION, { topics: [...topics], userData: null });
  return w.toBytes();
}

/** A member's subscribed topics; [] when the bytes are not a consumer subscription. */
export function decodeSubscription(bytes: Uint8Array): string[] {
  try {
    const r = new Reader(bytes);
    const version = r.int16();
    return decodeConsumerProtocolSubscription(r, Math.min(version, 3)).topics;
  } catch {
    return [];
  }
}

export function encodeAssignment(assignment: Assignment): Uint8Array {
  const w = new Writer();
  w.int16(PROTOCOL_VERSION);
  encodeConsumerProtocolAssignment(w, PROTOCOL_VERSION, {
    assignedPartitions: [...assignment].map(([topic, partitions]) => ({ topic, partitions })),
    userData: null,
  });
  return w.toBytes();
}

export function decodeAssignment(bytes: Uint8Array): Assignment {
  const out: Assignment = new Map();
  if (bytes.length < 2) return out;
  const r = new Reader(bytes);
  const version = r.int16();
  for (const tp of decodeConsumerProtocolAssignment(r, Math.min(version, 3)).assignedPartitions) {
    out.set(tp.topic, [...(out.get(tp.topic) ?? []), ...tp.partitions]);
  }
  return out;
}

/**
 * Assigns each topic's partitions (`partitionCounts`; a topic missing there is skipped) to the
 * members subscribed to it. Every member gets an entry, possibly empty.
 */
export function rangeAssign(
  subscriptions: ReadonlyMap<string, readonly string[]>,
  partitionCounts: ReadonlyMap<string, number>,
): Map<string, Assignment> {
  const out = new Map<string, Assignment>();
  for (const member of subscriptions.keys()) out.set(member, new Map());
  const topics = new Set([...subscriptions.values()].flat());
  for (const topic of [...topics].sort()) {
    const count = partitionCounts.get(topic);
    if (count === undefined) continue;
    const members = [...subscriptions]
      .filter(([, t]) => t.includes(topic))
      .map(([m]) => m)
      .sort();
    const each = Math.floor(count / members.length);
    const extra = count % members.length;
    members.forEach((member, i) => {
      const start = i * each + Math.min(i, extra);
      const length = each + (i < extra ? 1 : 0);
      if (length === 0) return;
      const partitions = Array.from({ length }, (_, k) => start + k);
      out.get(member)!.set(topic, partitions);
    });
  }
  return out;
}
