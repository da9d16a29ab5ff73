// SyncGroup: v0-5
//
// Version notes:
// * v1: ThrottleTimeMs. v3: GroupInstanceId (KIP-345). v4: flexible.
// * v5: ProtocolType and ProtocolName in request and response, checked against the group's.
// * A follower's SyncGroup is parked until the leader's assignment arrives.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

const PROTOCOL_FIELDS_MIN_VERSION = 5;

export const syncGroupHandler = defineHandler({
  apiKey: ApiKey.SyncGroup,
  minVersion: 0,
  maxVersion: 5,
  async handle(request, ctx) {
    if (!authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.groupId)) {
      const errorCode = ErrorCode.GROUP_AUTHORIZATION_FAILED;
      return { throttleTimeMs: 0, errorCode, assignment: new Uint8Array(0) };
    }
    const withProtocol = ctx.apiVersion >= PROTOCOL_FIELDS_MIN_VERSION;
    const result = await ctx.broker.groupCoordinator.syncGroup({
      groupId: request.groupId,
      generationId: request.generationId,
      memberId: request.memberId,
      groupInstanceId: request.groupInstanceId,
      protocolType: withProtocol ? request.protocolType : null,
      protocolName: withProtocol ? request.protocolName : null,
      // Bounded by the request size; the coordinator keeps only entries of current members.
      assignments: request.assignments,
    });
    return {
      throttleTimeMs: 0,
      errorCode: result.errorCode,
      protocolType: result.protocolType,
      protocolName: result.protocolName,
      assignment: result.assignment,
    };
  },
});
