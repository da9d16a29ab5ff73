// DescribeTransactions: v0 (KIP-664)
//
// Version notes:
// * v0: flexible from the start. Each id's state (Kafka's state names), timeout, start time,
//   producer id and epoch, and the partitions of its open transaction.
// * An id this coordinator does not hold is TRANSACTIONAL_ID_NOT_FOUND; one whose state
//   partition another broker leads NOT_COORDINATOR, one still loading
//   COORDINATOR_LOAD_IN_PROGRESS, as in Kafka.

import { TRANSACTION_STATE_NAMES } from "../coordinator/transaction-metadata.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

/** Ids one request may ask about; Kafka has no limit, but every list needs one. */
const IDS_MAX = 10_000;

export const describeTransactionsHandler = defineHandler({
  apiKey: ApiKey.DescribeTransactions,
  minVersion: 0,
  maxVersion: 0,
  handle(request, ctx) {
    const state = ctx.broker.transactionStateManager;
    return {
      throttleTimeMs: 0,
      transactionStates: request.transactionalIds.map((transactionalId, i) => {
        const empty = {
          transactionalId,
          transactionState: "",
          transactionTimeoutMs: 0,
          transactionStartTimeMs: -1n,
          producerId: -1n,
          producerEpoch: -1,
          topics: [],
        };
        if (i >= IDS_MAX) return { ...empty, errorCode: ErrorCode.INVALID_REQUEST };
        const { DESCRIBE } = AclOperation;
        if (!authorize(ctx, DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactionalId)) {
          return { ...empty, errorCode: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED };
        }
        const notReady = state.readiness(transactionalId);
        if (notReady !== null) return { ...empty, errorCode: notReady };
        const m = state.get(transactionalId);
        if (m === undefined) return { ...empty, errorCode: ErrorCode.TRANSACTIONAL_ID_NOT_FOUND };
        return {
          errorCode: ErrorCode.NONE,
          transactionalId,
          transactionState: TRANSACTION_STATE_NAMES[m.state],
          transactionTimeoutMs: m.txnTimeoutMs,
          transactionStartTimeMs: BigInt(m.txnStartTimestampMs),
          producerId: m.producerId,
          producerEpoch: m.producerEpoch,
          topics: [...m.partitionsByTopic()].map(([topic, partitions]) => ({ topic, partitions })),
        };
      }),
    };
  },
});
