import { ErrorCode } from "../protocol/errors.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import type { SharePartitionRequest, ShareResult } from "../server/share-partition-manager.ts";
import { authorize } from "./authorize.ts";
import type { RequestContext } from "./handler.ts";

/**
 * What ShareFetch and ShareAcknowledge share: topic ids to names (an unknown id, or a topic
 * the principal may not READ, is answered for each of its partitions without reaching the
 * share-partition manager) and the per-topic response layout.
 */

interface WireTopic {
  readonly topicId: Uint8Array;
  readonly partitions: readonly {
    readonly partitionIndex: number;
    readonly acknowledgementBatches: readonly {
      readonly firstOffset: bigint;
      readonly lastOffset: bigint;
      readonly acknowledgeTypes: readonly number[];
    }[];
  }[];
}

export interface RefusedPartition {
  readonly topicId: Uint8Array;
  readonly partition: number;
  readonly errorCode: number;
}

/** Topics, and partitions per topic, one request may name (Kafka has no limit; lists need one). */
export const SHARE_TOPICS_MAX = 10_000;
export const SHARE_PARTITIONS_PER_TOPIC_MAX = 100_000;

export function resolveShareTopics(ctx: RequestContext, topics: readonly WireTopic[]) {
  const cache = ctx.broker.metadataCache;
  const resolved: SharePartitionRequest[] = [];
  const refused: RefusedPartition[] = [];
  for (const t of topics.slice(0, SHARE_TOPICS_MAX)) {
    const topic = cache.topicById(t.topicId);
    const errorCode =
      topic === undefined
        ? ErrorCode.UNKNOWN_TOPIC_ID
        : authorize(ctx, AclOperation.READ, ResourceType.TOPIC, topic.name)
          ? ErrorCode.NONE
          : ErrorCode.TOPIC_AUTHORIZATION_FAILED;
    for (const p of t.partitions.slice(0, SHARE_PARTITIONS_PER_TOPIC_MAX)) {
      if (errorCode !== ErrorCode.NONE || topic === undefined) {
        refused.push({ topicId: t.topicId, partition: p.partitionIndex, errorCode });
        continue;
      }
      resolved.push({
        topic: topic.name,
        partition: p.partitionIndex,
        acks: p.acknowledgementBatches.map((b) => ({
          firstOffset: b.firstOffset,
          lastOffset: b.lastOffset,
          types: b.acknowledgeTypes,
        })),
      });
    }
  }
  return { resolved, refused };
}

export interface ShareResponsePartition {
  partitionIndex: number;
  errorCode: number;
  errorMessage: string | null;
  currentLeader: { leaderId: number; leaderEpoch: number };
}

/** Groups a share result's partitions (and the refused ones) by topic id, for the wire. */
export function byTopicId<P>(
  ctx: RequestContext,
  result: ShareResult,
  refused: readonly RefusedPartition[],
  extra: (p: ShareResult["partitions"][number] | null) => P,
) {
  const cache = ctx.broker.metadataCache;
  const topics = new Map<
    string,
    { topicId: Uint8Array; partitions: (ShareResponsePartition & P)[] }
  >();
  const add = (topicId: Uint8Array, entry: ShareResponsePartition & P) => {
    const key = Buffer.from(topicId).toString("hex");
    let t = topics.get(key);
    if (t === undefined) topics.set(key, (t = { topicId, partitions: [] }));
    t.partitions.push(entry);
  };
  for (const p of result.partitions) {
    const topicId = cache.topic(p.topic)?.topicId;
    if (topicId === undefined) continue;
    const leaderEpoch = ctx.broker.replicaManager.partitionState(p.topic, p.partition)?.leaderEpoch;
    add(topicId, {
      partitionIndex: p.partition,
      errorCode: p.errorCode,
      errorMessage: p.errorMessage,
      currentLeader: {
        leaderId: p.errorCode === ErrorCode.NONE ? ctx.broker.brokerId : -1,
        leaderEpoch: leaderEpoch ?? -1,
      },
      ...extra(p),
    });
  }
  for (const r of refused) {
    add(r.topicId, {
      partitionIndex: r.partition,
      errorCode: r.errorCode,
      errorMessage: null,
      currentLeader: { leaderId: -1, leaderEpoch: -1 },
      ...extra(null),
    });
  }
  return [...topics.values()];
}
