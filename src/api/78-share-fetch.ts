// ShareFetch: v1-2 (KIP-932)
//
// Version notes:
// * v0 was early access (Kafka 3.9/4.0). v1: MaxRecords and BatchSize, AcquisitionLockTimeoutMs.
// * v2 (KIP-1222): ShareAcquireMode, 0 batch_optimized or 1 record_limit (INVALID_REQUEST
//   otherwise). Quill never acquires more than MaxRecords in either mode (it splits batches,
//   which record_limit requires and batch_optimized allows). IsRenewAck: the acknowledgements
//   may be RENEW (type 4: the records stay the member's under a new lock of the full duration)
//   and the request only acknowledges, so MaxBytes, MinBytes, MaxRecords and MaxWaitMs must be 0
//   (INVALID_REQUEST otherwise, as Kafka). RENEW without IsRenewAck, or before v2, is the
//   partition's INVALID_REQUEST.
// * Share sessions (server/share-session-cache.ts): epoch 0 opens one (acknowledgements there are
//   INVALID_REQUEST), later requests carry the next epoch (INVALID_SHARE_SESSION_EPOCH
//   otherwise, SHARE_SESSION_NOT_FOUND for none), -1 acknowledges and closes without fetching.
//   The session also ends when the connection that opened it closes, releasing what its member
//   holds (Kafka's disconnect listener); an opening for the same member replaces it.
// * Acknowledgements (piggy-backed) apply first; a partition's failure is its
//   AcknowledgeErrorCode. Then records are acquired for the member, whole batches are sent and
//   AcquiredRecords says which of their offsets are the member's. With nothing to acquire the
//   request waits up to MaxWaitMs for an append or a release.
// * READ on the group (GROUP_AUTHORIZATION_FAILED at the top) and on each topic.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";
import { byTopicId, resolveShareTopics } from "./share-requests.ts";

export const shareFetchHandler = defineHandler({
  apiKey: ApiKey.ShareFetch,
  minVersion: 1,
  maxVersion: 2,
  async handle(request, ctx) {
    const groupId = request.groupId ?? "";
    const lockMs = ctx.broker.sharePartitionManager.groupConfigs.shareRecordLockDurationMs(groupId);
    const fail = (errorCode: number, errorMessage: string | null = null) => ({
      throttleTimeMs: 0,
      errorCode,
      errorMessage,
      acquisitionLockTimeoutMs: lockMs,
      responses: [],
    });
    if (groupId === "" || request.memberId === null || request.memberId === "") {
      return fail(ErrorCode.INVALID_REQUEST, "GroupId and MemberId must be set.");
    }
    const invalid = invalidV2Fields(request);
    if (invalid !== null) return fail(ErrorCode.INVALID_REQUEST, invalid);
    if (!authorize(ctx, AclOperation.READ, ResourceType.GROUP, groupId)) {
      return fail(ErrorCode.GROUP_AUTHORIZATION_FAILED);
    }
    const { resolved, refused } = resolveShareTopics(ctx, request.topics);
    const forgotten: { topic: string; partition: number }[] = [];
    for (const f of request.forgottenTopicsData) {
      const topic = ctx.broker.metadataCache.topicById(f.topicId);
      if (topic !== undefined)
        for (const p of f.partitions) forgotten.push({ topic: topic.name, partition: p });
    }
    const result = await ctx.broker.sharePartitionManager.shareFetch({
      groupId,
      memberId: request.memberId,
      sessionEpoch: request.shareSessionEpoch,
      maxWaitMs: request.maxWaitMs,
      maxBytes: request.maxBytes,
      maxRecords: request.maxRecords,
      renewAck: request.isRenewAck,
      partitions: resolved,
      forgotten,
      onDisconnect: (listener) => ctx.conn.onClose(listener),
    });
    if (result.errorCode !== ErrorCode.NONE) return fail(result.errorCode, result.errorMessage);
    const responses = byTopicId(ctx, result, refused, (p) => ({
      acknowledgeErrorCode: p?.ackErrorCode ?? ErrorCode.NONE,
      records: p === null || p.records.length === 0 ? new Uint8Array(0) : p.records,
      acquiredRecords: (p?.acquired ?? []).map((a) => ({
        firstOffset: a.firstOffset,
        lastOffset: a.lastOffset,
        deliveryCount: a.deliveryCount,
      })),
    }));
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      acquisitionLockTimeoutMs: lockMs,
      responses,
      nodeEndpoints: [],
    };
  },
});

const ShareAcquireMode = { BATCH_OPTIMIZED: 0, RECORD_LIMIT: 1 } as const;

/** What v2's fields make invalid (Kafka's messages), or null. */
function invalidV2Fields(request: {
  shareAcquireMode: number;
  isRenewAck: boolean;
  maxBytes: number;
  minBytes: number;
  maxRecords: number;
  maxWaitMs: number;
}): string | null {
  const mode = request.shareAcquireMode;
  if (mode !== ShareAcquireMode.BATCH_OPTIMIZED && mode !== ShareAcquireMode.RECORD_LIMIT) {
    return `Unknown ShareAcquireMode ${mode}.`;
  }
  if (!request.isRenewAck) return null;
  const nonZero = (["maxBytes", "minBytes", "maxRecords", "maxWaitMs"] as const).filter(
    (f) => request[f] !== 0,
  );
  if (nonZero.length === 0) return null;
  return `${nonZero.map((f) => `${f} must be set to 0`).join(", ")} if isRenewAck is true.`;
}
