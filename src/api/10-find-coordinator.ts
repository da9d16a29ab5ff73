// FindCoordinator: v0-6
//
// Version notes:
// * v1: KeyType (0 group, 1 transaction). v3: flexible.
// * v4: batched CoordinatorKeys (KIP-699); the single Key and top-level answer are then unused.
// * v5: TRANSACTION_ABORTABLE may be returned (KIP-890). v6: KeyType 2, share groups (KIP-932).
// * A single broker coordinates every group itself; unknown key types get INVALID_REQUEST.
// * Share keys ("group:topicId:partition", sent by brokers, CLUSTER_ACTION): the leader of the
//   key's __share_group_state partition, created on the first such request.
// * Transactional ids: the leader of the id's __transaction_state partition, which is created
//   on the first such request (COORDINATOR_NOT_AVAILABLE if that fails or has no leader yet).
// * In a cluster a group's coordinator is the leader of its __consumer_offsets partition, as in
//   Kafka; the first such request creates the topic (coordinator/offsets-topic.ts) and waits a
//   moment for its leaders, then answers COORDINATOR_NOT_AVAILABLE if none is known yet.

import { findGroupCoordinator } from "../coordinator/offsets-topic.ts";
import { SHARE_STATE_TOPIC } from "../coordinator/share-state-log.ts";
import { partitionForKey, TRANSACTION_STATE_TOPIC } from "../coordinator/transaction-log.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { type BrokerEndpoint, endpointOn } from "../server/metadata-cache.ts";
import { authorize, authorizeCluster } from "./authorize.ts";
import { defineHandler, type RequestContext } from "./handler.ts";

const BATCHED_KEYS_MIN_VERSION = 4;
/** Keys one request may ask about; Kafka has no limit, but every list needs one. */
const COORDINATOR_KEYS_MAX = 10_000;

/**
 * How long a group's FindCoordinator waits for the leader of a new __consumer_offsets partition:
 * clients retry COORDINATOR_NOT_AVAILABLE only a few times (kafkajs five).
 */
const COORDINATOR_WAIT_MS = 5_000;

const KeyType = { GROUP: 0, TRANSACTION: 1, SHARE: 2 } as const;

interface CoordinatorAnswer {
  readonly key: string;
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
  readonly errorCode: number;
  readonly errorMessage: string | null;
}

export const findCoordinatorHandler = defineHandler({
  apiKey: ApiKey.FindCoordinator,
  minVersion: 0,
  maxVersion: 6,
  async handle(request, ctx) {
    if (request.keyType === KeyType.TRANSACTION) {
      await ctx.broker.transactionStateManager.ensureTopic().catch(() => undefined);
    }
    if (request.keyType === KeyType.SHARE) {
      await ctx.broker.shareCoordinator.ensureTopic().catch(() => undefined);
    }
    if (ctx.apiVersion >= BATCHED_KEYS_MIN_VERSION) {
      const keys = request.coordinatorKeys.slice(0, COORDINATOR_KEYS_MAX);
      const tooMany = request.coordinatorKeys
        .slice(COORDINATOR_KEYS_MAX)
        .map((key) => failure(key, ErrorCode.INVALID_REQUEST, "Too many coordinator keys."));
      return {
        throttleTimeMs: 0,
        coordinators: [
          ...(await Promise.all(keys.map((key) => coordinatorFor(key, request.keyType, ctx)))),
          ...tooMany,
        ],
      };
    }
    const answer = await coordinatorFor(request.key, request.keyType, ctx);
    return {
      throttleTimeMs: 0,
      errorCode: answer.errorCode,
      errorMessage: answer.errorMessage,
      nodeId: answer.nodeId,
      host: answer.host,
      port: answer.port,
    };
  },
});

async function coordinatorFor(
  key: string,
  keyType: number,
  ctx: RequestContext,
): Promise<CoordinatorAnswer> {
  // DESCRIBE on the group or transactional id, as Kafka's handleFindCoordinatorRequest.
  if (keyType === KeyType.GROUP || keyType === KeyType.TRANSACTION) {
    const group = keyType === KeyType.GROUP;
    const type = group ? ResourceType.GROUP : ResourceType.TRANSACTIONAL_ID;
    if (!authorize(ctx, AclOperation.DESCRIBE, type, key)) {
      return group
        ? failure(key, ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
        : failure(
            key,
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            "Transactional Id authorization failed.",
          );
    }
  }
  switch (keyType) {
    case KeyType.GROUP: {
      const { metadataCache, adminManager } = ctx.broker;
      const coordinator = await findGroupCoordinator(
        key,
        metadataCache,
        adminManager,
        COORDINATOR_WAIT_MS,
      );
      const endpoint = coordinator && endpointOn(coordinator, ctx.conn.listenerName);
      // Kafka's answer when the coordinator lacks the client's listener, or is not known.
      if (coordinator === undefined || endpoint === undefined) {
        return failure(
          key,
          ErrorCode.COORDINATOR_NOT_AVAILABLE,
          "The coordinator is not available.",
        );
      }
      return {
        key,
        nodeId: coordinator.nodeId,
        host: endpoint.host,
        port: endpoint.port,
        errorCode: ErrorCode.NONE,
        errorMessage: null,
      };
    }
    case KeyType.TRANSACTION:
      return answerWith(key, transactionCoordinatorFor(key, ctx), ctx);
    case KeyType.SHARE:
      // Only brokers ask, as Kafka's share-partition leaders do.
      if (!authorizeCluster(ctx, AclOperation.CLUSTER_ACTION)) {
        return failure(
          key,
          ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
          "Cluster authorization failed.",
        );
      }
      return answerWith(key, shareCoordinatorFor(key, ctx), ctx);
    default:
      return failure(key, ErrorCode.INVALID_REQUEST, `Unknown coordinator key type ${keyType}.`);
  }
}

function answerWith(
  key: string,
  coordinator: BrokerEndpoint | undefined,
  ctx: RequestContext,
): CoordinatorAnswer {
  const endpoint = coordinator && endpointOn(coordinator, ctx.conn.listenerName);
  if (coordinator === undefined || endpoint === undefined) {
    return failure(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available.");
  }
  return {
    key,
    nodeId: coordinator.nodeId,
    host: endpoint.host,
    port: endpoint.port,
    errorCode: ErrorCode.NONE,
    errorMessage: null,
  };
}

/** The live leader of the id's __transaction_state partition. */
function transactionCoordinatorFor(key: string, ctx: RequestContext) {
  const cache = ctx.broker.metadataCache;
  const topic = cache.topic(TRANSACTION_STATE_TOPIC);
  if (topic === undefined) return undefined;
  const partition = topic.partitions[ctx.broker.transactionStateManager.partitionFor(key)];
  // No leader yet (the topic was just created): COORDINATOR_NOT_AVAILABLE, as Kafka answers,
  // rather than a broker that may not become the leader.
  if (partition === undefined || partition.leaderId < 0) return undefined;
  return cache.broker(partition.leaderId);
}

/** The live leader of the share key's __share_group_state partition. */
function shareCoordinatorFor(key: string, ctx: RequestContext) {
  const cache = ctx.broker.metadataCache;
  const topic = cache.topic(SHARE_STATE_TOPIC);
  if (topic === undefined) return undefined;
  const partition = topic.partitions[partitionForKey(key, topic.partitions.length)];
  if (partition === undefined || partition.leaderId < 0) return undefined;
  return cache.broker(partition.leaderId);
}

function failure(key: string, errorCode: number, errorMessage: string): CoordinatorAnswer {
  return { key, nodeId: -1, host: "", port: -1, errorCode, errorMessage };
}
