// ConsumerGroupDescribe: v0-1 (KIP-848)
//
// Version notes:
// * v1: MemberType per member: 1 a consumer-protocol member, 0 a classic-protocol member of the
//   group (an online upgrade or downgrade in progress).
// * A group unknown here, or a classic or share group, is GROUP_ID_NOT_FOUND ("Group G is not a
//   consumer group." as in Kafka); DESCRIBE on the group is needed (GROUP_AUTHORIZATION_FAILED
//   otherwise).
import type { ConsumerGroup } from "../coordinator/consumer-group.ts";
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
/** ConsumerGroupDescribe v1's MemberType of a consumer-protocol and of a classic member. */
const CONSUMER_MEMBER_TYPE = 1;
const CLASSIC_MEMBER_TYPE = 0;

export const consumerGroupDescribeHandler = defineHandler({
  apiKey: ApiKey.ConsumerGroupDescribe,
  minVersion: 0,
  maxVersion: 1,
  async handle(request, ctx) {
    const cache = ctx.broker.metadataCache;
    const ids = request.groupIds.slice(0, GROUPS_MAX);
    // Groups taken over since a failover are read from the store before they are described.
    const loadErrors = await Promise.all(
      ids.map((id) => ctx.broker.groupCoordinator.loadGroup(id)),
    );
    const groups = ids.map((groupId, i) => {
      const failed = (errorCode: number, errorMessage: string | null = null) => ({
        errorCode,
        errorMessage,
        groupId,
        authorizedOperations: AUTHORIZED_OPERATIONS_NOT_REQUESTED,
      });
      if (!authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, groupId)) {
        return failed(ErrorCode.GROUP_AUTHORIZATION_FAILED);
      }
      if (loadErrors[i] !== null) return failed(loadErrors[i]!);
      const group = ctx.broker.groupCoordinator.consumerGroup(groupId);
      if (group === null) {
        const other = ctx.broker.groupCoordinator.groupType(groupId) !== null;
        const what = other ? "is not a consumer group" : "not found";
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

function describe(group: ConsumerGroup, cache: MetadataCache) {
  return {
    errorCode: ErrorCode.NONE,
    errorMessage: null,
    groupId: group.groupId,
    groupState: group.state,
    groupEpoch: group.groupEpoch,
    assignmentEpoch: group.targetEpoch,
    assignorName: group.assignorName,
    members: [...group.members.values()].map((m) => ({
      memberId: m.memberId,
      instanceId: m.instanceId,
      rackId: m.rackId,
      memberEpoch: m.memberEpoch,
      clientId: m.clientId,
      clientHost: m.clientHost,
      subscribedTopicNames: [...m.subscribedTopicNames],
      subscribedTopicRegex: m.subscribedTopicRegex,
      assignment: { topicPartitions: byId(m.assigned, cache) },
      targetAssignment: { topicPartitions: byId(group.targetOf(m.memberId), cache) },
      memberType: m.classic === null ? CONSUMER_MEMBER_TYPE : CLASSIC_MEMBER_TYPE,
    })),
  };
}
