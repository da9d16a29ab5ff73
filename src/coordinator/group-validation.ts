import { ErrorCode } from "../protocol/errors.ts";
import type { ClassicGroup } from "./classic-group.ts";
import type {
  JoinGroupProtocol,
  OffsetCommitRequest,
  SyncGroupRequest,
} from "./group-operations.ts";
import { GroupState } from "./group-state.ts";

/**
 * The request checks Kafka's GroupCoordinator makes before acting, as pure functions of the
 * group and the request: null when the request may proceed, else the Kafka error code.
 */

/** If an instance id is given it must map to this member id; else the member id must exist. */
export function validateCurrentMember(
  group: ClassicGroup,
  memberId: string,
  groupInstanceId: string | null,
): number | null {
  if (groupInstanceId !== null) {
    const currentMemberId = group.staticMemberId(groupInstanceId);
    if (currentMemberId === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
    if (currentMemberId !== memberId) return ErrorCode.FENCED_INSTANCE_ID;
    return null;
  }
  return group.has(memberId) ? null : ErrorCode.UNKNOWN_MEMBER_ID;
}

export function validateSync(group: ClassicGroup, req: SyncGroupRequest): number | null {
  if (group.is(GroupState.Dead)) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
  const errorCode = validateCurrentMember(group, req.memberId, req.groupInstanceId);
  if (errorCode !== null) return errorCode;
  if (req.generationId !== group.generationId) return ErrorCode.ILLEGAL_GENERATION;
  if (req.protocolType !== null && req.protocolType !== group.protocolType) {
    return ErrorCode.INCONSISTENT_GROUP_PROTOCOL;
  }
  if (req.protocolName !== null && req.protocolName !== group.protocolName) {
    return ErrorCode.INCONSISTENT_GROUP_PROTOCOL;
  }
  return null;
}

/** Kafka's validateOffsetCommit (non-transactional). */
export function validateOffsetCommit(group: ClassicGroup, req: OffsetCommitRequest): number | null {
  if (group.is(GroupState.Dead)) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
  // Generation -1 comes from the admin client or a consumer without group management; it may
  // commit only while no member owns the partitions.
  if (req.generationId < 0 && group.is(GroupState.Empty)) return null;
  if (req.generationId >= 0 || req.memberId !== "" || req.groupInstanceId !== null) {
    const errorCode = validateCurrentMember(group, req.memberId, req.groupInstanceId);
    if (errorCode !== null) return errorCode;
    return req.generationId === group.generationId ? null : ErrorCode.ILLEGAL_GENERATION;
  }
  return group.is(GroupState.Empty) ? null : ErrorCode.UNKNOWN_MEMBER_ID;
}

/**
 * Keeps the first of each protocol name, as Kafka's keyed JoinGroup protocol collection does,
 * with the metadata copied: the decoded bytes are views into the request's network buffer,
 * which a member kept for the group's lifetime would otherwise pin whole.
 */
export function uniqueProtocols(protocols: readonly JoinGroupProtocol[]): JoinGroupProtocol[] {
  const seen = new Set<string>();
  return protocols
    .filter((p) => !seen.has(p.name) && seen.add(p.name))
    .map((p) => ({ name: p.name, metadata: p.metadata.slice() }));
}
