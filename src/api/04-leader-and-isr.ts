// LeaderAndIsr: v0-7 (controller to broker, ZooKeeper mode)
//
// Version notes:
// * v0-1: partition states ungrouped, each naming its topic. v1: IsNew. v2: grouped by topic,
//   broker epoch. v3: adding/removing replicas. v4: flexible. v5: topic ids, Type, and the
//   response lists errors by topic id. v6: LeaderRecoveryState. v7: IsKRaftController.
// * The states update the MetadataCache (what Metadata answers and where clients are sent),
//   then the ReplicaManager makes this broker leader or follower of each partition.
// * A request for an earlier registration of this broker (broker epoch, v2+) is refused with
//   STALE_BROKER_EPOCH (controller-epoch.ts); then the controller epoch is checked.
// * A FULL request (v5+ Type 2, sent when this broker (re)joins) names every replica assigned
//   here: any other log is a stray the broker missed the StopReplica of, and is deleted.
import { topicPartitionKey } from "../common/topic-partition.ts";
import { LeaderAndIsrType } from "../controller/controller-requests.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey, type LeaderAndIsrRequest } from "../protocol/generated/index.ts";
import { AclOperation } from "../security/authorized-operations.ts";
import type { PartitionLeaderState } from "../server/metadata-cache.ts";
import { authorizeCluster } from "./authorize.ts";
import { acceptControllerRequest, isStaleBrokerEpoch } from "./controller-epoch.ts";
import { defineHandler } from "./handler.ts";

const ZERO_ID = new Uint8Array(16);

export const leaderAndIsrHandler = defineHandler({
  apiKey: ApiKey.LeaderAndIsr,
  minVersion: 0,
  maxVersion: 7,
  async handle(request, ctx) {
    // Only brokers (CLUSTER_ACTION on the cluster) may send it, as Kafka's KafkaApis.
    if (!authorizeCluster(ctx, AclOperation.CLUSTER_ACTION)) {
      return { errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED };
    }
    const v5 = ctx.apiVersion >= 5;
    const states = statesOf(request, ctx.apiVersion);
    const cache = ctx.broker.metadataCache;
    if (await isStaleBrokerEpoch(cache, request.brokerEpoch)) {
      const errorCode = ErrorCode.STALE_BROKER_EPOCH;
      return v5 ? { errorCode, topics: [] } : { errorCode, partitionErrors: [] };
    }
    const { controllerId, controllerEpoch } = request;
    const stale = !(await acceptControllerRequest(ctx.broker, controllerId, controllerEpoch));
    let errors = new Map<string, number>();
    if (!stale) {
      cache.applyLeaderStates(states);
      await ctx.broker.replicaManager.createNewLogs(states);
      errors = ctx.broker.replicaManager.becomeLeaderOrFollower(request.controllerEpoch, states);
      if (v5 && request.type === LeaderAndIsrType.FULL) {
        await ctx.broker.replicaManager.deleteStrayReplicas(states);
      }
    }
    // TopicName is in v0-4 partition errors only (v5 groups them under topic ids).
    const partitionError = (s: PartitionLeaderState) => ({
      ...(v5 ? {} : { topicName: s.topic }),
      partitionIndex: s.partition,
      errorCode: errors.get(topicPartitionKey(s.topic, s.partition)) ?? ErrorCode.NONE,
    });
    const errorCode = stale ? ErrorCode.STALE_CONTROLLER_EPOCH : ErrorCode.NONE;
    if (!v5) return { errorCode, partitionErrors: stale ? [] : states.map(partitionError) };
    const byTopic = new Map<string, PartitionLeaderState[]>();
    for (const s of stale ? [] : states) byTopic.set(s.topic, [...(byTopic.get(s.topic) ?? []), s]);
    return {
      errorCode,
      topics: [...byTopic.values()].map((list) => ({
        topicId: list[0]!.topicId,
        partitionErrors: list.map(partitionError),
      })),
    };
  },
});

function statesOf(request: LeaderAndIsrRequest, version: number): PartitionLeaderState[] {
  const grouped =
    version >= 2
      ? request.topicStates.flatMap((t) =>
          t.partitionStates.map((p) => ({
            ...p,
            topicName: t.topicName,
            topicId: t.topicId,
          })),
        )
      : request.ungroupedPartitionStates.map((p) => ({ ...p, topicId: ZERO_ID }));
  return grouped.map((p) => ({
    topic: p.topicName,
    topicId: p.topicId,
    partition: p.partitionIndex,
    leader: p.leader,
    leaderEpoch: p.leaderEpoch,
    partitionEpoch: p.partitionEpoch,
    isr: p.isr,
    replicas: p.replicas,
    isNew: p.isNew,
  }));
}
