// DescribeShareGroupOffsets: v0-1 (KIP-932)
//
// Version notes:
// * Each partition's share-partition start offset (-1 when the group has no state for it). Topics
//   null: every partition the group has state for. v1: Lag, the records from the start offset to
//   the high watermark not yet acknowledged or archived.
// * DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED for the group otherwise); a topic the
//   principal may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED for each of its partitions.
// * The state is the partition leader's; in embedded mode that is this broker.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler, type RequestContext } from "./handler.ts";

/** Groups and topics one request may name (Kafka has no limit; lists need one). */
const GROUPS_MAX = 1_000;
const TOPICS_MAX = 10_000;

export const describeShareGroupOffsetsHandler = defineHandler({
  apiKey: ApiKey.DescribeShareGroupOffsets,
  minVersion: 0,
  maxVersion: 1,
  handle(request, ctx) {
    const groups = request.groups.slice(0, GROUPS_MAX).map((g) => {
      if (!authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.groupId)) {
        return { groupId: g.groupId, topics: [], errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED };
      }
      const wanted =
        g.topics === null ? statedTopics(ctx, g.groupId) : g.topics.slice(0, TOPICS_MAX);
      const topics = wanted.map((t) => describeTopic(ctx, g.groupId, t.topicName, t.partitions));
      return { groupId: g.groupId, topics, errorCode: ErrorCode.NONE, errorMessage: null };
    });
    return { throttleTimeMs: 0, groups };
  },
});

function statedTopics(ctx: RequestContext, groupId: string) {
  const byTopic = new Map<string, number[]>();
  for (const s of ctx.broker.sharePartitionManager.states()) {
    if (s.groupId !== groupId) continue;
    const list = byTopic.get(s.topic) ?? [];
    list.push(s.partition);
    byTopic.set(s.topic, list);
  }
  return [...byTopic].map(([topicName, partitions]) => ({ topicName, partitions }));
}

function describeTopic(
  ctx: RequestContext,
  groupId: string,
  topicName: string,
  partitions: readonly number[],
) {
  const topic = ctx.broker.metadataCache.topic(topicName);
  const denied = !authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topicName);
  const topicError =
    topic === undefined
      ? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
      : denied
        ? ErrorCode.TOPIC_AUTHORIZATION_FAILED
        : ErrorCode.NONE;
  const rows = [...partitions]
    .sort((a, b) => a - b)
    .map((partitionIndex) => {
      const none = { partitionIndex, startOffset: -1n, leaderEpoch: -1, lag: -1n };
      if (topicError !== ErrorCode.NONE) return { ...none, errorCode: topicError };
      const sp = ctx.broker.sharePartitionManager.sharePartition(
        groupId,
        topicName,
        partitionIndex,
      );
      const p = ctx.broker.replicaManager.partitionState(topicName, partitionIndex);
      if (sp === undefined || p === undefined) return { ...none, errorCode: ErrorCode.NONE };
      const pending = p.log.highWatermark - sp.startOffset - BigInt(sp.doneInFlightCount());
      return {
        partitionIndex,
        startOffset: sp.startOffset,
        leaderEpoch: p.leaderEpoch,
        lag: pending < 0n ? 0n : pending,
        errorCode: ErrorCode.NONE,
      };
    });
  return { topicName, topicId: topic?.topicId, partitions: rows };
}
