// DescribeGroups: v0-5
//
// Version notes:
// * v1: ThrottleTimeMs. v3: AuthorizedOperations when asked, for the groups answered without an
//   error, as Kafka 3.9 does (security/authorized-operations.ts: with no authorizer, READ,
//   DELETE and DESCRIBE). v4: GroupInstanceId.
// * v5: flexible. An unknown group is answered as a Dead group with no error (v6, Kafka 4,
//   would answer GROUP_ID_NOT_FOUND).

import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import {
  AUTHORIZED_OPERATIONS_NOT_REQUESTED,
  authorizedOperations,
  ResourceType,
} from "../security/authorized-operations.ts";
import { defineHandler } from "./handler.ts";

/** Groups one request may describe; Kafka has no limit, but every list needs one. */
const GROUPS_MAX = 10_000;

export const describeGroupsHandler = defineHandler({
  apiKey: ApiKey.DescribeGroups,
  minVersion: 0,
  maxVersion: 5,
  async handle(request, ctx) {
    const groupIds = request.groups.slice(0, GROUPS_MAX);
    const described = await ctx.broker.groupCoordinator.describeGroups(groupIds, ctx.apiVersion);
    const operationsOf = (groupId: string, errorCode: number) =>
      request.includeAuthorizedOperations && errorCode === ErrorCode.NONE
        ? authorizedOperations(ResourceType.GROUP, groupId)
        : AUTHORIZED_OPERATIONS_NOT_REQUESTED;
    return {
      throttleTimeMs: 0,
      groups: described.map((g) => ({
        errorCode: g.errorCode,
        groupId: g.groupId,
        groupState: g.groupState,
        protocolType: g.protocolType,
        protocolData: g.protocolData,
        members: g.members,
        authorizedOperations: operationsOf(g.groupId, g.errorCode),
      })),
    };
  },
});
