// DescribeGroups: v0-5
//
// Version notes:
// * v1: ThrottleTimeMs. v3: AuthorizedOperations when asked (no ACLs in Quill: every group
//   operation is allowed, so the answer is READ, DELETE and DESCRIBE). v4: GroupInstanceId.
// * v5: flexible. An unknown group is answered as a Dead group with no error (v6, Kafka 4,
//   would answer GROUP_ID_NOT_FOUND).
import { ApiKey } from "../protocol/generated/index.ts";
import { defineHandler } from "./handler.ts";

/** Kafka's AclOperation codes for groups: READ (3), DELETE (6), DESCRIBE (8), as a bit field. */
const GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8);
/** Kafka's "authorized operations were not requested" value. */
const OPERATIONS_NOT_REQUESTED = -2147483648;
/** Groups one request may describe; Kafka has no limit, but every list needs one. */
const GROUPS_MAX = 10_000;

export const describeGroupsHandler = defineHandler({
  apiKey: ApiKey.DescribeGroups,
  minVersion: 0,
  maxVersion: 5,
  handle(request, ctx) {
    const groupIds = request.groups.slice(0, GROUPS_MAX);
    const described = ctx.broker.groupCoordinator.describeGroups(groupIds, ctx.apiVersion);
    const authorizedOperations = request.includeAuthorizedOperations
      ? GROUP_OPERATIONS
      : OPERATIONS_NOT_REQUESTED;
    return {
      throttleTimeMs: 0,
      groups: described.map((g) => ({
        errorCode: g.errorCode,
        groupId: g.groupId,
        groupState: g.groupState,
        protocolType: g.protocolType,
        protocolData: g.protocolData,
        members: g.members,
        authorizedOperations,
      })),
    };
  },
});
