// Heartbeat: v0-4
//
// Version notes:
// * v1: ThrottleTimeMs. v3: GroupInstanceId (KIP-345). v4: flexible.
// * REBALANCE_IN_PROGRESS tells a member to rejoin; the heartbeat still keeps its session alive.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

export const heartbeatHandler = defineHandler({
  apiKey: ApiKey.Heartbeat,
  minVersion: 0,
  maxVersion: 4,
  async handle(request, ctx) {
    if (!authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.groupId)) {
      return { throttleTimeMs: 0, errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED };
    }
    // A group this broker took over since its last request is read from the store first.
    const loadError = await ctx.broker.groupCoordinator.loadGroup(request.groupId);
    if (loadError !== null) return { throttleTimeMs: 0, errorCode: loadError };
    const errorCode = ctx.broker.groupCoordinator.heartbeat({
      groupId: request.groupId,
      generationId: request.generationId,
      memberId: request.memberId,
      groupInstanceId: request.groupInstanceId,
    });
    return { throttleTimeMs: 0, errorCode };
  },
});
