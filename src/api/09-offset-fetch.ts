// OffsetFetch: v0-10
//
// Version notes:
// * v0 read offsets from ZooKeeper in Kafka; here every version reads the same offset store.
// * v2: null Topics means every committed partition; a top-level ErrorCode. v6: flexible.
// * v7: RequireStable (KIP-447). Without transactions no offset is ever pending, so it changes
//   nothing. v8: several groups per request (KIP-709). v9: MemberId/MemberEpoch for KIP-848
//   groups: an unknown member is UNKNOWN_MEMBER_ID, another epoch STALE_MEMBER_EPOCH
//   (ILLEGAL_GENERATION for a classic member of a consumer group); classic groups ignore them.
// * v10: topics by id only (KIP-848): ids are resolved to names here and back in the answer;
//   an id this broker does not know is UNKNOWN_TOPIC_ID on its partitions, and an all-topics
//   answer leaves out topics deleted since their commit.
// * Before v2 there is no top-level error: a group error is reported on every partition.

import type { OffsetFetchResult, OffsetFetchTopic } from "../coordinator/group-operations.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey, type OffsetFetchRequest } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler, type RequestContext } from "./handler.ts";

const GROUPS_MIN_VERSION = 8;
const TOP_LEVEL_ERROR_MIN_VERSION = 2;
const TOPIC_ID_MIN_VERSION = 10;
/** Groups one request may ask about; Kafka has no limit, but every list needs one. */
const GROUPS_MAX = 10_000;

type Topics = readonly OffsetFetchTopic[] | null;
/** v9+: who fetches (null and -1 before v9, and from admin clients). */
type Member = { readonly memberId: string | null; readonly memberEpoch: number };
const NO_MEMBER: Member = { memberId: null, memberEpoch: -1 };

export const offsetFetchHandler = defineHandler({
  apiKey: ApiKey.OffsetFetch,
  minVersion: 0,
  maxVersion: 10,
  async handle(request, ctx) {
    if (ctx.apiVersion >= GROUPS_MIN_VERSION) {
      const groups = await Promise.all(
        request.groups.slice(0, GROUPS_MAX).map(async (g) => {
          if (ctx.apiVersion >= TOPIC_ID_MIN_VERSION)
            return fetchByIds(g, request.requireStable, ctx);
          const result = await fetch(g.groupId, g.topics, request.requireStable, ctx, g);
          return { groupId: g.groupId, errorCode: result.errorCode, topics: result.topics };
        }),
      );
      return { throttleTimeMs: 0, groups };
    }
    const result = await fetch(
      request.groupId,
      request.topics,
      request.requireStable,
      ctx,
      NO_MEMBER,
    );
    if (ctx.apiVersion >= TOP_LEVEL_ERROR_MIN_VERSION) {
      return { throttleTimeMs: 0, errorCode: result.errorCode, topics: result.topics };
    }
    return { throttleTimeMs: 0, topics: withGroupErrorOnPartitions(result, request.topics ?? []) };
  },
});

/**
 * As Kafka's handleOffsetFetchRequest: DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED),
 * and on each topic: a named topic the principal may not describe answers
 * TOPIC_AUTHORIZATION_FAILED on its partitions, and is left out of an all-topics answer.
 */
async function fetch(
  groupId: string,
  topics: Topics,
  requireStable: boolean,
  ctx: RequestContext,
  member: Member,
): Promise<OffsetFetchResult> {
  if (!authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, groupId)) {
    return { errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED, topics: [] };
  }
  const mayDescribe = (t: { name: string }) =>
    authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name);
  const coordinator = ctx.broker.groupCoordinator;
  const { memberId, memberEpoch } = member;
  if (topics === null) {
    const result = await coordinator.offsetFetch({
      groupId,
      topics,
      requireStable,
      memberId,
      memberEpoch,
    });
    return { ...result, topics: result.topics.filter(mayDescribe) };
  }
  const allowed = topics.filter(mayDescribe);
  const result = await coordinator.offsetFetch({
    groupId,
    topics: allowed,
    requireStable,
    memberId,
    memberEpoch,
  });
  const denied = topics
    .filter((t) => !mayDescribe(t))
    .map((t) => ({
      name: t.name,
      partitions: t.partitionIndexes.map((partitionIndex) => ({
        partitionIndex,
        committedOffset: -1n,
        committedLeaderEpoch: -1,
        metadata: "",
        errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
      })),
    }));
  return { ...result, topics: [...result.topics, ...denied] };
}

type RequestGroup = OffsetFetchRequest["groups"][number];

/** v10: the group's topics named by id; the answer names them by id too. */
async function fetchByIds(g: RequestGroup, requireStable: boolean, ctx: RequestContext) {
  const cache = ctx.broker.metadataCache;
  const unknown: RequestGroup["topics"] = [];
  let named: OffsetFetchTopic[] | null = null;
  if (g.topics !== null) {
    named = [];
    for (const t of g.topics) {
      const topic = cache.topicById(t.topicId);
      if (topic === undefined) unknown.push(t);
      else named.push({ name: topic.name, partitionIndexes: t.partitionIndexes });
    }
  }
  const result = await fetch(g.groupId, named, requireStable, ctx, g);
  const topics = result.topics.flatMap((t) => {
    const topicId = cache.topic(t.name)?.topicId;
    return topicId === undefined ? [] : [{ ...t, topicId }];
  });
  for (const t of unknown) {
    topics.push({
      name: "",
      topicId: t.topicId,
      partitions: t.partitionIndexes.map((partitionIndex) => ({
        partitionIndex,
        committedOffset: -1n,
        committedLeaderEpoch: -1,
        metadata: "",
        errorCode: ErrorCode.UNKNOWN_TOPIC_ID,
      })),
    });
  }
  return { groupId: g.groupId, errorCode: result.errorCode, topics };
}

/** v0-1: a group-level error becomes every requested partition's error. */
function withGroupErrorOnPartitions(result: OffsetFetchResult, requested: NonNullable<Topics>) {
  if (result.errorCode === 0) return result.topics;
  return requested.map((t) => ({
    name: t.name,
    partitions: t.partitionIndexes.map((partitionIndex) => ({
      partitionIndex,
      committedOffset: -1n,
      committedLeaderEpoch: -1,
      metadata: "",
      errorCode: result.errorCode,
    })),
  }));
}
