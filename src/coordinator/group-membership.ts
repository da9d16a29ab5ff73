import type { ClassicGroup } from "./classic-group.ts";
import { type ConsumerGroup, type ConsumerMember, newMember } from "./consumer-group.ts";
import {
  type ClassicMembershipRecord,
  type ConsumerMembershipRecord,
  fromBase64,
  fromStoredAssignment,
  MEMBERSHIP_FORMAT_VERSION,
  type StoredConsumerMember,
  toBase64,
  toStoredAssignment,
} from "./group-membership-record.ts";
import { GroupState } from "./group-state.ts";
import { MemberMetadata } from "./member-metadata.ts";

/**
 * Groups to and from their membership records (group-membership-record.ts): what a new
 * coordinator needs to carry on a group without a rebalance. Timers, parked requests and
 * pending members are not stored: the new coordinator arms every member's session timer afresh.
 */

/** A classic group's Stable generation, or null when it has none to store. */
export function classicMembershipRecord(group: ClassicGroup): ClassicMembershipRecord | null {
  if (!group.is(GroupState.Stable) || group.protocolName === null || group.leaderId === null) {
    return null;
  }
  return {
    version: MEMBERSHIP_FORMAT_VERSION,
    type: "classic",
    protocolType: group.protocolType ?? "",
    protocolName: group.protocolName,
    generationId: group.generationId,
    leaderId: group.leaderId,
    members: group.allMembers().map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      rebalanceTimeoutMs: m.rebalanceTimeoutMs,
      sessionTimeoutMs: m.sessionTimeoutMs,
      protocols: m.supportedProtocols.map((p): [string, string] => [p.name, toBase64(p.metadata)]),
      assignment: toBase64(m.assignment),
    })),
  };
}

/** Fills an Empty group with a stored generation; false when the record does not fit it. */
export function restoreClassicGroup(group: ClassicGroup, record: ClassicMembershipRecord): boolean {
  if (!group.is(GroupState.Empty) || group.size > 0) return false;
  if (!record.members.some((m) => m.memberId === record.leaderId)) return false;
  for (const stored of record.members) {
    const protocols = stored.protocols.map(([name, metadata]) => ({
      name,
      metadata: fromBase64(metadata),
    }));
    if (!protocols.some((p) => p.name === record.protocolName)) return false;
    const member = new MemberMetadata(
      stored.memberId,
      stored.groupInstanceId,
      stored.clientId,
      stored.clientHost,
      stored.rebalanceTimeoutMs,
      stored.sessionTimeoutMs,
      record.protocolType,
      protocols,
    );
    member.assignment = fromBase64(stored.assignment);
    group.add(member, null);
  }
  group.restoreStableGeneration(record.generationId, record.protocolName, record.leaderId);
  return true;
}

export function consumerMembershipRecord(group: ConsumerGroup): ConsumerMembershipRecord {
  const { target, partitionCounts, epochBumpPending } = group.computedState();
  return {
    version: MEMBERSHIP_FORMAT_VERSION,
    type: "consumer",
    groupEpoch: group.groupEpoch,
    targetEpoch: group.targetEpoch,
    epochBumpPending,
    assignorName: group.assignorName,
    partitionCounts: [...partitionCounts],
    target: [...target].map(([memberId, a]) => [memberId, toStoredAssignment(a)]),
    members: [...group.members.values()].map((m) => ({
      memberId: m.memberId,
      instanceId: m.instanceId,
      rackId: m.rackId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      subscribedTopicNames: [...m.subscribedTopicNames],
      subscribedTopicRegex: m.subscribedTopicRegex,
      serverAssignor: m.serverAssignor,
      rebalanceTimeoutMs: m.rebalanceTimeoutMs,
      memberEpoch: m.memberEpoch,
      previousMemberEpoch: m.previousMemberEpoch,
      state: m.state,
      assigned: toStoredAssignment(m.assigned),
      revoking: toStoredAssignment(m.revoking),
      classic:
        m.classic === null
          ? null
          : {
              sessionTimeoutMs: m.classic.sessionTimeoutMs,
              protocols: m.classic.protocols.map((p): [string, string] => [
                p.name,
                toBase64(p.metadata),
              ]),
            },
    })),
  };
}

export function restoreConsumerGroup(group: ConsumerGroup, record: ConsumerMembershipRecord): void {
  const target = new Map(record.target.map(([id, a]) => [id, fromStoredAssignment(a)]));
  const epochs = {
    groupEpoch: record.groupEpoch,
    targetEpoch: record.targetEpoch,
    assignorName: record.assignorName,
    bump: record.epochBumpPending,
  };
  group.restore(epochs, target, new Map(record.partitionCounts), record.members.map(toMember));
}

function toMember(stored: StoredConsumerMember): ConsumerMember {
  const member = newMember(stored.memberId, stored.clientId, stored.clientHost);
  member.instanceId = stored.instanceId;
  member.rackId = stored.rackId;
  member.subscribedTopicNames = stored.subscribedTopicNames;
  member.subscribedTopicRegex = stored.subscribedTopicRegex;
  member.serverAssignor = stored.serverAssignor;
  member.rebalanceTimeoutMs = stored.rebalanceTimeoutMs;
  member.memberEpoch = stored.memberEpoch;
  member.previousMemberEpoch = stored.previousMemberEpoch;
  member.state = stored.state;
  member.assigned = fromStoredAssignment(stored.assigned);
  member.revoking = fromStoredAssignment(stored.revoking);
  if (stored.classic !== null) {
    const protocols = stored.classic.protocols.map(([name, metadata]) => ({
      name,
      metadata: fromBase64(metadata),
    }));
    member.classic = { sessionTimeoutMs: stored.classic.sessionTimeoutMs, protocols };
  }
  return member;
}
