// ListGroups: v0-5
//
// Version notes:
// * v1: ThrottleTimeMs. v3: flexible. v4: StatesFilter and GroupState (KIP-518), matched
//   case-insensitively. v5: TypesFilter and GroupType (KIP-848): "consumer" for a group with
//   KIP-848 members, else "classic".
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize, authorizeCluster } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

export const listGroupsHandler = defineHandler({
  apiKey: ApiKey.ListGroups,
  minVersion: 0,
  maxVersion: 5,
  async handle(request, ctx) {
    const result = await ctx.broker.groupCoordinator.listGroups({
      statesFilter: request.statesFilter,
      typesFilter: request.typesFilter,
    });
    // DESCRIBE on the cluster lists every group; otherwise those the principal may describe.
    const all = authorizeCluster(ctx, AclOperation.DESCRIBE, false);
    const groups = all
      ? result.groups
      : result.groups.filter((g) =>
          authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.groupId, false),
        );
    return { throttleTimeMs: 0, errorCode: result.errorCode, groups };
  },
});
