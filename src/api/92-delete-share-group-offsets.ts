// DeleteShareGroupOffsets: v0 (KIP-932)
//
// Version notes:
// * Drops the group's share-partition state of every partition of each named topic (the group
//   starts there again at share.auto.offset.reset). Only while the group has no members:
//   NON_EMPTY_GROUP otherwise, as Kafka. Answered once the deletion is durable; in a cluster
//   the share coordinator keeps the partition's state epoch, one up, so a leader still holding
//   the old state is fenced on its next write (FENCED_STATE_EPOCH) and drops it.
// * DELETE on the group (GROUP_AUTHORIZATION_FAILED), READ on each topic
//   (TOPIC_AUTHORIZATION_FAILED); an unknown topic is UNKNOWN_TOPIC_OR_PARTITION.
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

/** Topics one request may name (Kafka has no limit; lists need one). */
const TOPICS_MAX = 10_000;

export const deleteShareGroupOffsetsHandler = defineHandler({
  apiKey: ApiKey.DeleteShareGroupOffsets,
  minVersion: 0,
  maxVersion: 0,
  async handle(request, ctx) {
    const fail = (errorCode: number, errorMessage: string | null = null) => ({
      throttleTimeMs: 0,
      errorCode,
      errorMessage,
      responses: [],
    });
    if (!authorize(ctx, AclOperation.DELETE, ResourceType.GROUP, request.groupId)) {
      return fail(ErrorCode.GROUP_AUTHORIZATION_FAILED);
    }
    if (ctx.broker.groupCoordinator.shareGroups.hasMembers(request.groupId)) {
      return fail(ErrorCode.NON_EMPTY_GROUP, `Group ${request.groupId} is not empty.`);
    }
    const manager = ctx.broker.sharePartitionManager;
    const responses = await Promise.all(
      request.topics.slice(0, TOPICS_MAX).map(async (t) => {
        const topic = ctx.broker.metadataCache.topic(t.topicName);
        const row = (errorCode: number, errorMessage: string | null = null) => ({
          topicName: t.topicName,
          topicId: topic?.topicId,
          errorCode,
          errorMessage,
        });
        if (topic === undefined) return row(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
        if (!authorize(ctx, AclOperation.READ, ResourceType.TOPIC, t.topicName)) {
          return row(ErrorCode.TOPIC_AUTHORIZATION_FAILED);
        }
        const partitions = topic.partitions.map((_, p) =>
          manager.deleteState(request.groupId, t.topicName, p),
        );
        // The topic's error is its first partition's failure (the response has no partitions).
        const failure = (await Promise.allSettled(partitions)).find((r) => r.status === "rejected");
        if (failure === undefined) return row(ErrorCode.NONE);
        const e: unknown = failure.reason;
        if (!(e instanceof KafkaError)) throw e;
        return row(e.code, e.message);
      }),
    );
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, errorMessage: null, responses };
  },
});
