// DeleteGroups: v0-3
//
// Version notes:
// * v1 is the same as v0. v2: flexible. v3: a per-group ErrorMessage (left null).
// * Only Empty groups are deleted (with their committed offsets); others get NON_EMPTY_GROUP.

import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

export const deleteGroupsHandler = defineHandler({
  apiKey: ApiKey.DeleteGroups,
  minVersion: 0,
  maxVersion: 3,
  async handle(request, ctx) {
    // DELETE on each group, as Kafka; a refused one is GROUP_AUTHORIZATION_FAILED.
    const mayDelete = (g: string) => authorize(ctx, AclOperation.DELETE, ResourceType.GROUP, g);
    const allowed = request.groupsNames.filter(mayDelete);
    const deleted = await ctx.broker.groupCoordinator.deleteGroups(allowed);
    const refused = request.groupsNames
      .filter((g) => !mayDelete(g))
      .map((groupId) => ({ groupId, errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED }));
    return { throttleTimeMs: 0, results: [...refused, ...deleted] };
  },
});
