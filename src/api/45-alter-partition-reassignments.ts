// AlterPartitionReassignments: v0 (admin client to the controller, KIP-455)
//
// Version notes:
// * v0 (flexible): per partition the target replicas, or null to cancel a move in progress.
// * Only the active controller answers (NOT_CONTROLLER elsewhere, and the admin client finds the
//   controller again). The answer comes once each move has started; the move itself runs in the
//   controller (controller/partition-reassignment.ts). Per partition: UNKNOWN_TOPIC_OR_PARTITION,
//   INVALID_REPLICA_ASSIGNMENT (empty, duplicates, brokers not registered),
//   NO_REASSIGNMENT_IN_PROGRESS (a cancel with nothing to cancel), as Kafka's controller answers.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation } from "../security/authorized-operations.ts";
import { authorizeCluster } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

export const alterPartitionReassignmentsHandler = defineHandler({
  apiKey: ApiKey.AlterPartitionReassignments,
  minVersion: 0,
  maxVersion: 0,
  async handle(request, ctx) {
    // ALTER on the cluster, as Kafka.
    if (!authorizeCluster(ctx, AclOperation.ALTER)) {
      return {
        throttleTimeMs: 0,
        errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        errorMessage: "Cluster authorization failed.",
        responses: [],
      };
    }
    const controller = ctx.broker.controller;
    const requests = request.topics.flatMap((t) =>
      t.partitions.map((p) => ({
        topic: t.name,
        partition: p.partitionIndex,
        replicas: p.replicas,
      })),
    );
    const outcomes =
      controller === null || !controller.isActive
        ? null
        : await controller.alterPartitionReassignments(requests);
    if (outcomes === null) {
      return {
        throttleTimeMs: 0,
        errorCode: ErrorCode.NOT_CONTROLLER,
        errorMessage: "This broker is not the controller.",
        responses: [],
      };
    }
    let i = 0;
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      responses: request.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => {
          const outcome = outcomes[i++]!;
          return {
            partitionIndex: p.partitionIndex,
            errorCode: outcome.errorCode,
            errorMessage: outcome.message,
          };
        }),
      })),
    };
  },
});
