// DeleteGroups: v0-2
//
// Version notes:
// * v1 is the same as v0. v2: flexible.
// * Only Empty groups are deleted (with their committed offsets); others get NON_EMPTY_GROUP.
import { ApiKey } from "../protocol/generated/index.ts";
import { defineHandler } from "./handler.ts";

export const deleteGroupsHandler = defineHandler({
  apiKey: ApiKey.DeleteGroups,
  minVersion: 0,
  maxVersion: 2,
  async handle(request, ctx) {
    const results = await ctx.broker.groupCoordinator.deleteGroups(request.groupsNames);
    return { throttleTimeMs: 0, results };
  },
});
