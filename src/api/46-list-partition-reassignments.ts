// ListPartitionReassignments: v0 (admin client to the controller, KIP-455)
//
// Version notes:
// * v0 (flexible): the moves in progress, of every topic (topics null) or of the partitions
//   named; a partition not being moved is left out, as Kafka leaves it out. Each lists its
//   replicas (target first, then the original ones) and the replicas being added and removed.
// * Only the active controller answers; elsewhere NOT_CONTROLLER.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation } from "../security/authorized-operations.ts";
import { authorizeCluster } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

export const listPartitionReassignmentsHandler = defineHandler({
  apiKey: ApiKey.ListPartitionReassignments,
  minVersion: 0,
  maxVersion: 0,
  async handle(request, ctx) {
    // DESCRIBE on the cluster, as Kafka.
    if (!authorizeCluster(ctx, AclOperation.DESCRIBE)) {
      return {
        throttleTimeMs: 0,
        errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        errorMessage: "Cluster authorization failed.",
        topics: [],
      };
    }
    const controller = ctx.broker.controller;
    const wanted =
      request.topics === null
        ? null
        : new Map(request.topics.map((t) => [t.name, t.partitionIndexes] as const));
    const ongoing =
      controller === null || !controller.isActive
        ? null
        : await controller.listPartitionReassignments(wanted);
    if (ongoing === null) {
      return {
        throttleTimeMs: 0,
        errorCode: ErrorCode.NOT_CONTROLLER,
        errorMessage: "This broker is not the controller.",
        topics: [],
      };
    }
    const byTopic = new Map<string, typeof ongoing>();
    for (const p of ongoing) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p]);
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      topics: [...byTopic].map(([name, list]) => ({
        name,
        partitions: list.map((p) => ({
          partitionIndex: p.partition,
          replicas: [...p.replicas],
          addingReplicas: [...p.addingReplicas],
          removingReplicas: [...p.removingReplicas],
        })),
      })),
    };
  },
});
