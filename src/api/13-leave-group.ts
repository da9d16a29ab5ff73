// LeaveGroup: v0-5
//
// Version notes:
// * v1: ThrottleTimeMs. v3: batched Members with GroupInstanceId (KIP-345), per-member errors.
// * v4: flexible. v5: Reason per member (KIP-800).
// * v0-2 name one member; its error is the response's error, as Kafka's LeaveGroupResponse does.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

const BATCHED_MEMBERS_MIN_VERSION = 3;
/** Members one request may remove; Kafka has no limit, but every list needs one. */
const LEAVING_MEMBERS_MAX = 10_000;

export const leaveGroupHandler = defineHandler({
  apiKey: ApiKey.LeaveGroup,
  minVersion: 0,
  maxVersion: 5,
  async handle(request, ctx) {
    if (!authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.groupId)) {
      return { throttleTimeMs: 0, errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED };
    }
    const batched = ctx.apiVersion >= BATCHED_MEMBERS_MIN_VERSION;
    if (batched && request.members.length > LEAVING_MEMBERS_MAX) {
      return { throttleTimeMs: 0, errorCode: ErrorCode.INVALID_REQUEST };
    }
    const members = batched
      ? request.members
      : [{ memberId: request.memberId, groupInstanceId: null, reason: null }];
    const loadError = await ctx.broker.groupCoordinator.loadGroup(request.groupId);
    if (loadError !== null) return { throttleTimeMs: 0, errorCode: loadError, members: [] };
    const result = ctx.broker.groupCoordinator.leaveGroup({ groupId: request.groupId, members });
    if (batched) return { throttleTimeMs: 0, errorCode: result.errorCode, members: result.members };
    const memberError = result.members[0]?.errorCode ?? ErrorCode.NONE;
    const errorCode = result.errorCode !== ErrorCode.NONE ? result.errorCode : memberError;
    return { throttleTimeMs: 0, errorCode };
  },
});
