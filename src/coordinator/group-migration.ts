import type { ConsumerMigrationPolicy } from "../config/broker-config.ts";
import { assert } from "../util/assert.ts";
import type { ClassicGroup } from "./classic-group.ts";
import { type ConsumerGroup, type ConsumerMember, newMember } from "./consumer-group.ts";
import {
  CONSUMER_PROTOCOL_TYPE,
  decodeAssignment,
  decodeSubscription,
  encodeAssignment,
  subscriptionVersion,
} from "./consumer-protocol.ts";
import { upgradeEnabled } from "./group-config.ts";
import { MemberMetadata } from "./member-metadata.ts";

/**
 * Online migration of a running group between the classic protocol and KIP-848 (Kafka's
 * `group.consumer.migration.policy`): a classic group whose members use the consumer protocol
 * becomes a consumer group when a ConsumerGroupHeartbeat joins it, and a consumer group whose
 * last KIP-848 member leaves becomes a classic group of the classic members left. Here: the
 * conversions of the members; GroupCoordinator moves the groups.
 */

/** Why a classic group may not become a consumer group now, as Kafka words it; else null. */
export function upgradeRefusal(
  group: ClassicGroup,
  policy: ConsumerMigrationPolicy,
  maxSize: number,
): string | null {
  const cannot = (why: string) =>
    `Cannot upgrade classic group ${group.groupId} to consumer group because ${why}.`;
  if (!upgradeEnabled(policy)) return cannot("online upgrade is disabled");
  if (!group.isConsumerGroup) {
    return cannot("the group does not use the consumer embedded protocol");
  }
  if (group.size > maxSize) {
    return cannot("the group size exceeds the consumer group maximum size");
  }
  return null;
}

/**
 * The classic group's members as consumer group members (Kafka's
 * ConsumerGroup.fromClassicGroup): each at the generation as its epoch, Stable, owning the
 * partitions of its last assignment, subscribed to its subscription's topics. Members of a
 * rebalance in progress keep what they had, and rejoin. Null when some member's embedded
 * consumer protocol does not decode.
 */
export function consumerMembersOf(group: ClassicGroup): ConsumerMember[] | null {
  const out: ConsumerMember[] = [];
  for (const m of group.allMembers()) {
    const protocolName = group.protocolName ?? m.supportedProtocols[0]!.name;
    const subscription = decodeSubscription(m.metadata(protocolName));
    const assigned = decodeAssignment(m.assignment);
    if (subscription === null || assigned === null) return null;
    const member = newMember(m.memberId, m.clientId, m.clientHost);
    member.instanceId = m.groupInstanceId;
    member.rackId = subscription.rackId;
    member.subscribedTopicNames = [...new Set(subscription.topics)].sort();
    member.rebalanceTimeoutMs = m.rebalanceTimeoutMs;
    member.memberEpoch = group.generationId;
    member.previousMemberEpoch = group.generationId;
    member.assigned = assigned;
    member.classic = { sessionTimeoutMs: m.sessionTimeoutMs, protocols: m.supportedProtocols };
    out.push(member);
  }
  return out;
}

export const MALFORMED_UPGRADE = (groupId: string) =>
  `Cannot upgrade classic group ${groupId} to consumer group because the embedded consumer ` +
  `protocol is malformed.`;

/**
 * Fills an Empty classic group with a consumer group's classic members but the one leaving
 * (Kafka's ClassicGroup.fromConsumerGroup): Stable at the group epoch as generation, the first
 * member leading, each member's target assignment as its classic assignment. The caller then
 * starts a rebalance, so that the members' own assignor takes over.
 */
export function fillFromConsumerGroup(
  group: ClassicGroup,
  consumer: ConsumerGroup,
  leavingMemberId: string | null,
): void {
  for (const m of consumer.members.values()) {
    if (m.memberId === leavingMemberId) continue;
    const classic = m.classic;
    assert(classic !== null, `${m.memberId} of ${group.groupId} is not a classic member`);
    const member = new MemberMetadata(
      m.memberId,
      m.instanceId,
      m.clientId,
      m.clientHost,
      m.rebalanceTimeoutMs,
      classic.sessionTimeoutMs,
      CONSUMER_PROTOCOL_TYPE,
      classic.protocols,
    );
    group.add(member, null);
  }
  const protocolName = group.selectProtocol();
  for (const m of group.allMembers()) {
    const version = subscriptionVersion(m.metadata(protocolName));
    m.assignment = encodeAssignment(consumer.targetOf(m.memberId), version);
  }
  const leaderId = group.allMembers()[0]!.memberId;
  group.restoreStableGeneration(Math.max(consumer.groupEpoch, 1), protocolName, leaderId);
}
