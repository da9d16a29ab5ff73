// DescribeGroups: v0-6
//
// Version notes:
// * v1: ThrottleTimeMs. v3: AuthorizedOperations when asked, for the groups answered without an
//   error, as Kafka 3.9 does (security/authorized-operations.ts: with no authorizer, READ,
//   DELETE and DESCRIBE). v4: GroupInstanceId.
// * v5: flexible. Before v6 an unknown group is answered as a Dead group with no error.
// * v6: an unknown group is GROUP_ID_NOT_FOUND with an ErrorMessage (KIP-1043).

import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import {
  AclOperation,
  AUTHORIZED_OPERATIONS_NOT_REQUESTED,
  authorizedOperations,
  ResourceType,
} from "../security/authorized-operations.ts";
import { authorize, requestAuthorizer } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

/** Groups one request may describe; Kafka has no limit, but every list needs one. */
const GROUPS_MAX = 10_000;

export const describeGroupsHandler = defineHandler({
  apiKey: ApiKey.DescribeGroups,
  minVersion: 0,
  maxVersion: 6,
  async handle(request, ctx) {
    const groupIds = request.groups.slice(0, GROUPS_MAX);
    // DESCRIBE on each group, as Kafka; a refused group is GROUP_AUTHORIZATION_FAILED.
    const mayDescribe = (g: string) => authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g);
    const allowed = groupIds.filter(mayDescribe);
    const described = await ctx.broker.groupCoordinator.describeGroups(allowed, ctx.apiVersion);
    const authorizer = requestAuthorizer(ctx);
    const operationsOf = (groupId: string, errorCode: number) =>
      request.includeAuthorizedOperations && errorCode === ErrorCode.NONE
        ? authorizedOperations(ResourceType.GROUP, groupId, authorizer)
        : AUTHORIZED_OPERATIONS_NOT_REQUESTED;
    const refused = groupIds
      .filter((g) => !mayDescribe(g))
      .map((groupId) => ({
        errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED,
        errorMessage: null,
        groupId,
        groupState: "",
        protocolType: "",
        protocolData: "",
        members: [],
        authorizedOperations: AUTHORIZED_OPERATIONS_NOT_REQUESTED,
      }));
    return {
      throttleTimeMs: 0,
      groups: [...refused, ...described].map((g) => ({
        errorCode: g.errorCode,
        errorMessage: ctx.apiVersion >= 6 ? g.errorMessage : null,
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
