// Fetch: v4-17
//
// Version notes:
// * v0-3 return magic 0/1 message sets, which Kafka 4 removed (KIP-896); not offered.
// * v4: isolation level, LastStableOffset and AbortedTransactions: read_committed stops at the
//   last stable offset and lists the aborted transactions in what it returns.
// * v5: LogStartOffset. v7: incremental fetch sessions (KIP-227), see below.
// * v11: rack id (KIP-392); preferred read replica is always -1 (this broker).
// * v12: flexible. v13: topic ids instead of names (KIP-516).
// * v15: ReplicaState replaces ReplicaId (KIP-903).
//
// Followers: a request with a replica id >= 0 (ReplicaId up to v14, ReplicaState.ReplicaId from
// v15) is a follower's; it reads up to the log end offset instead of the high watermark, and its
// fetch offset is recorded as that follower's LEO, which moves the high watermark.
//
// Fetch sessions: Quill does not create sessions. Kafka's answer when its session cache is full
// is session id 0, which tells the client no session exists, so it keeps sending full fetches;
// a request naming a session id gets FETCH_SESSION_ID_NOT_FOUND and the client starts over.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey, type FetchRequest } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import type { FetchEntry, FetchOutcome } from "../server/replica-manager.ts";
import { authorizeCluster, authorizedNames } from "./authorize.ts";
import { defineHandler, type RequestContext } from "./handler.ts";

/** Topic ids arrive in v13+; a topic unknown by id is reported with this code. */
const UNKNOWN_TOPIC_NAME = "";

export const fetchHandler = defineHandler({
  apiKey: ApiKey.Fetch,
  minVersion: 4,
  maxVersion: 17,
  async handle(request, ctx) {
    if (request.sessionId !== 0) {
      return { errorCode: ErrorCode.FETCH_SESSION_ID_NOT_FOUND, sessionId: 0, responses: [] };
    }
    const usesTopicIds = ctx.apiVersion >= 13;
    const names = request.topics.map((t) => topicName(t, usesTopicIds, ctx));
    const entries: FetchEntry[] = [];
    request.topics.forEach((t, i) => {
      for (const p of t.partitions) {
        entries.push({
          topic: names[i],
          partition: p.partition,
          fetchOffset: p.fetchOffset,
          partitionMaxBytes: Math.max(0, p.partitionMaxBytes),
          currentLeaderEpoch: p.currentLeaderEpoch,
          logStartOffset: p.logStartOffset,
        });
      }
    });
    const replicaId = ctx.apiVersion >= 15 ? request.replicaState.replicaId : request.replicaId;
    const readable = readableEntries(ctx, replicaId, entries);
    const fetched = await ctx.broker.replicaManager.fetchMessages({
      maxWaitMs: request.maxWaitMs,
      minBytes: request.minBytes,
      maxBytes: Math.min(Math.max(0, request.maxBytes), ctx.broker.config["fetch.max.bytes"]),
      entries: readable === null ? entries : entries.filter((_, i) => readable[i]),
      onCancel: (listener) => ctx.conn.onClose(listener),
      replicaId,
      isolationLevel: request.isolationLevel,
    });
    const outcomes = readable === null ? fetched : withDenials(readable, fetched);
    // Followers' fetches are replication traffic, not bytes out (as Kafka counts them).
    if (replicaId < 0) recordBytesOut(ctx, entries, outcomes);
    return buildResponse(request, names, outcomes, usesTopicIds);
  },
});

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

function buildResponse(
  request: FetchRequest,
  names: readonly string[],
  outcomes: readonly FetchOutcome[],
  usesTopicIds: boolean,
) {
  let i = 0;
  return {
    errorCode: ErrorCode.NONE,
    sessionId: 0,
    responses: request.topics.map((t, ti) => ({
      topic: t.topic,
      topicId: t.topicId,
      partitions: t.partitions.map((p) => {
        const o = outcomes[i++];
        const unknownId = usesTopicIds && names[ti] === UNKNOWN_TOPIC_NAME;
        return {
          partitionIndex: p.partition,
          errorCode: unknownId ? ErrorCode.UNKNOWN_TOPIC_ID : o.errorCode,
          highWatermark: o.highWatermark,
          lastStableOffset: o.lastStableOffset,
          logStartOffset: o.logStartOffset,
          abortedTransactions:
            o.abortedTransactions?.map((t) => ({
              producerId: t.producerId,
              firstOffset: t.firstOffset,
            })) ?? null,
          preferredReadReplica: -1,
          records: o.records,
        };
      }),
    })),
  };
}
