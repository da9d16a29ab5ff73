// Fetch: v4-18
//
// Version notes:
// * v0-3 return magic 0/1 message sets, which Kafka 4 removed (KIP-896); not offered.
// * v4: isolation level, LastStableOffset and AbortedTransactions: read_committed stops at the
//   last stable offset and lists the aborted transactions in what it returns.
// * v5: LogStartOffset. v7: incremental fetch sessions (KIP-227), see below.
// * v11: rack id (KIP-392): with replica.selector.class set to Kafka's RackAwareReplicaSelector,
//   the leader names an in-sync replica in the consumer's rack as preferred read replica (and
//   returns no records for that partition); a v11+ consumer may read from a follower, up to the
//   follower's high watermark.
// * v12: flexible. v13: topic ids instead of names (KIP-516).
// * v15: ReplicaState replaces ReplicaId (KIP-903). v16-17: as v15 (KIP-951, KIP-853).
// * v18: a follower's HighWatermark tagged field (KIP-1166, for KRaft followers); ignored, as
//   a leader needs nothing from it.
//
// Followers: a request with a replica id >= 0 (ReplicaId up to v14, ReplicaState.ReplicaId from
// v15) is a follower's; it reads up to the log end offset instead of the high watermark, and its
// fetch offset is recorded as that follower's LEO, which moves the high watermark.
//
// Fetch sessions (KIP-227, server/fetch-manager.ts): a full fetch at epoch 0 opens a session
// when a slot of max.incremental.fetch.session.cache.slots is free (or can be freed); later
// fetches name it with the next epoch and list only changed partitions, and the response lists
// only partitions with news. Unknown sessions, wrong epochs and a switch between topic names and
// ids are the response's top-level error (FETCH_SESSION_ID_NOT_FOUND,
// INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR), with no partitions.
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { ApiKey, type FetchRequest } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import type { FetchContext, PartitionAnswer } from "../server/fetch-manager.ts";
import { type CachedPartition, UNKNOWN_TOPIC_NAME } from "../server/fetch-session-cache.ts";
import type { FetchEntry, FetchOutcome } from "../server/replica-manager.ts";
import { authorizeCluster, authorizedNames } from "./authorize.ts";
import { defineHandler, type RequestContext } from "./handler.ts";

export const fetchHandler = defineHandler({
  apiKey: ApiKey.Fetch,
  minVersion: 4,
  maxVersion: 18,
  async handle(request, ctx) {
    const usesTopicIds = ctx.apiVersion >= 13;
    const replicaId = ctx.apiVersion >= 15 ? request.replicaState.replicaId : request.replicaId;
    const context = fetchContext(request, ctx, replicaId, usesTopicIds);
    if (typeof context === "number") return { errorCode: context, sessionId: 0, responses: [] };
    const entries: FetchEntry[] = context.partitions.map((p) => ({
      topic: p.topic,
      partition: p.partition,
      fetchOffset: p.fetchOffset,
      partitionMaxBytes: p.partitionMaxBytes,
      currentLeaderEpoch: p.currentLeaderEpoch,
      logStartOffset: p.logStartOffset,
    }));
    const readable = readableEntries(ctx, replicaId, entries);
    if (replicaId >= 0 && !isLiveOtherBroker(ctx, replicaId)) {
      // Authorization first: an unauthorized follower gets Kafka's answer, not this check's.
      const refused = entries.map((_, i) =>
        readable !== null && !readable[i]
          ? { ...DENIED, records: [] }
          : { ...NOT_A_REPLICA, records: [] },
      );
      return buildResponse(context, refused, usesTopicIds);
    }
    const maxBytes = Math.min(Math.max(0, request.maxBytes), ctx.broker.config["fetch.max.bytes"]);
    const fetched = await ctx.broker.replicaManager.fetchMessages({
      maxWaitMs: request.maxWaitMs,
      minBytes: request.minBytes,
      maxBytes: replicaId < 0 ? Math.min(maxBytes, quotaWindowBytes(ctx)) : maxBytes,
      entries: readable === null ? entries : entries.filter((_, i) => readable[i]),
      onCancel: (listener) => ctx.conn.onClose(listener),
      replicaId,
      isolationLevel: request.isolationLevel,
      clientRack: replicaId < 0 && ctx.apiVersion >= 11 ? request.rackId : null,
    });
    let outcomes = readable === null ? fetched : withDenials(readable, fetched);
    // Followers' fetches are replication traffic, not bytes out (as Kafka counts them).
    if (replicaId >= 0) ctx.quotaExempt = true;
    else if (ctx.broker.clientQuotas.active) outcomes = withinQuota(ctx, outcomes);
    if (replicaId < 0) recordBytesOut(ctx, entries, outcomes);
    return buildResponse(context, outcomes, usesTopicIds);
  },
});

