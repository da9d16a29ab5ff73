// ShareGroupDescribe: v1 (KIP-932)
//
// Version notes:
// * v0 was early access (Kafka 3.9/4.0); v1 is the first stable version.
// * A group unknown here, or one of another type (classic or consumer), is GROUP_ID_NOT_FOUND
//   ("Group G is not a share group." as in Kafka); DESCRIBE on the group is needed
//   (GROUP_AUTHORIZATION_FAILED otherwise).
import { SHARE_ASSIGNOR_NAME, type ShareGroup } from "../coordinator/share-group.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import {
  AclOperation,
  AUTHORIZED_OPERATIONS_NOT_REQUESTED,
  authorizedOperations,
  ResourceType,
} from "../security/authorized-operations.ts";
import type { MetadataCache } from "../server/metadata-cache.ts";
import { byId } from "./68-consumer-group-heartbeat.ts";
import { authorize, requestAuthorizer } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

/** Groups one request may describe; Kafka has no limit, but every list needs one. */
const GROUPS_MAX = 10_000;

export const shareGroupDescribeHandler = defineHandler({
  apiKey: ApiKey.ShareGroupDescribe,
  minVersion: 1,
  maxVersion: 1,
  handle(request, ctx) {
    const cache = ctx.broker.metadataCache;
    const groups = request.groupIds.slice(0, GROUPS_MAX).map((groupId) => {
      const failed = (errorCode: number, errorMessage: string | null = null) => ({
        errorCode,
        errorMessage,
        groupId,
        authorizedOperations: AUTHORIZED_OPERATIONS_NOT_REQUESTED,
      });
      if (!authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, groupId)) {
        return failed(ErrorCode.GROUP_AUTHORIZATION_FAILED);
      }
      const group = ctx.broker.groupCoordinator.shareGroup(groupId);
      if (group === null) {
        const other = ctx.broker.groupCoordinator.groupType(groupId) !== null;
        const what = other ? "is not a share group" : "not found";
        return failed(ErrorCode.GROUP_ID_NOT_FOUND, `Group ${groupId} ${what}.`);
      }
      const authorizedOps = request.includeAuthorizedOperations
        ? authorizedOperations(ResourceType.GROUP, groupId, requestAuthorizer(ctx))
        : AUTHORIZED_OPERATIONS_NOT_REQUESTED;
      return { ...describe(group, cache), authorizedOperations: authorizedOps };
    });
    return { throttleTimeMs: 0, groups };
  },
});

function describe(group: ShareGroup, cache: MetadataCache) {
  return {
    errorCode: ErrorCode.NONE,
    errorMessage: null,
    groupId: group.groupId,
    groupState: group.state,
    groupEpoch: group.groupEpoch,
    assignmentEpoch: group.assignmentEpoch,
    assignorName: SHARE_ASSIGNOR_NAME,
    members: [...group.members.values()].map((m) => ({
      memberId: m.memberId,
      rackId: m.rackId,
      memberEpoch: m.memberEpoch,
      clientId: m.clientId,
      clientHost: m.clientHost,
      subscribedTopicNames: m.subscribedTopicNames,
      assignment: { topicPartitions: byId(m.assigned, cache) },
    })),
  };
}
