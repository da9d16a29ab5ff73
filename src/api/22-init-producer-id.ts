// InitProducerId: v0-5
//
// Version notes:
// * v1: same as v0. v2: flexible. v3: ProducerId and ProducerEpoch in the request (KIP-360),
//   for a transactional producer to bump its epoch. v4: PRODUCER_FENCED may be returned
//   (KIP-588). v5: TRANSACTION_ABORTABLE may be returned (KIP-890).
// * Idempotent producers (null transactional id) get a new producer id with epoch 0 every time,
//   whatever id and epoch they send: Kafka's TransactionCoordinator.handleInitProducerId
//   "always blindly accept[s] the request and return[s] a new producerId". An idempotent
//   producer bumps its own epoch after an out-of-order or unknown-producer error (KIP-360).
// * A transactional id goes to the TransactionCoordinator: one producer id per id, the epoch
//   bumped on every call, an open transaction of the previous incarnation aborted first
//   (CONCURRENT_TRANSACTIONS until it is). PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v4.
//   An empty transactional id gets INVALID_REQUEST, as in Kafka.
// * A producer id or epoch of -1 without the other is INVALID_REQUEST (KafkaApis).
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize, authorizeAnyOfType, authorizeCluster } from "./authorize.ts";
import { defineHandler, type RequestContext } from "./handler.ts";
import { fencedForVersion } from "./txn-errors.ts";

const NO_PRODUCER_ID = -1n;
const NO_PRODUCER_EPOCH = -1;

export const initProducerIdHandler = defineHandler({
  apiKey: ApiKey.InitProducerId,
  minVersion: 0,
  maxVersion: 5,
  async handle(request, ctx) {
    const refusal = refusalOf(request.transactionalId, request.producerId, request.producerEpoch);
    if (refusal !== ErrorCode.NONE) return failure(refusal);
    const denial = initProducerIdDenial(ctx, request.transactionalId);
    if (denial !== null) return failure(denial);
    if (request.transactionalId !== null) {
      const result = await ctx.broker.transactionCoordinator.initProducerId(
        request.transactionalId,
        request.transactionTimeoutMs,
        request.producerId,
        request.producerEpoch,
      );
      return {
        throttleTimeMs: 0,
        ...result,
        errorCode: fencedForVersion(result.errorCode, ctx.apiVersion, 4),
      };
    }
    try {
      const producerId = await ctx.broker.producerIdManager.generateProducerId();
      return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, producerId, producerEpoch: 0 };
    } catch (error) {
      if (error instanceof KafkaError) return failure(error.code);
      throw error;
    }
  },
});

/**
 * As Kafka: WRITE on the transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED); without
 * one, IDEMPOTENT_WRITE on the cluster or WRITE on some topic (else
 * CLUSTER_AUTHORIZATION_FAILED).
 */
function initProducerIdDenial(ctx: RequestContext, transactionalId: string | null) {
  const { WRITE, IDEMPOTENT_WRITE } = AclOperation;
  if (transactionalId !== null) {
    return authorize(ctx, WRITE, ResourceType.TRANSACTIONAL_ID, transactionalId)
      ? null
      : ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
  }
  const idempotent =
    authorizeCluster(ctx, IDEMPOTENT_WRITE) || authorizeAnyOfType(ctx, WRITE, ResourceType.TOPIC);
  return idempotent ? null : ErrorCode.CLUSTER_AUTHORIZATION_FAILED;
}

function refusalOf(transactionalId: string | null, producerId: bigint, epoch: number): number {
  if (transactionalId === "") return ErrorCode.INVALID_REQUEST;
  if ((producerId === NO_PRODUCER_ID) !== (epoch === NO_PRODUCER_EPOCH)) {
    return ErrorCode.INVALID_REQUEST;
  }
  return ErrorCode.NONE;
}

const failure = (errorCode: number) => ({
  throttleTimeMs: 0,
  errorCode,
  producerId: NO_PRODUCER_ID,
  producerEpoch: NO_PRODUCER_EPOCH,
});
