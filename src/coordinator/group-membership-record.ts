import { z } from "zod";

/**
 * A group's membership as the coordinator stores it beside the group's committed offsets, so
 * that the broker coordinating the group next (after a failover or a restart) takes it over
 * with its members, generation or epochs and assignments, instead of making every member
 * rejoin. Kafka keeps the same facts in `__consumer_offsets`: a classic group's GroupMetadata
 * value, a KIP-848 group's ConsumerGroup* records. Quill stores one UTF-8 JSON document per
 * group (version 1), replaced whole on every change:
 *
 *   {"version":1,"type":"classic","protocolType":"consumer","protocolName":"range",
 *    "generationId":3,"leaderId":"m-1","members":[{"memberId":"m-1","groupInstanceId":null,
 *    "clientId":"c","clientHost":"/127.0.0.1","rebalanceTimeoutMs":60000,
 *    "sessionTimeoutMs":30000,"protocols":[["range","<base64>"]],"assignment":"<base64>"}]}
 *
 *   {"version":1,"type":"consumer","groupEpoch":4,"targetEpoch":4,"epochBumpPending":false,
 *    "assignorName":"uniform",
 *    "partitionCounts":[["t",6]],"target":[["m-1",[["t",[0,1,2]]]]],
 *    "members":[{"memberId":"m-1","instanceId":null,"rackId":null,"clientId":"c",
 *    "clientHost":"/127.0.0.1","subscribedTopicNames":["t"],"serverAssignor":null,
 *    "rebalanceTimeoutMs":300000,"memberEpoch":4,"previousMemberEpoch":3,"state":"stable",
 *    "assigned":[["t",[0,1,2]]],"revoking":[],"classic":null}]}
 *
 * A classic-protocol member of a consumer group (an online upgrade or downgrade in progress)
 * has `"classic":{"sessionTimeoutMs":45000,"protocols":[["range","<base64>"]]}`.
 *
 * Only Stable classic generations are stored (Kafka writes the group at the end of SyncGroup,
 * too); a KIP-848 group is stored after every heartbeat that changed it. A document that does
 * not parse is ignored: the group's members then rejoin, as they did before membership was
 * stored.
 */

const FORMAT_VERSION = 1;

/** Partitions by topic, as pairs so the JSON keeps no object keys from client input. */
const storedAssignment = z.array(z.tuple([z.string(), z.array(z.number().int().nonnegative())]));

const classicMember = z.object({
  memberId: z.string().min(1),
  groupInstanceId: z.string().nullable(),
  clientId: z.string(),
  clientHost: z.string(),
  rebalanceTimeoutMs: z.number().int().nonnegative(),
  sessionTimeoutMs: z.number().int().nonnegative(),
  protocols: z.array(z.tuple([z.string(), z.string()])).min(1),
  assignment: z.string(),
});

const classicRecord = z.object({
  version: z.literal(FORMAT_VERSION),
  type: z.literal("classic"),
  protocolType: z.string(),
  protocolName: z.string(),
  generationId: z.number().int().positive(),
  leaderId: z.string(),
  members: z.array(classicMember).min(1),
});

const consumerMember = z.object({
  memberId: z.string().min(1),
  instanceId: z.string().nullable(),
  rackId: z.string().nullable(),
  clientId: z.string(),
  clientHost: z.string(),
  subscribedTopicNames: z.array(z.string()),
  /** Absent in records written before regex subscriptions. */
  subscribedTopicRegex: z.string().nullable().default(null),
  serverAssignor: z.string().nullable(),
  rebalanceTimeoutMs: z.number().int().nonnegative(),
  memberEpoch: z.number().int(),
  previousMemberEpoch: z.number().int(),
  state: z.enum(["stable", "unrevoked_partitions", "unreleased_partitions"]),
  assigned: storedAssignment,
  revoking: storedAssignment,
  /** A classic-protocol member's JoinGroup session timeout and protocols (absent: none). */
  classic: z
    .object({
      sessionTimeoutMs: z.number().int().nonnegative(),
      protocols: z.array(z.tuple([z.string(), z.string()])).min(1),
    })
    .nullable()
    .default(null),
});

const consumerRecord = z.object({
  version: z.literal(FORMAT_VERSION),
  type: z.literal("consumer"),
  groupEpoch: z.number().int().nonnegative(),
  targetEpoch: z.number().int().nonnegative(),
  /** A member left or changed since the last target: the next heartbeat bumps the epoch. */
  epochBumpPending: z.boolean(),
  assignorName: z.string(),
  partitionCounts: z.array(z.tuple([z.string(), z.number().int().nonnegative()])),
  target: z.array(z.tuple([z.string(), storedAssignment])),
  members: z.array(consumerMember),
});

const membershipRecord = z.discriminatedUnion("type", [classicRecord, consumerRecord]);

export type StoredAssignment = z.infer<typeof storedAssignment>;
export type ClassicMembershipRecord = z.infer<typeof classicRecord>;
export type StoredClassicMember = z.infer<typeof classicMember>;
export type ConsumerMembershipRecord = z.infer<typeof consumerRecord>;
export type StoredConsumerMember = z.infer<typeof consumerMember>;
export type MembershipRecord = z.infer<typeof membershipRecord>;

export const MEMBERSHIP_FORMAT_VERSION = FORMAT_VERSION;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

export function encodeMembership(record: MembershipRecord): Uint8Array {
  return encoder.encode(JSON.stringify(record));
}

/** The stored document, or null when it is not a membership record this version knows. */
export function decodeMembership(bytes: Uint8Array): MembershipRecord | null {
  try {
    const parsed = membershipRecord.safeParse(JSON.parse(decoder.decode(bytes)));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

export function toStoredAssignment(
  assignment: ReadonlyMap<string, ReadonlySet<number>>,
): StoredAssignment {
  return [...assignment].map(([topic, partitions]) => [topic, [...partitions]]);
}

export function fromStoredAssignment(stored: StoredAssignment): Map<string, Set<number>> {
  return new Map(stored.map(([topic, partitions]) => [topic, new Set(partitions)]));
}

export function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

export function fromBase64(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, "base64"));
}
