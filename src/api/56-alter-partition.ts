// AlterPartition: v0-3 (partition leader to controller)
//
// Version notes:
// * v0 (KIP-497, as AlterIsr): the leader proposes a new ISR for partitions it leads, with its
//   leader epoch and the partition epoch (the state znode's version) it last saw. v1:
//   LeaderRecoveryState. v2: topic ids instead of names. v3: the ISR with broker epochs.
// * Only the active controller answers; others say NOT_CONTROLLER. A proposal made against an
//   older leader epoch is FENCED_LEADER_EPOCH, against another partition epoch
//   INVALID_UPDATE_VERSION; a member that is not a replica on a live broker, or is on a broker
//   in controlled shutdown, is INELIGIBLE_REPLICA (KIP-841), which v0-1 cannot carry: they get
//   OPERATION_NOT_ATTEMPTED, as Kafka's controller answers them.
// * A request from a broker the controller does not know as registered, or from another
//   registration of it (its broker epoch, KIP-380), is refused whole with STALE_BROKER_EPOCH.
// * The ISR change does not bump the leader epoch (KIP-841), only the partition epoch.
import { ErrorCode } from "../protocol/errors.ts";
import { type AlterPartitionRequest, ApiKey } from "../protocol/generated/index.ts";
import { AclOperation } from "../security/authorized-operations.ts";
import { authorizeCluster } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

type TopicData = AlterPartitionRequest["topics"][number];

export const alterPartitionHandler = defineHandler({
  apiKey: ApiKey.AlterPartition,
  minVersion: 0,
  maxVersion: 3,
  async handle(request, ctx) {
    // Only brokers (CLUSTER_ACTION on the cluster) may send it, as Kafka's KafkaApis.
    if (!authorizeCluster(ctx, AclOperation.CLUSTER_ACTION)) {
      return { throttleTimeMs: 0, errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED, topics: [] };
    }
    const controller = ctx.broker.controller;
    if (controller === null || !controller.isActive) {
      return { throttleTimeMs: 0, errorCode: ErrorCode.NOT_CONTROLLER, topics: [] };
    }
    if (controller.isStaleBrokerEpoch(request.brokerId, request.brokerEpoch)) {
      return { throttleTimeMs: 0, errorCode: ErrorCode.STALE_BROKER_EPOCH, topics: [] };
    }
    const byIds = ctx.apiVersion >= 2;
    const topics = await Promise.all(
      request.topics.map(async (t: TopicData) => {
        const name = byIds ? ctx.broker.metadataCache.topicById(t.topicId)?.name : t.topicName;
        const partitions = await Promise.all(
          t.partitions.map(async (p) => {
            if (name === undefined) {
              return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.UNKNOWN_TOPIC_ID };
            }
            const newIsr =
              ctx.apiVersion >= 3 ? p.newIsrWithEpochs.map((b) => b.brokerId) : p.newIsr;
            const outcome = await controller.alterPartition(
              request.brokerId,
              name,
              p.partitionIndex,
              p.leaderEpoch,
              p.partitionEpoch,
              newIsr,
            );
            const ineligible = outcome.errorCode === ErrorCode.INELIGIBLE_REPLICA;
            return {
              partitionIndex: p.partitionIndex,
              errorCode:
                ineligible && ctx.apiVersion < 2
                  ? ErrorCode.OPERATION_NOT_ATTEMPTED
                  : outcome.errorCode,
              leaderId: outcome.leader,
              leaderEpoch: outcome.leaderEpoch,
              isr: [...outcome.isr],
              ...(ctx.apiVersion >= 1 ? { leaderRecoveryState: 0 } : {}),
              partitionEpoch: outcome.partitionEpoch,
            };
          }),
        );
        // A topic is named in v0-1 and identified in v2+; the other field stays unset.
        return { ...(byIds ? { topicId: t.topicId } : { topicName: t.topicName }), partitions };
      }),
    );
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, topics };
  },
});
