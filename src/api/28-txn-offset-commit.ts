// TxnOffsetCommit: v0-4
//
// Version notes:
// * v2: committed leader epoch. v3: flexible; GenerationId, MemberId and GroupInstanceId
//   (KIP-447), checked like OffsetCommit's when given. v4: TRANSACTION_ABORTABLE may be
//   returned (never by Quill).
// * The offsets stay pending (durable in the offset store) until the transaction's marker:
//   COMMIT makes them the group's committed offsets, ABORT drops them.
// * Partitions of topics this broker does not know get UNKNOWN_TOPIC_OR_PARTITION.
import { topicPartitionKey } from "../common/topic-partition.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

export const txnOffsetCommitHandler = defineHandler({
  apiKey: ApiKey.TxnOffsetCommit,
  minVersion: 0,
  maxVersion: 4,
  async handle(request, ctx) {
    // WRITE on the transactional id, READ on the group, then READ on each topic, as Kafka.
    const { WRITE, READ } = AclOperation;
    const refusal = !authorize(ctx, WRITE, ResourceType.TRANSACTIONAL_ID, request.transactionalId)
      ? ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
      : !authorize(ctx, READ, ResourceType.GROUP, request.groupId)
        ? ErrorCode.GROUP_AUTHORIZATION_FAILED
        : null;
    const mayRead = (topic: string) => authorize(ctx, READ, ResourceType.TOPIC, topic);
    const denialOf = (topic: string) =>
      refusal ?? (mayRead(topic) ? null : ErrorCode.TOPIC_AUTHORIZATION_FAILED);
    const exists = (topic: string, p: number) => {
      const t = ctx.broker.metadataCache.topic(topic);
      return t !== undefined && p >= 0 && p < t.partitions.length;
    };
    const known = request.topics
      .map((t) => ({
        name: t.name,
        partitions: t.partitions.filter(
          (p) => denialOf(t.name) === null && exists(t.name, p.partitionIndex),
        ),
      }))
      .filter((t) => t.partitions.length > 0);
    const result = await ctx.broker.groupCoordinator.txnOffsetCommit({
      groupId: request.groupId,
      producerId: request.producerId,
      generationId: ctx.apiVersion >= 3 ? request.generationIdOrMemberEpoch : -1,
      memberId: ctx.apiVersion >= 3 ? request.memberId : "",
      groupInstanceId: ctx.apiVersion >= 3 ? request.groupInstanceId : null,
      topics: known,
    });
    const codes = new Map<string, number>();
    for (const t of result.topics) {
      for (const p of t.partitions)
        codes.set(topicPartitionKey(t.name, p.partitionIndex), p.errorCode);
    }
    return {
      throttleTimeMs: 0,
      topics: request.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({
          partitionIndex: p.partitionIndex,
          errorCode:
            denialOf(t.name) ??
            codes.get(topicPartitionKey(t.name, p.partitionIndex)) ??
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        })),
      })),
    };
  },
});
