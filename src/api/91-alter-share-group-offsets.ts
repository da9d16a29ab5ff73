// AlterShareGroupOffsets: v0 (KIP-932)
//
// Version notes:
// * Sets each named partition's share-partition start offset (kafka-share-groups.sh
//   --reset-offsets); in-flight state is dropped. Only while the group has no members:
//   NON_EMPTY_GROUP otherwise, as Kafka. In a cluster the share coordinator initializes the
//   state (InitializeShareGroupState, a new state epoch, as Kafka's group coordinator does), so
//   any broker may be asked; the partition's leader reads it when it next serves the group, and
//   one still holding the old state is fenced on its next write (FENCED_STATE_EPOCH) and reads
//   it again. Embedded: the offset is bounded by the log start and end offsets.
// * READ on the group (GROUP_AUTHORIZATION_FAILED) and on each topic
//   (TOPIC_AUTHORIZATION_FAILED for its partitions); an unknown topic or partition is
//   UNKNOWN_TOPIC_OR_PARTITION.
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

/** Topics one request may name (Kafka has no limit; lists need one). */
const TOPICS_MAX = 10_000;

export const alterShareGroupOffsetsHandler = defineHandler({
  apiKey: ApiKey.AlterShareGroupOffsets,
  minVersion: 0,
  maxVersion: 0,
  async handle(request, ctx) {
    const fail = (errorCode: number, errorMessage: string | null = null) => ({
      throttleTimeMs: 0,
      errorCode,
      errorMessage,
      responses: [],
    });
    if (!authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.groupId)) {
      return fail(ErrorCode.GROUP_AUTHORIZATION_FAILED);
    }
    if (ctx.broker.groupCoordinator.shareGroups.hasMembers(request.groupId)) {
      return fail(ErrorCode.NON_EMPTY_GROUP, `Group ${request.groupId} is not empty.`);
    }
    const manager = ctx.broker.sharePartitionManager;
    const responses = await Promise.all(
      request.topics.slice(0, TOPICS_MAX).map(async (t) => {
        const topic = ctx.broker.metadataCache.topic(t.topicName);
        const denied = !authorize(ctx, AclOperation.READ, ResourceType.TOPIC, t.topicName);
        const partitions = await Promise.all(
          t.partitions.map(async (p) => {
            const row = (errorCode: number, errorMessage: string | null = null) => ({
              partitionIndex: p.partitionIndex,
              errorCode,
              errorMessage,
            });
            if (denied) return row(ErrorCode.TOPIC_AUTHORIZATION_FAILED);
            const count = topic?.partitions.length ?? 0;
            if (p.partitionIndex < 0 || p.partitionIndex >= count) {
              return row(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unknown topic or partition.");
            }
            try {
              await manager.resetOffset(
                request.groupId,
                t.topicName,
                p.partitionIndex,
                p.startOffset,
              );
              return row(ErrorCode.NONE);
            } catch (e) {
              if (!(e instanceof KafkaError)) throw e;
              return row(e.code, e.message);
            }
          }),
        );
        return { topicName: t.topicName, topicId: topic?.topicId, partitions };
      }),
    );
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, errorMessage: null, responses };
  },
});
