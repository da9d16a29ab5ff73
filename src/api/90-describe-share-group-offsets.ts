// DescribeShareGroupOffsets: v0-1 (KIP-932)
//
// Version notes:
// * Each partition's share-partition start offset (-1 when the group has no state for it). Topics
//   null: every partition the group has state for. v1: Lag, the records from the start offset to
//   the high watermark not yet acknowledged or archived.
// * DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED for the group otherwise); a topic the
//   principal may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED for each of its partitions.
// * In a cluster the start offset and the completed records come from the share coordinator
//   (ReadShareGroupStateSummary, as Kafka's group coordinator asks it), so any broker answers
//   alike; the lag takes the high watermark of this broker's replica of the partition (-1
//   without one). Topics null: the partitions of the topics the group's members subscribe to
//   and those this broker keeps state for, each only if the group has state for it. In
//   embedded mode it is this broker's state.
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
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
  async handle(request, ctx) {
    const groups = await Promise.all(
      request.groups.slice(0, GROUPS_MAX).map(async (g) => {
        if (!authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.groupId)) {
          const errorCode = ErrorCode.GROUP_AUTHORIZATION_FAILED;
          return { groupId: g.groupId, topics: [], errorCode };
        }
        const all = g.topics === null;
        const wanted = all ? candidateTopics(ctx, g.groupId) : g.topics!.slice(0, TOPICS_MAX);
        const described = await Promise.all(
          wanted.map((t) => describeTopic(ctx, g.groupId, t.topicName, t.partitions, all)),
        );
        const topics = described.filter((t) => !all || t.partitions.length > 0);
        return { groupId: g.groupId, topics, errorCode: ErrorCode.NONE, errorMessage: null };
      }),
    );
    return { throttleTimeMs: 0, groups };
  },
});

/** Topics null: the members' subscriptions (every partition) and the partitions with state here. */
function candidateTopics(ctx: RequestContext, groupId: string) {
  const byTopic = new Map<string, Set<number>>();
  const add = (topic: string, partition: number) => {
    let set = byTopic.get(topic);
    if (set === undefined) byTopic.set(topic, (set = new Set()));
    set.add(partition);
  };
  const group = ctx.broker.groupCoordinator.shareGroups.get(groupId);
  for (const topic of group?.subscribedTopics() ?? []) {
    const count = ctx.broker.metadataCache.topic(topic)?.partitions.length ?? 0;
    for (let p = 0; p < count; p++) add(topic, p);
  }
  for (const s of ctx.broker.sharePartitionManager.states()) {
    if (s.groupId === groupId) add(s.topic, s.partition);
  }
  return [...byTopic].slice(0, TOPICS_MAX).map(([topicName, partitions]) => ({
    topicName,
    partitions: [...partitions],
  }));
}

async function describeTopic(
  ctx: RequestContext,
  groupId: string,
  topicName: string,
  partitions: readonly number[],
  onlyStated: boolean,
) {
  const topic = ctx.broker.metadataCache.topic(topicName);
  const denied = !authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topicName);
  const topicError =
    topic === undefined
      ? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
      : denied
        ? ErrorCode.TOPIC_AUTHORIZATION_FAILED
        : ErrorCode.NONE;
  const rows = await Promise.all(
    [...partitions]
      .sort((a, b) => a - b)
      .map(async (partitionIndex) => {
        const none = { partitionIndex, startOffset: -1n, leaderEpoch: -1, lag: -1n };
        if (topicError !== ErrorCode.NONE) return { ...none, errorCode: topicError };
        try {
          const manager = ctx.broker.sharePartitionManager;
          const summary = await manager.summary(groupId, topicName, partitionIndex);
          if (summary === null) return onlyStated ? null : { ...none, errorCode: ErrorCode.NONE };
          const p = ctx.broker.replicaManager.partitionState(topicName, partitionIndex);
          const pending =
            p === undefined
              ? -1n
              : p.log.highWatermark - summary.startOffset - BigInt(summary.deliveryCompleteCount);
          return {
            partitionIndex,
            startOffset: summary.startOffset,
            leaderEpoch: summary.leaderEpoch,
            lag: p !== undefined && pending < 0n ? 0n : pending,
            errorCode: ErrorCode.NONE,
          };
        } catch (e) {
          if (!(e instanceof KafkaError)) throw e;
          return { ...none, errorCode: e.code, errorMessage: e.message };
        }
      }),
  );
  const stated = rows.filter((r) => r !== null);
  return { topicName, topicId: topic?.topicId, partitions: stated };
}
