// OffsetDelete: v0 (KIP-496)
//
// Version notes:
// * Deletes committed offsets of an Empty group, or of topics a live consumer group no longer
//   subscribes to; subscribed topics get GROUP_SUBSCRIBED_TO_TOPIC per partition.
import { ApiKey } from "../protocol/generated/index.ts";
import { defineHandler } from "./handler.ts";

export const offsetDeleteHandler = defineHandler({
  apiKey: ApiKey.OffsetDelete,
  minVersion: 0,
  maxVersion: 0,
  async handle(request, ctx) {
    const result = await ctx.broker.groupCoordinator.offsetDelete({
      groupId: request.groupId,
      topics: request.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => p.partitionIndex),
      })),
    });
    return { throttleTimeMs: 0, errorCode: result.errorCode, topics: result.topics };
  },
});
