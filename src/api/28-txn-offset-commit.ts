// TxnOffsetCommit: v0-6
//
// Version notes:
// * v2: committed leader epoch. v3: flexible; GenerationId, MemberId and GroupInstanceId
//   (KIP-447), checked like OffsetCommit's when given. v4: TRANSACTION_ABORTABLE may be
//   returned (never by Quill).
// * v5 (KIP-890 part 2): a transactions v2 producer sends no AddOffsetsToTxn, so the group's
//   offsets are added to its transaction here first (add-partitions-to-txn-manager.ts). A
//   coordinator that is busy with the previous transaction (CONCURRENT_TRANSACTIONS) is answered
//   as COORDINATOR_LOAD_IN_PROGRESS, which the client retries where it is.
// * v6 (KIP-1319): topics by id; an id this broker does not know is UNKNOWN_TOPIC_ID.
// * The offsets stay pending (durable in the offset store) until the transaction's marker:
//   COMMIT makes them the group's committed offsets, ABORT drops them.
// * Partitions of topics this broker does not know get UNKNOWN_TOPIC_OR_PARTITION.
import { topicPartitionKey } from "../common/topic-partition.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey, type TxnOffsetCommitRequest } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler, type RequestContext } from "./handler.ts";

/** The first version whose producer adds its offsets to the transaction here (KIP-890). */
const IMPLICIT_ADD_MIN_VERSION = 5;
/** The first version naming topics by id (KIP-1319). */
const TOPIC_IDS_MIN_VERSION = 6;

/** v5+: the group's offsets added to the producer's transaction; NONE, or the error to answer. */
async function addOffsetsToTransaction(
  ctx: RequestContext,
  request: TxnOffsetCommitRequest,
  refusal: number | null,
): Promise<number> {
  if (ctx.apiVersion < IMPLICIT_ADD_MIN_VERSION || refusal !== null) return ErrorCode.NONE;
  const code = await ctx.broker.addPartitionsToTxnManager.addOffsets(request, request.groupId);
  return code === ErrorCode.CONCURRENT_TRANSACTIONS ? ErrorCode.COORDINATOR_LOAD_IN_PROGRESS : code;
}

export const txnOffsetCommitHandler = defineHandler({
  apiKey: ApiKey.TxnOffsetCommit,
  minVersion: 0,
  maxVersion: 6,
  async handle(request, ctx) {
    const byId = ctx.apiVersion >= TOPIC_IDS_MIN_VERSION;
    const cache = ctx.broker.metadataCache;
    const nameOf = (t: { name: string; topicId: Uint8Array }) =>
      byId ? (cache.topicById(t.topicId)?.name ?? null) : t.name;
    const topics = request.topics.map((t) => ({ ...t, name: nameOf(t) ?? "" }));
    const unknownIds = new Set(request.topics.filter((t) => nameOf(t) === null));
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
    const added = await addOffsetsToTransaction(ctx, request, refusal);
    const exists = (topic: string, p: number) => {
      const t = ctx.broker.metadataCache.topic(topic);
      return t !== undefined && p >= 0 && p < t.partitions.length;
    };
    const known = topics
      .filter(() => added === ErrorCode.NONE)
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
      topics: topics.map((t, i) => ({
        name: t.name,
        topicId: request.topics[i]!.topicId,
        partitions: t.partitions.map((p) => ({
          partitionIndex: p.partitionIndex,
          errorCode:
            (unknownIds.has(request.topics[i]!) ? ErrorCode.UNKNOWN_TOPIC_ID : null) ??
            (added === ErrorCode.NONE ? null : added) ??
            denialOf(t.name) ??
            codes.get(topicPartitionKey(t.name, p.partitionIndex)) ??
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        })),
      })),
    };
  },
});