/** Kafka caps a consumer's fetch at what its byte-rate quota allows over the quota window. */
function quotaWindowBytes(ctx: RequestContext): number {
  const quotas = ctx.broker.clientQuotas;
  if (!quotas.active) return Number.MAX_SAFE_INTEGER;
  const clientId = ctx.header.clientId ?? "";
  const bytes = quotas.maxValueInQuotaWindow("consumer_byte_rate", ctx.conn.principal, clientId);
  return Math.max(1, Math.min(Number.MAX_SAFE_INTEGER, Math.floor(bytes)));
}

/**
 * consumer_byte_rate as Kafka's fetch path applies it: the records' bytes are recorded, and a
 * fetch over the quota is answered without records (its bytes taken back) and throttled.
 */
function withinQuota(ctx: RequestContext, outcomes: FetchOutcome[]): FetchOutcome[] {
  const quotas = ctx.broker.clientQuotas;
  const { principal } = ctx.conn;
  const clientId = ctx.header.clientId ?? "";
  const bytes = outcomes.reduce((sum, o) => sum + rangesBytes(o), 0);
  const nowMs = Date.now();
  const type = "consumer_byte_rate";
  const throttleMs = quotas.recordAndGetThrottleTimeMs(type, principal, clientId, bytes, nowMs);
  if (throttleMs === 0) return outcomes;
  ctx.throttleMs = throttleMs;
  quotas.unrecord(type, principal, clientId, bytes, nowMs);
  return outcomes.map((o) => {
    for (const range of o.records) range.release();
    return { ...o, records: [] };
  });
}

/** The request's session context, or the top-level error code that refuses it. */
function fetchContext(
  request: FetchRequest,
  ctx: RequestContext,
  replicaId: number,
  usesTopicIds: boolean,
): FetchContext | number {
  try {
    return ctx.broker.replicaManager.fetchManager.newContext(
      {
        sessionId: request.sessionId,
        epoch: request.sessionEpoch,
        privileged: replicaId >= 0,
        usesTopicIds,
        topicNameById: (topicId) => ctx.broker.metadataCache.topicById(topicId)?.name,
      },
      requestedPartitions(request, usesTopicIds, ctx),
      forgottenKeys(request, usesTopicIds),
    );
  } catch (e) {
    if (!(e instanceof KafkaError)) throw e;
    return e.code;
  }
}

/**
 * Which entries the principal may fetch, or null when all (no authorizer). As Kafka: a follower
 * (a replica id) needs CLUSTER_ACTION on the cluster, a consumer READ on each topic; refused
 * partitions answer TOPIC_AUTHORIZATION_FAILED.
 */
function readableEntries(
  ctx: RequestContext,
  replicaId: number,
  entries: readonly FetchEntry[],
): boolean[] | null {
  if (ctx.broker.authorizer === null) return null;
  if (replicaId >= 0) {
    const allowed = authorizeCluster(ctx, AclOperation.CLUSTER_ACTION);
    return entries.map(() => allowed);
  }
  const topics = new Set(entries.map((e) => e.topic));
  const readable = authorizedNames(ctx, AclOperation.READ, ResourceType.TOPIC, topics);
  return entries.map((e) => readable.has(e.topic));
}

/**
 * Beyond Kafka: a follower's fetch (a replica id) counts only from another broker the controller
 * lists as live. A forged fetch in the name of a dead replica would otherwise put it back in the
 * ISR and let acks=all produces succeed with one copy. Whether the broker is a replica of each
 * partition is the ReplicaManager's check (NOT_LEADER_OR_FOLLOWER, as Kafka answers).
 */
function isLiveOtherBroker(ctx: RequestContext, replicaId: number): boolean {
  return (
    replicaId !== ctx.broker.brokerId && ctx.broker.metadataCache.broker(replicaId) !== undefined
  );
}

const NOT_A_REPLICA: FetchOutcome = {
  errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER,
  highWatermark: -1n as FetchOutcome["highWatermark"],
  lastStableOffset: -1n as FetchOutcome["lastStableOffset"],
  logStartOffset: -1n as FetchOutcome["logStartOffset"],
  abortedTransactions: null,
  records: [],
};

const DENIED: FetchOutcome = {
  errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
  highWatermark: -1n as FetchOutcome["highWatermark"],
  lastStableOffset: -1n as FetchOutcome["lastStableOffset"],
  logStartOffset: -1n as FetchOutcome["logStartOffset"],
  abortedTransactions: null,
  records: [],
};

/** The fetched outcomes put back among the refused entries' denials, in request order. */
function withDenials(readable: readonly boolean[], fetched: readonly FetchOutcome[]) {
  let next = 0;
  return readable.map((ok) => (ok ? fetched[next++]! : { ...DENIED, records: [] }));
}

