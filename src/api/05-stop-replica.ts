// StopReplica: v0-4 (controller to broker, ZooKeeper mode)
//
// Version notes:
// * v0: partitions ungrouped. v1: grouped by topic, broker epoch. v2: flexible. v3: a leader
//   epoch and a delete flag per partition (the request-level flag is gone). v4:
//   IsKRaftController.
// * A request for an earlier registration of this broker (broker epoch, v1+) is refused with
//   STALE_BROKER_EPOCH (controller-epoch.ts).
// * The controller sends it with deletion to the replicas of a topic being deleted, and
//   removes the topic's znodes only once every replica answered: the broker forgets their
//   leadership and the ReplicaManager stops and deletes them.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey, type StopReplicaRequest } from "../protocol/generated/index.ts";
import { AclOperation } from "../security/authorized-operations.ts";
import { authorizeCluster } from "./authorize.ts";
import { acceptControllerRequest, isStaleBrokerEpoch } from "./controller-epoch.ts";
import { defineHandler } from "./handler.ts";

interface StoppedPartition {
  readonly topic: string;
  readonly partition: number;
  readonly deletePartition: boolean;
  /** Kafka's EpochDuringDelete (-2) marks a deleted topic; versions before 3 carry none. */
  readonly topicDeleted: boolean;
}

/** Kafka's LeaderAndIsr.EpochDuringDelete: the controller is deleting the whole topic. */
const EPOCH_DURING_DELETE = -2;

export const stopReplicaHandler = defineHandler({
  apiKey: ApiKey.StopReplica,
  minVersion: 0,
  maxVersion: 4,
  async handle(request, ctx) {
    // Only brokers (CLUSTER_ACTION on the cluster) may send it, as Kafka's KafkaApis.
    if (!authorizeCluster(ctx, AclOperation.CLUSTER_ACTION)) {
      return { errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED };
    }
    const cache = ctx.broker.metadataCache;
    if (await isStaleBrokerEpoch(cache, request.brokerEpoch)) {
      return { errorCode: ErrorCode.STALE_BROKER_EPOCH, partitionErrors: [] };
    }
    if (
      !(await acceptControllerRequest(ctx.broker, request.controllerId, request.controllerEpoch))
    ) {
      return { errorCode: ErrorCode.STALE_CONTROLLER_EPOCH, partitionErrors: [] };
    }
    const requested = partitionsOf(request, ctx.apiVersion);
    // Beyond Kafka: a deletion of a partition ZooKeeper still assigns here is refused whole;
    // the embedded broker has no controller, so it refuses deleting any topic it has.
    const guard = ctx.broker.controllerRequestGuard;
    const deletions = requested.filter((p) => p.deletePartition);
    const kept =
      guard !== null
        ? await guard.stillAssigned(deletions)
        : new Set(
            deletions
              .filter((p) => cache.topic(p.topic) !== undefined)
              .map((p) => `${p.topic}-${p.partition}`),
          );
    const partitions = requested.filter((p) => !kept.has(`${p.topic}-${p.partition}`));
    const deleted = partitions.filter((p) => p.deletePartition);
    // A replica removed by a reassignment leaves its topic alive: its states stay known here,
    // and UpdateMetadata keeps them current, as Kafka's cache does.
    const gone = new Set(deleted.filter((p) => p.topicDeleted).map((p) => p.topic));
    for (const topic of gone) cache.forgetLeaderStates(topic);
    const replicaManager = ctx.broker.replicaManager;
    await replicaManager.stopReplicas(deleted, true);
    await replicaManager.stopReplicas(
      partitions.filter((p) => !p.deletePartition),
      false,
    );
    return {
      errorCode: ErrorCode.NONE,
      partitionErrors: requested.map((p) => ({
        topicName: p.topic,
        partitionIndex: p.partition,
        errorCode: kept.has(`${p.topic}-${p.partition}`)
          ? ErrorCode.STALE_CONTROLLER_EPOCH
          : ErrorCode.NONE,
      })),
    };
  },
});

function partitionsOf(request: StopReplicaRequest, version: number): StoppedPartition[] {
  if (version >= 3) {
    return request.topicStates.flatMap((t) =>
      t.partitionStates.map((p) => ({
        topic: t.topicName,
        partition: p.partitionIndex,
        deletePartition: p.deletePartition,
        topicDeleted: p.deletePartition && p.leaderEpoch === EPOCH_DURING_DELETE,
      })),
    );
  }
  const deletePartition = request.deletePartitions;
  if (version >= 1) {
    return request.topics.flatMap((t) =>
      t.partitionIndexes.map((partition) => ({
        topic: t.name,
        partition,
        deletePartition,
        topicDeleted: deletePartition,
      })),
    );
  }
  return request.ungroupedPartitions.map((p) => ({
    topic: p.topicName,
    partition: p.partitionIndex,
    deletePartition,
    topicDeleted: deletePartition,
  }));
}
