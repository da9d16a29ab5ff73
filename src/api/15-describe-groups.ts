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
  maxVersion: 5,
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
