// UpdateMetadata: v0-8 (controller to broker, ZooKeeper mode)
//
// Version notes:
// * v0: one host and port per broker. v1: endpoints. v2: rack. v3: listener names. v4:
//   offline replicas. v5: grouped by topic, broker epoch. v6: flexible. v7: topic ids.
//   v8: IsKRaftController.
// * Every broker answers Metadata from its own cache; this is how the controller keeps the
//   caches equal: the live brokers replace the cache's, the partition states overlay it.
// * A request for an earlier registration of this broker (broker epoch, v5+) is refused with
//   STALE_BROKER_EPOCH (controller-epoch.ts).
// * Every endpoint is kept (Metadata answers with the listener a client came through); the one
//   named like this broker's inter.broker.listener.name is the inter-broker endpoint (before v3,
//   the one whose protocol has that name; else the first).
import { type Listener, SECURITY_PROTOCOLS } from "../config/listeners.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey, type UpdateMetadataRequest } from "../protocol/generated/index.ts";
import { AclOperation } from "../security/authorized-operations.ts";
import type { BrokerEndpoint, PartitionLeaderState } from "../server/metadata-cache.ts";
import { authorizeCluster } from "./authorize.ts";
import { acceptControllerRequest, isStaleBrokerEpoch } from "./controller-epoch.ts";
import { defineHandler } from "./handler.ts";

const ZERO_ID = new Uint8Array(16);

export const updateMetadataHandler = defineHandler({
  apiKey: ApiKey.UpdateMetadata,
  minVersion: 0,
  maxVersion: 8,
  async handle(request, ctx) {
    // Only brokers (CLUSTER_ACTION on the cluster) may send it, as Kafka's KafkaApis.
    if (!authorizeCluster(ctx, AclOperation.CLUSTER_ACTION)) {
      return { errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED };
    }
    const cache = ctx.broker.metadataCache;
    if (await isStaleBrokerEpoch(cache, request.brokerEpoch)) {
      return { errorCode: ErrorCode.STALE_BROKER_EPOCH };
    }
    if (
      !(await acceptControllerRequest(ctx.broker, request.controllerId, request.controllerEpoch))
    ) {
      return { errorCode: ErrorCode.STALE_CONTROLLER_EPOCH };
    }
    const interBroker = ctx.broker.config["inter.broker.listener.name"];
    cache.setLiveBrokers(brokersOf(request, ctx.apiVersion, interBroker));
    cache.applyLeaderStates(statesOf(request, ctx.apiVersion));
    return { errorCode: ErrorCode.NONE };
  },
});

function brokersOf(
  request: UpdateMetadataRequest,
  version: number,
  interBrokerListener: string,
): BrokerEndpoint[] {
  return request.liveBrokers.flatMap((b): BrokerEndpoint[] => {
    if (version === 0) return [{ nodeId: b.id, host: b.v0Host, port: b.v0Port, rack: null }];
    const named = (e: (typeof b.endpoints)[number]) =>
      (e.listener || SECURITY_PROTOCOLS[e.securityProtocol] || "").toUpperCase();
    const endpoint = b.endpoints.find((e) => named(e) === interBrokerListener) ?? b.endpoints[0];
    if (endpoint === undefined) return [];
    const listeners = b.endpoints.flatMap((e): Listener[] => {
      const protocol = SECURITY_PROTOCOLS[e.securityProtocol];
      if (protocol === undefined) return [];
      return [
        {
          listenerName: named(e),
          host: e.host,
          port: e.port,
          securityProtocol: protocol,
        },
      ];
    });
    return [{ nodeId: b.id, host: endpoint.host, port: endpoint.port, rack: b.rack, listeners }];
  });
}

function statesOf(request: UpdateMetadataRequest, version: number): PartitionLeaderState[] {
  const flat =
    version >= 5
      ? request.topicStates.flatMap((t) =>
          t.partitionStates.map((p) => ({
            ...p,
            topicName: t.topicName,
            topicId: t.topicId,
          })),
        )
      : request.ungroupedPartitionStates.map((p) => ({ ...p, topicId: ZERO_ID }));
  return flat.map((p) => ({
    topic: p.topicName,
    topicId: p.topicId,
    partition: p.partitionIndex,
    leader: p.leader,
    leaderEpoch: p.leaderEpoch,
    partitionEpoch: p.zkVersion,
    isr: p.isr,
    replicas: p.replicas,
    offlineReplicas: p.offlineReplicas,
  }));
}
