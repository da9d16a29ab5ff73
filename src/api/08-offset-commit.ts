// OffsetCommit: v0-10
//
// Version notes:
// * v0 has no generation or member (a simple consumer: generation -1). v1: generation and
//   member id, and a per-partition commit timestamp (ignored: the broker's clock is used, as in
//   Kafka since v2). v2-4: RetentionTimeMs (ignored; offsets.retention.minutes is not
//   implemented). v5 drops it. v6: committed leader epoch. v7: GroupInstanceId (KIP-345).
// * v8: flexible. v9: usable by KIP-848 consumer groups; for classic groups it is v8.
// * v10: topics by id only (KIP-848): each id is resolved to its name here and the answer names
//   it by id; an id this broker does not know is UNKNOWN_TOPIC_ID on its partitions.
// * Partitions of topics this broker does not know get UNKNOWN_TOPIC_OR_PARTITION, as in Kafka.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey, type OffsetCommitRequest } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler, type RequestContext } from "./handler.ts";

type RequestTopic = OffsetCommitRequest["topics"][number];
type TopicErrors = {
  name: string;
  topicId?: Uint8Array;
  partitions: readonly { partitionIndex: number; errorCode: number }[];
};

const TOPIC_ID_MIN_VERSION = 10;

export const offsetCommitHandler = defineHandler({
  apiKey: ApiKey.OffsetCommit,
  minVersion: 0,
  maxVersion: 10,
  async handle(request, ctx) {
    // As Kafka: READ on the group for every partition, then READ on each topic.
    const groupAllowed = authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.groupId);
    const known: RequestTopic[] = [];
    const unknown: TopicErrors[] = [];
    const byId = ctx.apiVersion >= TOPIC_ID_MIN_VERSION;
    for (const requested of request.topics) {
      const name = byId ? ctx.broker.metadataCache.topicById(requested.topicId)?.name : null;
      if (byId && name === undefined) {
        unknown.push({ ...topicErrors(requested, ErrorCode.UNKNOWN_TOPIC_ID), name: "" });
        continue;
      }
      const topic = name === null || name === undefined ? requested : { ...requested, name };
      const denial = !groupAllowed
        ? ErrorCode.GROUP_AUTHORIZATION_FAILED
        : !authorize(ctx, AclOperation.READ, ResourceType.TOPIC, topic.name)
          ? ErrorCode.TOPIC_AUTHORIZATION_FAILED
          : null;
      if (denial !== null) {
        unknown.push(topicErrors(topic, denial));
        continue;
      }
      const exists = partitionChecker(topic.name, ctx);
      const ok = topic.partitions.filter((p) => exists(p.partitionIndex));
      const missing = topic.partitions.filter((p) => !exists(p.partitionIndex));
      if (ok.length > 0) known.push({ ...topic, partitions: ok });
      if (missing.length > 0) {
        unknown.push({
          name: topic.name,
          partitions: missing.map((p) => ({
            partitionIndex: p.partitionIndex,
            errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
          })),
        });
      }
    }
    const result = await ctx.broker.groupCoordinator.offsetCommit({
      groupId: request.groupId,
      generationId: request.generationIdOrMemberEpoch,
      memberId: request.memberId,
      groupInstanceId: request.groupInstanceId,
      topics: known,
    });
    const topics = [...result.topics, ...unknown];
    if (!byId) return { throttleTimeMs: 0, topics };
    return { throttleTimeMs: 0, topics: topics.map((t) => ({ ...t, topicId: idOf(t, ctx) })) };
  },
});

function topicErrors(topic: RequestTopic, errorCode: number): TopicErrors {
  const partitions = topic.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode }));
  return { name: topic.name, topicId: topic.topicId, partitions };
}

/** v10 answers by id: the request's id for an unknown topic, else the topic's. */
function idOf(t: TopicErrors, ctx: RequestContext): Uint8Array {
  return t.topicId ?? ctx.broker.metadataCache.topic(t.name)?.topicId ?? new Uint8Array(16);
}

function partitionChecker(topic: string, ctx: RequestContext): (partition: number) => boolean {
  const metadata = ctx.broker.metadataCache.topic(topic);
  if (metadata === undefined) return () => false;
  const partitions = new Set(metadata.partitions.map((p) => p.partition));
  return (partition) => partitions.has(partition);
}
