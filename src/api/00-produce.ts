// Produce: v0-11 advertised, v3-11 served
//
// Version notes:
// * v0-2 carry magic 0/1 message sets, which Kafka 4 removed (KIP-896). They are still
//   advertised, as Kafka 4.0 does (KAFKA-18659): librdkafka up to 2.11 turns gzip, snappy and
//   lz4 off unless the broker lists Produce v0. Such requests get UNSUPPORTED_VERSION.
// * v3: transactional id; magic 2 record batches only.
// * v5: LogStartOffset in the response. v8: per-batch RecordErrors and ErrorMessage (KIP-467).
// * v9: flexible. v10: CurrentLeader and NodeEndpoints tagged fields (KIP-951), left at defaults.
// * acks=-1 waits until the ISR holds every batch, at most timeoutMs (then REQUEST_TIMED_OUT).
// * acks=0 gets no response.
// * Idempotent batches (producer id >= 0) are checked against the partition's producer state:
//   a retried batch is answered with its original offsets and not written again; a sequence
//   gap is OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch INVALID_PRODUCER_EPOCH (storage's
//   producer-state-manager.ts). Transactions are not supported (no InitProducerId for them).
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import type { AppendEntry } from "../server/replica-manager.ts";
import { defineHandler, type RequestContext } from "./handler.ts";

/** The first version that carries magic 2 record batches, the only format Quill stores. */
const PRODUCE_SERVED_MIN_VERSION = 3;

/** Bytes in per topic: the batches of the partitions this leader accepted. */
function recordBytesIn(
  ctx: RequestContext,
  entries: readonly AppendEntry[],
  outcomes: readonly { errorCode: number }[],
): void {
  entries.forEach((e, i) => {
    if (e.records !== null && outcomes[i]!.errorCode === ErrorCode.NONE) {
      ctx.broker.metrics.recordBytesIn(e.topic, e.records.byteLength);
    }
  });
}

export const produceHandler = defineHandler({
  apiKey: ApiKey.Produce,
  minVersion: 0,
  maxVersion: 11,
  async handle(request, ctx) {
    const acks = request.acks;
    const entries: AppendEntry[] = [];
    for (const topic of request.topicData) {
      for (const p of topic.partitionData) {
        const records = p.records instanceof Uint8Array ? p.records : null;
        entries.push({ topic: topic.name, partition: p.index, records });
      }
    }
    const refusal =
      ctx.apiVersion < PRODUCE_SERVED_MIN_VERSION
        ? ErrorCode.UNSUPPORTED_VERSION
        : acks !== 0 && acks !== 1 && acks !== -1
          ? ErrorCode.INVALID_REQUIRED_ACKS
          : ErrorCode.NONE;
    const outcomes =
      refusal !== ErrorCode.NONE
        ? entries.map(() => ({
            errorCode: refusal,
            errorMessage: null,
            baseOffset: -1n,
            logAppendTimeMs: -1n,
            logStartOffset: -1n,
          }))
        : await ctx.broker.replicaManager.produceRecords(
            acks,
            request.timeoutMs,
            entries,
            ctx.apiVersion,
          );
    recordBytesIn(ctx, entries, outcomes);
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
