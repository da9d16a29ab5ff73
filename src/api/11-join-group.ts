// JoinGroup: v0-9
//
// Version notes:
// * v1: RebalanceTimeoutMs (v0 uses the session timeout for it, as Kafka does).
// * v4: a new member first gets MEMBER_ID_REQUIRED with its id and joins again (KIP-394).
// * v5: GroupInstanceId, static membership (KIP-345). v6: flexible.
// * v7: ProtocolType in the response, ProtocolName nullable. v8: Reason (KIP-800).
// * v9: SkipAssignment for a rejoining static leader (KIP-814).
// * The answer is parked until the rebalance completes; see GroupCoordinator.joinGroup.
// * A share group holding the id is INCONSISTENT_GROUP_PROTOCOL with no member id, as in Kafka 4.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

const NULLABLE_PROTOCOL_NAME_MIN_VERSION = 7;
const REBALANCE_TIMEOUT_MIN_VERSION = 1;

export const joinGroupHandler = defineHandler({
  apiKey: ApiKey.JoinGroup,
  minVersion: 0,
  maxVersion: 9,
  async handle(request, ctx) {
    // READ on the group, as Kafka's handleJoinGroupRequest.
    if (!authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.groupId)) {
      const errorCode = ErrorCode.GROUP_AUTHORIZATION_FAILED;
      return { throttleTimeMs: 0, errorCode, generationId: -1, memberId: request.memberId };
    }
    const result = await ctx.broker.groupCoordinator.joinGroup({
      groupId: request.groupId,
      memberId: request.memberId,
      groupInstanceId: request.groupInstanceId,
      protocolType: request.protocolType,
      protocols: request.protocols,
      sessionTimeoutMs: request.sessionTimeoutMs,
      rebalanceTimeoutMs:
        ctx.apiVersion >= REBALANCE_TIMEOUT_MIN_VERSION
          ? request.rebalanceTimeoutMs
          : request.sessionTimeoutMs,
      reason: request.reason,
      apiVersion: ctx.apiVersion,
      clientId: ctx.header.clientId ?? "",
      clientHost: `/${ctx.conn.remoteAddress}`,
    });
    const nullable = ctx.apiVersion >= NULLABLE_PROTOCOL_NAME_MIN_VERSION;
    return {
      throttleTimeMs: 0,
      errorCode: result.errorCode,
      generationId: result.generationId,
      protocolType: result.protocolType,
      protocolName: nullable ? result.protocolName : (result.protocolName ?? ""),
      leader: result.leader,
      skipAssignment: result.skipAssignment,
      memberId: result.memberId,
      members: result.members,
    };
  },
});
