// Produce: v3-11
//
// Version notes:
// * v0-2 carry magic 0/1 message sets, which Kafka 4 removed (KIP-896); not offered.
// * v3: transactional id; magic 2 record batches only.
// * v5: LogStartOffset in the response. v8: per-batch RecordErrors and ErrorMessage (KIP-467).
// * v9: flexible. v10: CurrentLeader and NodeEndpoints tagged fields (KIP-951), left at defaults.
// * acks=0 gets no response. Transactions and idempotence arrive with their own issues; until
//   InitProducerId is offered, clients send plain batches (producer id -1).
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import type { AppendEntry } from "../server/replica-manager.ts";
import { defineHandler } from "./handler.ts";

export const produceHandler = defineHandler({
  apiKey: ApiKey.Produce,
  minVersion: 3,
  maxVersion: 11,
  handle(request, ctx) {
    const acks = request.acks;
    const entries: AppendEntry[] = [];
    for (const topic of request.topicData) {
      for (const p of topic.partitionData) {
        const records = p.records instanceof Uint8Array ? p.records : null;
        entries.push({ topic: topic.name, partition: p.index, records });
      }
    }
    const invalidAcks = acks !== 0 && acks !== 1 && acks !== -1;
    const outcomes = invalidAcks
      ? entries.map(() => ({ errorCode: ErrorCode.INVALID_REQUIRED_ACKS, errorMessage: null,
          baseOffset: -1n, logAppendTimeMs: -1n, logStartOffset: -1n }))
      : ctx.broker.replicaManager.appendRecords(acks, entries);
    if (acks === 0) return null;
    let i = 0;
    return {
      responses: request.topicData.map((topic) => ({
        name: topic.name,
        partitionResponses: topic.partitionData.map((p) => {
          const o = outcomes[i++];
          return {
            index: p.index,
            errorCode: o.errorCode,
            baseOffset: o.baseOffset,
            logAppendTimeMs: o.logAppendTimeMs,
            logStartOffset: o.logStartOffset,
            errorMessage: o.errorCode === ErrorCode.NONE ? null : o.errorMessage,
          };
        }),
      })),
      throttleTimeMs: 0,
    };
  },
});
