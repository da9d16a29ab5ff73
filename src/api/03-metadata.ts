// Metadata: v0-13
//
// Version notes:
// * v0: an empty topic list means all topics; v1+ uses null for that. v1: controller id, internal flag.
// * v2: cluster id. v4: AllowAutoTopicCreation (before it, creation was always allowed).
// * v7: leader epochs. v8+: topic authorized operations, v8-10 the cluster's too, when asked
//   (security/authorized-operations.ts: with no authorizer, every operation of the resource
//   type, as Kafka answers). A topic looked up by an unknown id has no name and gets none.
// * v9: flexible. v10: topic ids (KIP-516); v12 lets clients ask by id with a null name (or an
//   empty one, as Kafka 4's Java consumer sends for the topics a regex subscription assigned); an
//   unknown or unauthorized id is answered with the name it was asked with.
// * v13: a top-level ErrorCode (REBOOTSTRAP_REQUIRED, KIP-1102), never set: Quill has no
//   condition that makes a client rebootstrap.
// * Auto-creation (auto.create.topics.enable) creates a missing topic with num.partitions and
//   default.replication.factor; Quill creates it synchronously, so the answer already has it
//   instead of Kafka's first LEADER_NOT_AVAILABLE.
// * With an authorizer, as Kafka: topics the principal may not DESCRIBE are left out of an
//   all-topics answer and are TOPIC_AUTHORIZATION_FAILED when named (existing or not);
//   auto-creation needs CREATE on the cluster or the topic, else TOPIC_AUTHORIZATION_FAILED.
import { INTERNAL_TOPICS } from "../common/internal-topics.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { ApiKey, type MetadataRequest } from "../protocol/generated/index.ts";
import {
  AclOperation,
  authorizedOperations,
  clusterAuthorizedOperations,
  type RequestAuthorizer,
  ResourceType,
} from "../security/authorized-operations.ts";
import type { TopicMetadata } from "../server/metadata-cache.ts";
import { authorize, authorizeCluster, requestAuthorizer } from "./authorize.ts";
import { defineHandler, type RequestContext } from "./handler.ts";

const NO_TOPIC_ID = new Uint8Array(16);

export const metadataHandler = defineHandler({
  apiKey: ApiKey.Metadata,
  minVersion: 0,
  maxVersion: 13,
  async handle(request, ctx) {
    const cache = ctx.broker.metadataCache;
    const all = request.topics === null || (ctx.apiVersion === 0 && request.topics.length === 0);
    const live = new Set(cache.brokers.map((b) => b.nodeId));
    const describe = (t: TopicMetadata) => describeWith(t, live, ctx.apiVersion);
    const described = all
      ? [...cache.topics()].filter((t) => mayList(ctx, t.name)).map(describe)
      : await Promise.all(request.topics!.map((t) => lookUp(t, request, ctx, describe)));
    const authorizer = requestAuthorizer(ctx);
    const topics = request.includeTopicAuthorizedOperations
      ? described.map((t) => withAuthorizedOperations(t, authorizer))
      : described;
    return {
      throttleTimeMs: 0,
      brokers: cache.brokersOn(ctx.conn.listenerName),
      clusterId: cache.clusterId,
      controllerId: cache.controllerId,
      topics,
      ...(request.includeClusterAuthorizedOperations
        ? { clusterAuthorizedOperations: clusterAuthorizedOperations(authorizer) }
        : {}),
    };
  },
});

const mayDescribe = (ctx: RequestContext, topic: string) =>
  authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic);

/** Listing every topic filters quietly, as Kafka's logIfDenied = false. */
const mayList = (ctx: RequestContext, topic: string) =>
  authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic, false);

const mayCreate = (ctx: RequestContext, topic: string) =>
  authorizeCluster(ctx, AclOperation.CREATE, false) ||
  authorize(ctx, AclOperation.CREATE, ResourceType.TOPIC, topic);

function withAuthorizedOperations<T extends { name: string | null; errorCode: number }>(
  topic: T,
  authorizer: RequestAuthorizer | null,
) {
  if (topic.name === null || topic.errorCode === ErrorCode.TOPIC_AUTHORIZATION_FAILED) {
    return topic;
  }
  const topicAuthorizedOperations = authorizedOperations(
    ResourceType.TOPIC,
    topic.name,
    authorizer,
  );
  return { ...topic, topicAuthorizedOperations };
}

