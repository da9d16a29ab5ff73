// ControlledShutdown: v0-3 (broker to controller, ZooKeeper mode)
//
// Version notes:
// * v0 uses request header v0 (no client id). v2: broker epoch. v3: flexible.
// * A broker epoch older than the asker's current registration's is STALE_BROKER_EPOCH (KIP-380).
// * A broker about to stop asks the controller to move its leaderships to other ISR members
//   and take it out of ISRs; the answer lists partitions it still leads (no other live ISR
//   member), and the broker retries before stopping anyway. A broker that is not the active
//   controller answers NOT_CONTROLLER, and the asker looks for the controller again.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation } from "../security/authorized-operations.ts";
import { authorizeCluster } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

export const controlledShutdownHandler = defineHandler({
  apiKey: ApiKey.ControlledShutdown,
  minVersion: 0,
  maxVersion: 3,
  async handle(request, ctx) {
    // Only brokers (CLUSTER_ACTION on the cluster) may send it, as Kafka's KafkaApis.
    if (!authorizeCluster(ctx, AclOperation.CLUSTER_ACTION)) {
      return { errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED, remainingPartitions: [] };
    }
    const controller = ctx.broker.controller;
    if (controller === null || !controller.isActive) {
      return { errorCode: ErrorCode.NOT_CONTROLLER, remainingPartitions: [] };
    }
    const outcome = await controller.controlledShutdown(request.brokerId, request.brokerEpoch);
    return {
      errorCode: outcome.errorCode,
      remainingPartitions: outcome.remaining.map((p) => ({
        topicName: p.topic,
        partitionIndex: p.partition,
      })),
    };
  },
});
