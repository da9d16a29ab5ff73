// AddPartitionsToTxn: v0-5
//
// Version notes:
// * v1: same as v0. v2: PRODUCER_FENCED instead of INVALID_PRODUCER_EPOCH (KIP-588).
// * v3: flexible. v4: batched transactions, sent broker to broker (KIP-890); VerifyOnly asks
//   whether the partitions are already in the transaction. v5: TRANSACTION_ABORTABLE may be
//   returned (never by Quill).
// * Unknown topics or partitions get UNKNOWN_TOPIC_OR_PARTITION and the other partitions of
//   the request OPERATION_NOT_ATTEMPTED, nothing added, as in Kafka.
import { topicPartitionKey } from "../common/topic-partition.ts";
import type { TxnPartition } from "../coordinator/transaction-coordinator.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { defineHandler, type RequestContext } from "./handler.ts";
import { fencedForVersion } from "./txn-errors.ts";

type Topics = readonly { name: string; partitions: number[] }[];
/** Transactions one batched (v4+) request may carry. */
const TRANSACTIONS_PER_REQUEST_MAX = 10_000;

export const addPartitionsToTxnHandler = defineHandler({
  apiKey: ApiKey.AddPartitionsToTxn,
  minVersion: 0,
  maxVersion: 5,
  async handle(request, ctx) {
    if (ctx.apiVersion < 4) {
      const results = await addAll(
        ctx,
        request.v3AndBelowTransactionalId,
        request.v3AndBelowProducerId,
        request.v3AndBelowProducerEpoch,
        request.v3AndBelowTopics,
        false,
      );
      return {
        throttleTimeMs: 0,
        errorCode: ErrorCode.NONE,
        resultsByTransaction: [],
        resultsByTopicV3AndBelow: results,
      };
    }
    if (request.transactions.length > TRANSACTIONS_PER_REQUEST_MAX) {
      return {
        throttleTimeMs: 0,
        errorCode: ErrorCode.INVALID_REQUEST,
        resultsByTransaction: [],
        resultsByTopicV3AndBelow: [],
      };
    }
    const resultsByTransaction = [];
    for (const t of request.transactions) {
      const topicResults = await addAll(
        ctx,
        t.transactionalId,
        t.producerId,
        t.producerEpoch,
        t.topics,
        t.verifyOnly,
      );
      resultsByTransaction.push({ transactionalId: t.transactionalId, topicResults });
    }
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      resultsByTransaction,
      resultsByTopicV3AndBelow: [],
    };
  },
});

async function addAll(
  ctx: RequestContext,
  transactionalId: string,
  producerId: bigint,
  producerEpoch: number,
  topics: Topics,
  verifyOnly: boolean,
) {
  const unknown = new Set<string>();
  const partitions: TxnPartition[] = [];
  for (const t of topics) {
    const metadata = ctx.broker.metadataCache.topic(t.name);
    for (const p of t.partitions) {
      if (metadata === undefined || p < 0 || p >= metadata.partitions.length) {
        unknown.add(topicPartitionKey(t.name, p));
      }
      partitions.push({ topic: t.name, partition: p });
    }
  }
  let code: number;
  if (unknown.size > 0) {
    code = ErrorCode.OPERATION_NOT_ATTEMPTED;
  } else {
    code = await ctx.broker.transactionCoordinator.addPartitions(
      transactionalId,
      producerId,
      producerEpoch,
      partitions,
      verifyOnly,
    );
    code = fencedForVersion(code, ctx.apiVersion, 2);
  }
  return topics.map((t) => ({
    name: t.name,
    resultsByPartition: t.partitions.map((p) => ({
      partitionIndex: p,
      partitionErrorCode: unknown.has(topicPartitionKey(t.name, p))
        ? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        : code,
    })),
  }));
}