const topicKeyOf = (usesTopicIds: boolean, topic: string, topicId: Uint8Array) =>
  usesTopicIds ? Buffer.from(topicId).toString("hex") : topic;

/** The request's partitions as a session keeps them, in request order. */
function requestedPartitions(
  request: FetchRequest,
  usesTopicIds: boolean,
  ctx: RequestContext,
): CachedPartition[] {
  const partitions: CachedPartition[] = [];
  for (const t of request.topics) {
    const topic = topicName(t, usesTopicIds, ctx);
    const topicKey = topicKeyOf(usesTopicIds, t.topic, t.topicId);
    for (const p of t.partitions) {
      partitions.push({
        key: `${topicKey}:${p.partition}`,
        topic,
        topicId: t.topicId,
        partition: p.partition,
        fetchOffset: p.fetchOffset,
        partitionMaxBytes: Math.max(0, p.partitionMaxBytes),
        currentLeaderEpoch: p.currentLeaderEpoch,
        logStartOffset: p.logStartOffset,
        highWatermark: -1n,
        leaderLogStartOffset: -1n,
      });
    }
  }
  return partitions;
}

function forgottenKeys(request: FetchRequest, usesTopicIds: boolean): string[] {
  return request.forgottenTopicsData.flatMap((t) => {
    const topicKey = topicKeyOf(usesTopicIds, t.topic, t.topicId);
    return t.partitions.map((p) => `${topicKey}:${p}`);
  });
}

function recordBytesOut(
  ctx: RequestContext,
  entries: readonly FetchEntry[],
  outcomes: readonly FetchOutcome[],
): void {
  entries.forEach((e, i) => {
    let bytes = 0;
    for (const range of outcomes[i]!.records) bytes += range.sizeBytes;
    if (bytes > 0) ctx.broker.metrics.recordBytesOut(e.topic, bytes);
  });
}

function topicName(
  t: FetchRequest["topics"][number],
  usesTopicIds: boolean,
  ctx: RequestContext,
): string {
  if (!usesTopicIds) return t.topic;
  return ctx.broker.metadataCache.topicById(t.topicId)?.name ?? UNKNOWN_TOPIC_NAME;
}

type ResponsePartition = ReturnType<typeof responsePartition>;

function responsePartition(p: CachedPartition, o: FetchOutcome, errorCode: number) {
  return {
    partitionIndex: p.partition,
    errorCode,
    highWatermark: o.highWatermark,
    lastStableOffset: o.lastStableOffset,
    logStartOffset: o.logStartOffset,
    abortedTransactions:
      o.abortedTransactions?.map((t) => ({
        producerId: t.producerId,
        firstOffset: t.firstOffset,
      })) ?? null,
    preferredReadReplica: o.preferredReadReplica ?? -1,
    records: o.records,
  };
}

/**
 * The partitions the context lists, grouped into topics where consecutive partitions share one
 * (a full fetch keeps the request's topics; an incremental one follows the session's order).
 */
function buildResponse(
  context: FetchContext,
  outcomes: readonly FetchOutcome[],
  usesTopicIds: boolean,
) {
  const { partitions } = context;
  const errorCodes = partitions.map((p, i) =>
    usesTopicIds && p.topic === UNKNOWN_TOPIC_NAME
      ? ErrorCode.UNKNOWN_TOPIC_ID
      : outcomes[i]!.errorCode,
  );
  const answers: PartitionAnswer[] = partitions.map((_, i) => ({
    errorCode: errorCodes[i]!,
    highWatermark: outcomes[i]!.highWatermark,
    logStartOffset: outcomes[i]!.logStartOffset,
    recordsBytes: rangesBytes(outcomes[i]!),
    preferredReadReplica: outcomes[i]!.preferredReadReplica ?? -1,
  }));
  const { sessionId, listed } = context.respond(answers);
  const responses: { topic: string; topicId: Uint8Array; partitions: ResponsePartition[] }[] = [];
  let last: CachedPartition | null = null;
  for (const i of listed) {
    const p = partitions[i]!;
    if (last === null || !sameTopic(last, p, usesTopicIds)) {
      responses.push({ topic: p.topic, topicId: p.topicId, partitions: [] });
    }
    last = p;
    responses.at(-1)!.partitions.push(responsePartition(p, outcomes[i]!, errorCodes[i]!));
  }
  return { errorCode: ErrorCode.NONE, sessionId, responses };
}

function sameTopic(a: CachedPartition, b: CachedPartition, usesTopicIds: boolean): boolean {
  if (!usesTopicIds) return a.topic === b.topic;
  if (a.topicId === b.topicId) return true;
  return a.topicId.every((byte, i) => byte === b.topicId[i]);
}

function rangesBytes(o: FetchOutcome): number {
  let bytes = 0;
  for (const range of o.records) bytes += range.sizeBytes;
  return bytes;
}
