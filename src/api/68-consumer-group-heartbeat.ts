// ConsumerGroupHeartbeat: v0-1 (KIP-848)
//
// Version notes:
// * v0: the member id of a joining member (epoch 0) is chosen by the coordinator when empty.
//   v1: the client chooses it (a UUID) and SubscribedTopicRegex is added (RE2 syntax, resolved by
//   the coordinator against the cluster's topics; one that cannot be matched safely is
//   INVALID_REGULAR_EXPRESSION, docs/consumer-groups.md).
// * The wire speaks topic ids; the coordinator works with names, resolved here from the
//   metadata cache (a partition of a topic this broker does not know is left out, as Kafka's
//   coordinator ignores owned partitions of deleted topics).
// * A share group holding the id is GROUP_ID_NOT_FOUND, "Group G is not a consumer group.", as in
//   Kafka 4.
import type { Assignment } from "../coordinator/consumer-group-assignors.ts";
import type { HeartbeatResult } from "../coordinator/consumer-group-manager.ts";
import { ErrorCode } from "../protocol/errors.ts";
import {
  ApiKey,
  type ConsumerGroupHeartbeatRequest,
  type ConsumerGroupHeartbeatResponse,
  type Init,
} from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import type { MetadataCache } from "../server/metadata-cache.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

type Response = Init<ConsumerGroupHeartbeatResponse>;

export const consumerGroupHeartbeatHandler = defineHandler({
  apiKey: ApiKey.ConsumerGroupHeartbeat,
  minVersion: 0,
  maxVersion: 1,
  async handle(request, ctx) {
    const fail = (errorCode: number, errorMessage: string | null = null): Response => ({
      throttleTimeMs: 0,
      errorCode,
      errorMessage,
      memberId: request.memberId,
      memberEpoch: request.memberEpoch,
      heartbeatIntervalMs: 0,
      assignment: null,
    });
    if (!authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.groupId)) {
      return fail(ErrorCode.GROUP_AUTHORIZATION_FAILED);
    }
    if (ctx.apiVersion >= 1 && request.memberEpoch === 0 && request.memberId === "") {
      return fail(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.");
    }
    const cache = ctx.broker.metadataCache;
    const result = await ctx.broker.groupCoordinator.consumerGroupHeartbeat({
      groupId: request.groupId,
      memberId: request.memberId,
      memberEpoch: request.memberEpoch,
      instanceId: request.instanceId,
      rackId: request.rackId,
      rebalanceTimeoutMs: request.rebalanceTimeoutMs,
      subscribedTopicNames: request.subscribedTopicNames,
      subscribedTopicRegex: request.subscribedTopicRegex,
      serverAssignor: request.serverAssignor,
      owned: ownedByName(request, cache),
      clientId: ctx.header.clientId ?? "",
      clientHost: `/${ctx.conn.remoteAddress}`,
    });
    return response(result, cache);
  },
});

function ownedByName(request: ConsumerGroupHeartbeatRequest, cache: MetadataCache) {
  if (request.topicPartitions === null) return null;
  const owned = new Map<string, Set<number>>();
  for (const t of request.topicPartitions) {
    const topic = cache.topicById(t.topicId);
    if (topic !== undefined) owned.set(topic.name, new Set(t.partitions));
  }
  return owned;
}

function response(result: HeartbeatResult, cache: MetadataCache): Response {
  return {
    throttleTimeMs: 0,
    errorCode: result.errorCode,
    errorMessage: result.errorMessage,
    memberId: result.memberId,
    memberEpoch: result.memberEpoch,
    heartbeatIntervalMs: result.heartbeatIntervalMs,
    assignment:
      result.assignment === null ? null : { topicPartitions: byId(result.assignment, cache) },
  };
}

/** An assignment by topic id, for the wire (topics deleted since are left out). */
export function byId(assignment: Assignment, cache: MetadataCache) {
  const out: { topicId: Uint8Array; topicName: string; partitions: number[] }[] = [];
  for (const [name, partitions] of assignment) {
    const topic = cache.topic(name);
    if (topic === undefined) continue;
    out.push({
      topicId: topic.topicId,
      topicName: name,
      partitions: [...partitions].sort((a, b) => a - b),
    });
  }
  return out;
}
