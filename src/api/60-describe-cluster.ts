// DescribeCluster: v0-2
//
// Version notes:
// * v0 (KIP-700): brokers, cluster id, controller id, and the cluster's authorized operations
//   when asked for (security/authorized-operations.ts: with no authorizer, every operation a
//   cluster supports, as Kafka answers).
// * v1 (KIP-919): EndpointType. A broker describes brokers (1); asking it for controllers (2)
//   is MISMATCHED_ENDPOINT_TYPE and an unknown type UNSUPPORTED_ENDPOINT_TYPE (in v0 both are
//   INVALID_REQUEST), as in Kafka.
// * v2 (KIP-1073): IncludeFencedBrokers and each broker's IsFenced. A ZooKeeper-mode cluster has
//   no fenced brokers (a broker that lost its session is gone from /brokers/ids), so the list is
//   the registered brokers whatever is asked, each IsFenced false, as Kafka's ZooKeeper brokers.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import {
  AUTHORIZED_OPERATIONS_NOT_REQUESTED,
  clusterAuthorizedOperations,
} from "../security/authorized-operations.ts";
import { requestAuthorizer } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

const EndpointType = { BROKER: 1, CONTROLLER: 2 } as const;
export const describeClusterHandler = defineHandler({
  apiKey: ApiKey.DescribeCluster,
  minVersion: 0,
  maxVersion: 2,
  handle(request, ctx) {
    const v0 = ctx.apiVersion === 0;
    const asked = request.endpointType;
    if (asked !== EndpointType.BROKER) {
      const known = asked === EndpointType.CONTROLLER;
      return {
        throttleTimeMs: 0,
        errorCode: v0
          ? ErrorCode.INVALID_REQUEST
          : known
            ? ErrorCode.MISMATCHED_ENDPOINT_TYPE
            : ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
        errorMessage: known
          ? "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of " +
            "type CONTROLLER"
          : `Unsupported endpoint type ${asked}`,
      };
    }
    const cache = ctx.broker.metadataCache;
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      // EndpointType is not ignorable, so v0 must leave it at its default.
      ...(v0 ? {} : { endpointType: EndpointType.BROKER }),
      clusterId: cache.clusterId,
      controllerId: cache.controllerId,
      brokers: cache
        .brokersOn(ctx.conn.listenerName)
        .map((b) => ({ brokerId: b.nodeId, host: b.host, port: b.port, rack: b.rack })),
      clusterAuthorizedOperations: request.includeClusterAuthorizedOperations
        ? clusterAuthorizedOperations(requestAuthorizer(ctx))
        : AUTHORIZED_OPERATIONS_NOT_REQUESTED,
    };
  },
});
