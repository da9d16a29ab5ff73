// ShareAcknowledge: v1-2 (KIP-932)
//
// Version notes:
// * v0 was early access (Kafka 3.9/4.0); v1 is the first stable version.
// * v2 (KIP-1222): IsRenewAck allows RENEW acknowledgements (type 4: the records stay the
//   member's under a new lock of the full duration), and the response carries
//   AcquisitionLockTimeoutMs. RENEW without IsRenewAck, or before v2, is the partition's
//   INVALID_REQUEST.
// * Acknowledges records acquired through ShareFetch on an open share session: epoch 0 is
//   INVALID_SHARE_SESSION_EPOCH (only ShareFetch opens a session), -1 acknowledges and closes
//   the session, releasing what the member still holds. A partition whose acknowledgement
//   fails (records not acquired by this member, or their lock expired) is INVALID_RECORD_STATE.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";
import { byTopicId, resolveShareTopics } from "./share-requests.ts";

export const shareAcknowledgeHandler = defineHandler({
  apiKey: ApiKey.ShareAcknowledge,
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
    if (!authorize(ctx, AclOperation.READ, ResourceType.GROUP, groupId)) {
      return fail(ErrorCode.GROUP_AUTHORIZATION_FAILED);
    }
    const { resolved, refused } = resolveShareTopics(ctx, request.topics);
    const result = await ctx.broker.sharePartitionManager.shareAcknowledge(
      groupId,
      request.memberId,
      request.shareSessionEpoch,
      resolved,
      request.isRenewAck,
    );
    if (result.errorCode !== ErrorCode.NONE) return fail(result.errorCode, result.errorMessage);
    // An acknowledgement's failure is the partition's error here (no separate field).
    const responses = byTopicId(
      ctx,
      {
        ...result,
        partitions: result.partitions.map((p) => ({ ...p, errorCode: p.ackErrorCode })),
      },
      refused,
      () => ({}),
    );
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
