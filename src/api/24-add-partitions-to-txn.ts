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
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize, authorizeCluster } from "./authorize.ts";
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
      const denied = clientDenials(
        ctx,
        request.v3AndBelowTransactionalId,
        request.v3AndBelowTopics,
      );
      const results =
        denied ??
        (await addAll(
          ctx,
          request.v3AndBelowTransactionalId,
          request.v3AndBelowProducerId,
          request.v3AndBelowProducerEpoch,
          request.v3AndBelowTopics,
          false,
        ));
      return {
        throttleTimeMs: 0,
        errorCode: ErrorCode.NONE,
        resultsByTransaction: [],
        resultsByTopicV3AndBelow: results,
      };
    }
    // v4+ is sent by brokers verifying a transaction: CLUSTER_ACTION, as Kafka.
    if (!authorizeCluster(ctx, AclOperation.CLUSTER_ACTION)) {
      return {
        throttleTimeMs: 0,
        errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        resultsByTransaction: [],
        resultsByTopicV3AndBelow: [],
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

/**
 * A client's request (v0-3), as Kafka: without WRITE on the transactional id every partition is
 * TRANSACTIONAL_ID_AUTHORIZATION_FAILED; without WRITE on a topic its partitions are
 * TOPIC_AUTHORIZATION_FAILED and the others OPERATION_NOT_ATTEMPTED. Null when all is allowed.
 */
function clientDenials(ctx: RequestContext, transactionalId: string, topics: Topics) {
  const { WRITE } = AclOperation;
  const txnAllowed = authorize(ctx, WRITE, ResourceType.TRANSACTIONAL_ID, transactionalId);
  const deniedTopics = new Set(
    topics.filter((t) => !authorize(ctx, WRITE, ResourceType.TOPIC, t.name)).map((t) => t.name),
  );
  if (txnAllowed && deniedTopics.size === 0) return null;
  const codeOf = (topic: string) =>
    !txnAllowed
      ? ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
      : deniedTopics.has(topic)
        ? ErrorCode.TOPIC_AUTHORIZATION_FAILED
        : ErrorCode.OPERATION_NOT_ATTEMPTED;
  return topics.map((t) => ({
    name: t.name,
    resultsByPartition: t.partitions.map((p) => ({
      partitionIndex: p,
      partitionErrorCode: codeOf(t.name),
    })),
  }));
}

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
