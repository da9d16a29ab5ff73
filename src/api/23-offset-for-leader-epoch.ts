// OffsetForLeaderEpoch: v0-4
//
// Version notes:
// * v0: the end offset of a leader epoch (KIP-101). v1: the epoch found is returned too, the
//   largest one at or below the requested (KIP-279). v2: CurrentLeaderEpoch fences stale
//   callers (KIP-320) and throttle time. v3: ReplicaId (followers name themselves; consumers
//   send -1). v4: flexible.
// * Only the leader answers, for followers finding where their log diverges and for consumers
//   checking for truncation after a leader change; anyone else gets NOT_LEADER_OR_FOLLOWER.

import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize, authorizeCluster } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

export const offsetForLeaderEpochHandler = defineHandler({
  apiKey: ApiKey.OffsetForLeaderEpoch,
  minVersion: 0,
  maxVersion: 4,
  handle(request, ctx) {
    const rm = ctx.broker.replicaManager;
    const v1 = ctx.apiVersion >= 1;
    // A follower (replica id >= 0) needs CLUSTER_ACTION, a client DESCRIBE on each topic.
    const follower = request.replicaId >= 0;
    const clusterAction = follower && authorizeCluster(ctx, AclOperation.CLUSTER_ACTION);
    const allowed = (topic: string) =>
      follower ? clusterAction : authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic);
    return {
      ...(ctx.apiVersion >= 2 ? { throttleTimeMs: 0 } : {}),
      topics: request.topics.map((t) => ({
        topic: t.topic,
        partitions: t.partitions.map((p) => {
          if (!allowed(t.topic)) {
            const errorCode = ErrorCode.TOPIC_AUTHORIZATION_FAILED;
            return {
              errorCode,
              partition: p.partition,
              endOffset: -1n,
              ...(v1 ? { leaderEpoch: -1 } : {}),
            };
          }
          const found = rm.lastOffsetForLeaderEpoch(
            t.topic,
            p.partition,
            p.currentLeaderEpoch,
            p.leaderEpoch,
          );
          return {
            errorCode: found.errorCode,
            partition: p.partition,
            // Not ignorable: v0 lacks the field, so it stays unset there.
            ...(v1 ? { leaderEpoch: found.leaderEpoch } : {}),
            endOffset: found.endOffset,
          };
        }),
      })),
    };
  },
});
