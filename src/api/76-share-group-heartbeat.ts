// ShareGroupHeartbeat: v1 (KIP-932)
//
// Version notes:
// * v0 was the early-access version of Kafka 3.9/4.0, never released; v1 is the first stable one.
// * The member id is chosen by the client (a UUID); epoch 0 joins, -1 leaves. The coordinator
//   assigns partitions with the simple assignor (many members per partition when there are more
//   members than partitions, coordinator/share-group.ts).
// * Partitions a member is assigned get their share-partition state before the answer when the
//   group has none (in a cluster InitializeShareGroupState at the share coordinator, the start
//   taken from the partition's leader), so share.auto.offset.reset=latest starts at the log end
//   of that moment: records produced after the assignment are delivered.
// * A classic or consumer group holding the id (even one with only committed offsets) is
//   GROUP_ID_NOT_FOUND, "Group G is not a share group.", as in Kafka 4.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { byId } from "./68-consumer-group-heartbeat.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

export const shareGroupHeartbeatHandler = defineHandler({
  apiKey: ApiKey.ShareGroupHeartbeat,
  minVersion: 1,
  maxVersion: 1,
  async handle(request, ctx) {
    if (!authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.groupId)) {
      return {
        throttleTimeMs: 0,
        errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED,
        memberId: request.memberId,
        memberEpoch: request.memberEpoch,
      };
    }
    const groupWasEmpty = !ctx.broker.groupCoordinator.shareGroups.hasMembers(request.groupId);
    const result = await ctx.broker.groupCoordinator.shareGroupHeartbeat({
      groupId: request.groupId,
      memberId: request.memberId,
      memberEpoch: request.memberEpoch,
      rackId: request.rackId,
      subscribedTopicNames: request.subscribedTopicNames,
      clientId: ctx.header.clientId ?? "",
      clientHost: `/${ctx.conn.remoteAddress}`,
    });
    const cache = ctx.broker.metadataCache;
    if (result.assignment !== null) {
      const manager = ctx.broker.sharePartitionManager;
      await manager.initializeAssignment(request.groupId, result.assignment, groupWasEmpty);
    }
    return {
      throttleTimeMs: 0,
      errorCode: result.errorCode,
      errorMessage: result.errorMessage,
      memberId: result.memberId,
      memberEpoch: result.memberEpoch,
      heartbeatIntervalMs: result.heartbeatIntervalMs,
      assignment:
        result.assignment === null
          ? null
          : {
              topicPartitions: byId(result.assignment, cache).map((t) => ({
                topicId: t.topicId,
                partitions: t.partitions,
              })),
            },
    };
  },
});
