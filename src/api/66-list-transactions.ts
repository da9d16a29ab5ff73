// ListTransactions: v0-1 (KIP-664)
//
// Version notes:
// * v0: flexible from the start; filters by state names and producer ids (empty: all).
//   Unknown state names are returned in UnknownStateFilters, as Kafka does.
// * v1: DurationFilter (KIP-994): only transactions open longer than that many ms (-1: all).
// * Lists the transactional ids of the __transaction_state partitions this broker leads.

import { TRANSACTION_STATE_NAMES } from "../coordinator/transaction-metadata.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

const STATE_NAMES = new Set(Object.values(TRANSACTION_STATE_NAMES));

export const listTransactionsHandler = defineHandler({
  apiKey: ApiKey.ListTransactions,
  minVersion: 0,
  maxVersion: 1,
  handle(request, ctx) {
    const states = new Set(request.stateFilters);
    const producerIds = new Set(request.producerIdFilters);
    const unknownStateFilters = request.stateFilters.filter((s) => !STATE_NAMES.has(s));
    const minDurationMs = ctx.apiVersion >= 1 ? Number(request.durationFilter) : -1;
    const nowMs = Date.now();
    const transactionStates = [];
    for (const m of ctx.broker.transactionStateManager.all()) {
      const name = TRANSACTION_STATE_NAMES[m.state];
      if (states.size > 0 && !states.has(name)) continue;
      if (producerIds.size > 0 && !producerIds.has(m.producerId)) continue;
      // Only the ids the principal may DESCRIBE, as Kafka.
      const { DESCRIBE } = AclOperation;
      if (!authorize(ctx, DESCRIBE, ResourceType.TRANSACTIONAL_ID, m.transactionalId, false)) {
        continue;
      }
      if (
        minDurationMs >= 0 &&
        (m.txnStartTimestampMs < 0 || nowMs - m.txnStartTimestampMs < minDurationMs)
      )
        continue;
      transactionStates.push({
        transactionalId: m.transactionalId,
        producerId: m.producerId,
        transactionState: name,
      });
    }
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, unknownStateFilters, transactionStates };
  },
});
