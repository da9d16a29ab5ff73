import { ErrorCode } from "../protocol/errors.ts";
import type { ClassicGroup } from "./classic-group.ts";
import type { DescribedGroup } from "./group-operations.ts";
import { GroupState } from "./group-state.ts";
import { EMPTY_BYTES } from "./member-metadata.ts";

/** What DescribeGroups shows: metadata and assignments only once the group is Stable (Kafka). */
export function describeGroup(group: ClassicGroup): DescribedGroup {
  const stable = group.is(GroupState.Stable);
  const protocolName = stable ? group.protocolName : null;
  return {
    errorCode: ErrorCode.NONE,
    errorMessage: null,
    groupId: group.groupId,
    groupState: group.state,
    protocolType: group.protocolType ?? "",
    protocolData: protocolName ?? "",
    members: group.allMembers().map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      memberMetadata: protocolName === null ? EMPTY_BYTES : m.metadata(protocolName),
      memberAssignment: stable ? m.assignment : EMPTY_BYTES,
    })),
  };
}

/** An unknown group (or an error) as DescribeGroups reports it: Dead, with nothing in it. */
export function describedError(
  groupId: string,
  errorCode: number,
  errorMessage: string | null,
): DescribedGroup {
  return {
    errorCode,
    errorMessage,
    groupId,
    groupState: GroupState.Dead,
    protocolType: "",
    protocolData: "",
    members: [],
  };
}
