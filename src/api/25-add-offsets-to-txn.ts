// AddOffsetsToTxn: v0-4
//
// Version notes:
// * v1: same as v0. v2: PRODUCER_FENCED instead of INVALID_PRODUCER_EPOCH (KIP-588).
// * v3: flexible. v4: TRANSACTION_ABORTABLE may be returned (never by Quill).
// * Adds the group's __consumer_offsets partition (Kafka's hash of the group id over 50
//   partitions) to the transaction; its marker commits or drops the offsets TxnOffsetCommit
//   left pending.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";
import { fencedForVersion } from "./txn-errors.ts";

export const addOffsetsToTxnHandler = defineHandler({
  apiKey: ApiKey.AddOffsetsToTxn,
  minVersion: 0,
  maxVersion: 4,
  async handle(request, ctx) {
    // WRITE on the transactional id, then READ on the group, as Kafka.
    const { WRITE, READ } = AclOperation;
    if (!authorize(ctx, WRITE, ResourceType.TRANSACTIONAL_ID, request.transactionalId)) {
      return { throttleTimeMs: 0, errorCode: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED };
    }
    if (!authorize(ctx, READ, ResourceType.GROUP, request.groupId)) {
      return { throttleTimeMs: 0, errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED };
    }
    const errorCode =
      request.groupId === ""
        ? ErrorCode.INVALID_GROUP_ID
        : await ctx.broker.transactionCoordinator.addOffsets(
            request.transactionalId,
            request.producerId,
            request.producerEpoch,
            request.groupId,
          );
    return { throttleTimeMs: 0, errorCode: fencedForVersion(errorCode, ctx.apiVersion, 2) };
  },
});
