// EndTxn: v0-4
//
// Version notes:
// * v1: same as v0. v2: PRODUCER_FENCED instead of INVALID_PRODUCER_EPOCH (KIP-588).
// * v3: flexible. v4: TRANSACTION_ABORTABLE may be returned (never by Quill).
// * v5 (KIP-890 part 2: the epoch bumped at every commit, ProducerId/ProducerEpoch in the
//   response) is unstable in the specs and not offered.
// * The answer comes once the decision (PrepareCommit/PrepareAbort) is durable; the markers
//   are written after it, and the next transaction of the id waits (CONCURRENT_TRANSACTIONS)
//   until they are.

import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";
import { fencedForVersion } from "./txn-errors.ts";

export const endTxnHandler = defineHandler({
  apiKey: ApiKey.EndTxn,
  minVersion: 0,
  maxVersion: 4,
  async handle(request, ctx) {
    const id = request.transactionalId;
    if (!authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, id)) {
      const errorCode = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
      return { throttleTimeMs: 0, errorCode, producerId: -1n, producerEpoch: -1 };
    }
    const errorCode = await ctx.broker.transactionCoordinator.endTransaction(
      request.transactionalId,
      request.producerId,
      request.producerEpoch,
      request.committed,
    );
    return {
      throttleTimeMs: 0,
      errorCode: fencedForVersion(errorCode, ctx.apiVersion, 2),
      producerId: -1n,
      producerEpoch: -1,
    };
  },
});