type RequestedTopic = NonNullable<MetadataRequest["topics"]>[number];

async function lookUp(
  t: RequestedTopic,
  request: MetadataRequest,
  ctx: RequestContext,
  describe: (t: TopicMetadata) => ReturnType<typeof describeWith>,
) {
  const cache = ctx.broker.metadataCache;
  // Kafka's client asks by id with the name null or, as the Java 4 consumer does, empty.
  if (t.name === null || (t.name === "" && t.topicId.some((b) => b !== 0))) {
    const byId = cache.topicById(t.topicId);
    // The name asked with comes back (null, or the Java consumer's empty name, which its
    // metadata code needs: a null name in an answer to it stops the consumer's network thread).
    if (byId === undefined) return missing(t.name, t.topicId, ErrorCode.UNKNOWN_TOPIC_ID);
    if (!mayDescribe(ctx, byId.name)) {
      return missing(t.name, t.topicId, ErrorCode.TOPIC_AUTHORIZATION_FAILED);
    }
    return describe(byId);
  }
  if (!mayDescribe(ctx, t.name)) {
    return missing(t.name, NO_TOPIC_ID, ErrorCode.TOPIC_AUTHORIZATION_FAILED);
  }
  const known = cache.topic(t.name);
  if (known !== undefined) return describe(known);
  const autoCreate =
    request.allowAutoTopicCreation && ctx.broker.config["auto.create.topics.enable"];
  if (!autoCreate) return missing(t.name, NO_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
  if (!mayCreate(ctx, t.name)) {
    return missing(t.name, NO_TOPIC_ID, ErrorCode.TOPIC_AUTHORIZATION_FAILED);
  }
  try {
    // Auto-created partitions count against the client's controller_mutation_rate without
    // being refused or throttled here, as Kafka's permissive quota for Metadata.
    const quota = ctx.broker.clientQuotas.controllerMutationQuota(
      ctx.conn.principal,
      ctx.header.clientId ?? "",
      false,
    );
    await ctx.broker.adminManager.createTopic(
      { name: t.name, numPartitions: -1, replicationFactor: -1, assignments: [], configs: [] },
      false,
      quota,
    );
  } catch (e) {
    if (!(e instanceof KafkaError)) throw e;
    if (e.code !== ErrorCode.TOPIC_ALREADY_EXISTS) return missing(t.name, NO_TOPIC_ID, e.code);
  }
  const created = cache.topic(t.name);
  return created === undefined
    ? missing(t.name, NO_TOPIC_ID, ErrorCode.LEADER_NOT_AVAILABLE)
    : describe(created);
}

function missing(name: string | null, topicId: Uint8Array, errorCode: number) {
  return { errorCode, name, topicId, isInternal: false, partitions: [] };
}

/**
 * A partition whose leader is not a live broker (or which has none, -1) is LEADER_NOT_AVAILABLE
 * with leader -1, as Kafka's MetadataCache answers; v5+ lists as offline the replicas on dead
 * brokers and those the controller stated offline, in a failed log dir (the field does not exist
 * before v5).
 */
function describeWith(t: TopicMetadata, live: ReadonlySet<number>, version: number) {
  return {
    errorCode: ErrorCode.NONE,
    name: t.name,
    topicId: t.topicId,
    isInternal: INTERNAL_TOPICS.has(t.name),
    partitions: t.partitions.map((p) => {
      const leaderAlive = live.has(p.leaderId);
      return {
        errorCode: leaderAlive ? ErrorCode.NONE : ErrorCode.LEADER_NOT_AVAILABLE,
        partitionIndex: p.partition,
        leaderId: leaderAlive ? p.leaderId : -1,
        leaderEpoch: p.leaderEpoch,
        replicaNodes: [...p.replicas],
        isrNodes: [...p.isr],
        offlineReplicas:
          version >= 5
            ? p.replicas.filter((r) => !live.has(r) || p.offlineReplicas.includes(r))
            : [],
      };
    }),
  };
}
