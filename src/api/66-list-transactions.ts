// ListTransactions: v0-2 (KIP-664)
//
// Version notes:
// * v0: flexible from the start; filters by state names and producer ids (empty: all).
//   Unknown state names are returned in UnknownStateFilters, as Kafka does.
// * v1: DurationFilter (KIP-994): only transactions open longer than that many ms (-1: all).
// * v2: TransactionalIdPattern (KIP-1152): only ids the regular expression matches whole (null or
//   empty: all). Kafka compiles it with RE2/J; Quill refuses what could make JavaScript's
//   backtracking engine stall (util/safe-pattern.ts) with INVALID_REGULAR_EXPRESSION, as Kafka
//   refuses a pattern RE2/J cannot compile.
// * Lists the transactional ids of the __transaction_state partitions this broker leads.

import { TRANSACTION_STATE_NAMES } from "../coordinator/transaction-metadata.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { compileSafePattern } from "../util/safe-pattern.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

const STATE_NAMES = new Set(Object.values(TRANSACTION_STATE_NAMES));

export const listTransactionsHandler = defineHandler({
  apiKey: ApiKey.ListTransactions,
  minVersion: 0,
  maxVersion: 2,
  handle(request, ctx) {
    const source = ctx.apiVersion >= 2 ? request.transactionalIdPattern : null;
    const pattern = source === null || source === "" ? null : compileSafePattern(source);
    if (typeof pattern === "string") {
      const errorCode = ErrorCode.INVALID_REGULAR_EXPRESSION;
      return { throttleTimeMs: 0, errorCode, unknownStateFilters: [], transactionStates: [] };
    }
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
      if (pattern !== null && !pattern.test(m.transactionalId)) continue;
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
