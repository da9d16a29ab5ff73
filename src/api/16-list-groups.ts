// ListGroups: v0-5
//
// Version notes:
// * v1: ThrottleTimeMs. v3: flexible. v4: StatesFilter and GroupState (KIP-518), matched
//   case-insensitively. v5: TypesFilter and GroupType (KIP-848); every Quill group is "classic".
import { ApiKey } from "../protocol/generated/index.ts";
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
    return { throttleTimeMs: 0, errorCode: result.errorCode, groups: result.groups };
  },
});
