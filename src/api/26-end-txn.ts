// EndTxn: v0-5
//
// Version notes:
// * v1: same as v0. v2: PRODUCER_FENCED instead of INVALID_PRODUCER_EPOCH (KIP-588).
// * v3: flexible. v4: TRANSACTION_ABORTABLE may be returned (never by Quill).
// * v5 (KIP-890 part 2, transactions v2): the coordinator bumps the producer epoch at every
//   commit and abort and answers with the producer id and epoch to use next (a new id once the
//   epoch is spent); a retry with the epoch before the bump gets the first answer; an abort with
//   no transaction open bumps the epoch too (TransactionCoordinator.endTransactionV2).
// * The answer comes once the decision (PrepareCommit/PrepareAbort) is durable; the markers
//   are written after it, and the next transaction of the id waits (CONCURRENT_TRANSACTIONS)
//   until they are.

import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";
import { fencedForVersion } from "./txn-errors.ts";

/** The first version whose commits and aborts bump the epoch (KIP-890 part 2). */
const EPOCH_BUMP_MIN_VERSION = 5;

export const endTxnHandler = defineHandler({
  apiKey: ApiKey.EndTxn,
  minVersion: 0,
  maxVersion: 5,
  async handle(request, ctx) {
    const id = request.transactionalId;
    if (!authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, id)) {
      const errorCode = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
      return { throttleTimeMs: 0, errorCode, producerId: -1n, producerEpoch: -1 };
    }
    const coordinator = ctx.broker.transactionCoordinator;
    const { transactionalId, producerId, producerEpoch, committed } = request;
    if (ctx.apiVersion >= EPOCH_BUMP_MIN_VERSION) {
      const next = await coordinator.endTransactionV2(
        transactionalId,
        producerId,
        producerEpoch,
        committed,
      );
      return { throttleTimeMs: 0, ...next };
    }
    const errorCode = await coordinator.endTransaction(
      transactionalId,
      producerId,
      producerEpoch,
      committed,
    );
    return {
      throttleTimeMs: 0,
      errorCode: fencedForVersion(errorCode, ctx.apiVersion, 2),
      producerId: -1n,
      producerEpoch: -1,
    };
  },
});
