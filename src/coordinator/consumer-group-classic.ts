import { ErrorCode } from "../protocol/errors.ts";
import type { ConsumerGroup, ConsumerMember } from "./consumer-group.ts";
import {
  CONSUMER_PROTOCOL_TYPE,
  encodeAssignment,
  subscriptionVersion,
} from "./consumer-protocol.ts";
import type { JoinGroupProtocol, JoinGroupResult, SyncGroupResult } from "./group-operations.ts";

/**
 * Classic-protocol members inside a KIP-848 consumer group (Kafka's "classic member in a
 * consumer group", the mixed state of an online upgrade or downgrade): their JoinGroup,
 * SyncGroup, Heartbeat and LeaveGroup are served by the consumer group's state machine. The
 * server-side assignor decides their partitions; JoinGroup reconciles them towards their
 * target with the partitions their subscription says they own; SyncGroup hands them their
 * assignment as a ConsumerProtocolAssignment; Heartbeat answers REBALANCE_IN_PROGRESS when
 * their assignment must change, so that they rejoin. Here: the checks and answers that need
 * no timers; ConsumerGroupManager runs the rest.
 */

export interface ClassicJoinRequest {
  readonly groupId: string;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly sessionTimeoutMs: number;
  readonly rebalanceTimeoutMs: number;
  readonly protocolType: string;
  readonly protocols: readonly JoinGroupProtocol[];
  readonly clientId: string;
  readonly clientHost: string;
  readonly apiVersion: number;
}

export interface ClassicSyncRequest {
  readonly groupId: string;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly generationId: number;
  readonly protocolType: string | null;
  readonly protocolName: string | null;
}

export interface ClassicHeartbeatRequest {
  readonly groupId: string;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly generationId: number;
}

/** JoinGroup v4+ clients understand MEMBER_ID_REQUIRED (KIP-394). */
const MEMBER_ID_REQUIRED_MIN_VERSION = 4;

/** Kafka's requiresKnownMemberId: a new dynamic member first gets its id and rejoins with it. */
export function requiresKnownMemberId(req: ClassicJoinRequest): boolean {
  return (
    req.memberId === "" &&
    req.groupInstanceId === null &&
    req.apiVersion >= MEMBER_ID_REQUIRED_MIN_VERSION
  );
}

/**
 * Kafka's validateConsumerGroupMember plus throwIfMemberDoesNotUseClassicProtocol: the member
 * the request names (by instance id when it has one), else the error code. A member that
 * heartbeats with ConsumerGroupHeartbeat is UNKNOWN_MEMBER_ID to the classic APIs.
 */
export function classicMember(
  group: ConsumerGroup,
  memberId: string,
  instanceId: string | null,
): ConsumerMember | number {
  let member: ConsumerMember | undefined;
  if (instanceId === null) {
    member = group.members.get(memberId);
  } else {
    member = group.staticMember(instanceId);
    if (member !== undefined && member.memberId !== memberId) return ErrorCode.FENCED_INSTANCE_ID;
  }
  if (member === undefined || member.classic === null) return ErrorCode.UNKNOWN_MEMBER_ID;
  return member;
}

/** The protocol a classic member is told it uses: its first, as Kafka answers. */
export function classicProtocolName(member: ConsumerMember): string {
  return member.classic!.protocols[0]!.name;
}

/** The JoinGroup answer: the member epoch as generation, no leader (the broker assigns). */
export function classicJoinAnswer(member: ConsumerMember): JoinGroupResult {
  return {
    errorCode: ErrorCode.NONE,
    generationId: member.memberEpoch,
    protocolType: CONSUMER_PROTOCOL_TYPE,
    protocolName: classicProtocolName(member),
    leader: "",
    skipAssignment: false,
    memberId: member.memberId,
    members: [],
  };
}

/**
 * Kafka's classicGroupSyncToConsumerGroup checks after the member's: the generation is its
 * epoch (ILLEGAL_GENERATION), the protocol what JoinGroup said (INCONSISTENT_GROUP_PROTOCOL),
 * and no newer group epoch waits for it (REBALANCE_IN_PROGRESS, unless it is still revoking:
 * then it first takes the partitions it keeps).
 */
export function syncCheck(
  group: ConsumerGroup,
  member: ConsumerMember,
  req: ClassicSyncRequest,
): number | null {
  if (req.generationId !== member.memberEpoch) return ErrorCode.ILLEGAL_GENERATION;
  if (req.protocolType !== null && req.protocolType !== CONSUMER_PROTOCOL_TYPE) {
    return ErrorCode.INCONSISTENT_GROUP_PROTOCOL;
  }
  if (req.protocolName !== null && req.protocolName !== classicProtocolName(member)) {
    return ErrorCode.INCONSISTENT_GROUP_PROTOCOL;
  }
  if (group.latestEpoch > member.memberEpoch && member.state !== "unrevoked_partitions") {
    return ErrorCode.REBALANCE_IN_PROGRESS;
  }
  return null;
}

/** The SyncGroup answer: the member's partitions in its subscription's protocol version. */
export function classicSyncAnswer(member: ConsumerMember): SyncGroupResult {
  const protocol = member.classic!.protocols[0]!;
  return {
    errorCode: ErrorCode.NONE,
    protocolType: CONSUMER_PROTOCOL_TYPE,
    protocolName: protocol.name,
    assignment: encodeAssignment(member.assigned, subscriptionVersion(protocol.metadata)),
  };
}

/**
 * Whether a classic member must rejoin (Kafka's classicGroupHeartbeatToConsumerGroup): the
 * group epoch moved past it, it must revoke partitions, or partitions it waited for are free.
 */
export function mustRejoin(group: ConsumerGroup, member: ConsumerMember): boolean {
  return (
    member.memberEpoch < group.latestEpoch ||
    member.state === "unrevoked_partitions" ||
    (member.state === "unreleased_partitions" && !group.waitingOnUnreleased(member))
  );
}
