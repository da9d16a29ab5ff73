// OffsetDelete: v0 (KIP-496)
//
// Version notes:
// * Deletes committed offsets of an Empty group, or of topics a live consumer group no longer
//   subscribes to; subscribed topics get GROUP_SUBSCRIBED_TO_TOPIC per partition.

import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

export const offsetDeleteHandler = defineHandler({
  apiKey: ApiKey.OffsetDelete,
  minVersion: 0,
  maxVersion: 0,
  async handle(request, ctx) {
    // DELETE on the group, then READ on each topic, as Kafka's handleOffsetDeleteRequest.
    if (!authorize(ctx, AclOperation.DELETE, ResourceType.GROUP, request.groupId)) {
      return { throttleTimeMs: 0, errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED, topics: [] };
    }
    const mayRead = (t: { name: string }) =>
      authorize(ctx, AclOperation.READ, ResourceType.TOPIC, t.name);
    const refused = request.topics
      .filter((t) => !mayRead(t))
      .map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({
          partitionIndex: p.partitionIndex,
          errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        })),
      }));
    const result = await ctx.broker.groupCoordinator.offsetDelete({
      groupId: request.groupId,
      topics: request.topics.filter(mayRead).map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => p.partitionIndex),
      })),
    });
    const topics = [...result.topics, ...refused];
    return { throttleTimeMs: 0, errorCode: result.errorCode, topics };
  },
});
