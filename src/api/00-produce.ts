// Produce: v0-13 advertised, v3-13 served
//
// Version notes:
// * v0-2 carry magic 0/1 message sets, which Kafka 4 removed (KIP-896). They are still
//   advertised, as Kafka 4.0 does (KAFKA-18659): librdkafka up to 2.11 turns gzip, snappy and
//   lz4 off unless the broker lists Produce v0. Such requests get UNSUPPORTED_VERSION.
// * v3: transactional id; magic 2 record batches only.
// * v5: LogStartOffset in the response. v8: per-batch RecordErrors and ErrorMessage (KIP-467).
// * v9: flexible. v10: CurrentLeader and NodeEndpoints tagged fields (KIP-951), left at defaults.
// * v11: TRANSACTION_ABORTABLE (KIP-890). v12: as v11; a client sends it inside a transaction
//   only with transaction.version 2 finalized (ApiVersions), and then sends no
//   AddPartitionsToTxn: a transactional batch of v12+ adds its partition to the transaction
//   first (implicit-txn-partitions.ts).
// * v13 (KIP-516): topics by id only, answered by id; an id this broker's metadata does not know
//   is UNKNOWN_TOPIC_ID for each of its partitions (before authorization: a name is needed to
//   authorize), as Kafka's handleProduceRequest.
// * acks=-1 waits until the ISR holds every batch, at most timeoutMs (then REQUEST_TIMED_OUT).
// * acks=0 gets no response.
// * Idempotent batches (producer id >= 0) are checked against the partition's producer state:
//   a retried batch is answered with its original offsets and not written again; a sequence
//   gap is OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch INVALID_PRODUCER_EPOCH (storage's
//   producer-state-manager.ts). Transactional batches must belong to a transaction the
//   coordinator opened (AddPartitionsToTxn), else INVALID_TXN_STATE; control batches come only
//   from WriteTxnMarkers (docs/transactions.md).
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { ApiKey, type ProduceRequest } from "../protocol/generated/index.ts";
import {
  batchRecordCount,
  isTransactional,
  validateProduceRecords,
} from "../protocol/record-batch.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import type { AppendEntry, AppendOutcome, ReplicaManager } from "../server/replica-manager.ts";
import { type MaybePromise, thenMaybe } from "../util/maybe-promise.ts";
import { authorize, authorizedNames } from "./authorize.ts";
import { defineHandler, type RequestContext } from "./handler.ts";
import { addImplicitTxnPartitions, IMPLICIT_ADD_MIN_VERSION } from "./implicit-txn-partitions.ts";

/** The first version that carries magic 2 record batches, the only format Quill stores. */
const PRODUCE_SERVED_MIN_VERSION = 3;
/** The first version naming topics by id only (KIP-516). */
const TOPIC_IDS_MIN_VERSION = 13;

/** One partition of the request; `records` is null when the client sent none. */
type ProducedPartition = Omit<AppendEntry, "records"> & { readonly records: Uint8Array | null };

const failed = (error: KafkaError): AppendOutcome => ({
  errorCode: error.code,
  errorMessage: error.message,
  baseOffset: -1n,
  logAppendTimeMs: -1n,
  logStartOffset: -1n,
});
const failedWith = (errorCode: number): AppendOutcome => ({
  errorCode,
  errorMessage: null,
  baseOffset: -1n,
  logAppendTimeMs: -1n,
  logStartOffset: -1n,
});

/** Offset of a batch's attributes: base offset, length, leader epoch, magic, CRC. */
const ATTRIBUTES_OFFSET = 21;

/**
 * Per partition, the authorization error or NONE; null without an authorizer. As Kafka's
 * handleProduceRequest: transactional records need WRITE on the transactional id (else every
 * partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED), each topic needs WRITE (else
 * TOPIC_AUTHORIZATION_FAILED, before its existence is looked at). One look at the first
 * batch's attributes per partition, one cached decision per topic.
 */
function produceDenials(
  ctx: RequestContext,
  transactionalId: string | null,
  entries: readonly ProducedPartition[],
): number[] | null {
  if (ctx.broker.authorizer === null) return null;
  const transactional = entries.some(
    ({ records: r }) =>
      r !== null && r.length > ATTRIBUTES_OFFSET + 1 && isTransactional(r[ATTRIBUTES_OFFSET + 1]!),
  );
  if (transactional) {
    const { WRITE } = AclOperation;
    const allowed =
      transactionalId !== null &&
      authorize(ctx, WRITE, ResourceType.TRANSACTIONAL_ID, transactionalId);
    if (!allowed) return entries.map(() => ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
  }
  const topics = new Set(entries.map((e) => e.topic));
  const writable = authorizedNames(ctx, AclOperation.WRITE, ResourceType.TOPIC, topics);
  return entries.map((e) =>
    writable.has(e.topic) ? ErrorCode.NONE : ErrorCode.TOPIC_AUTHORIZATION_FAILED,
  );
}

/**
 * appendValid for the partitions the principal may write; the others answer their denial. Like
 * every step below it, it answers synchronously when nothing waits (acks 0 and 1, no implicit
 * transaction partitions), so such a request makes no promise at all.
 */
function appendAuthorized(
  ctx: RequestContext,
  request: { acks: number; timeoutMs: number; transactionalId: string | null },
  entries: readonly ProducedPartition[],
): MaybePromise<AppendOutcome[]> {
  const denials = produceDenials(ctx, request.transactionalId, entries);
  if (denials === null) return appendInTransaction(ctx, request, entries);
  return appendWhere(denials, entries, (allowed) => appendInTransaction(ctx, request, allowed));
}

/**
 * Appends the entries whose code is NONE with `append`; the others are answered with their code.
 * Keeps the request's order.
 */
function appendWhere(
  codes: readonly number[],
  entries: readonly ProducedPartition[],
  append: (allowed: ProducedPartition[]) => MaybePromise<AppendOutcome[]>,
): MaybePromise<AppendOutcome[]> {
  const outcomes: AppendOutcome[] = new Array(entries.length);
  const allowedAt: number[] = [];
  codes.forEach((code, i) => {
    if (code === ErrorCode.NONE) allowedAt.push(i);
    else outcomes[i] = failedWith(code);
  });
  return thenMaybe(append(allowedAt.map((i) => entries[i]!)), (appended) => {
    appended.forEach((o, j) => {
      outcomes[allowedAt[j]!] = o;
    });
    return outcomes;
  });
}

/** appendValid, after adding the partitions of a transactions v2 producer to its transaction. */
function appendInTransaction(
  ctx: RequestContext,
  request: { acks: number; timeoutMs: number; transactionalId: string | null },
  entries: readonly ProducedPartition[],
): MaybePromise<AppendOutcome[]> {
  const { acks, timeoutMs } = request;
  const append = (list: readonly ProducedPartition[]) =>
    appendValid(ctx.broker.replicaManager, acks, timeoutMs, list, ctx.apiVersion);
  // The common case (no transaction, or a client before v12) costs one comparison.
  if (request.transactionalId === null || ctx.apiVersion < IMPLICIT_ADD_MIN_VERSION) {
    return append(entries);
  }
  return appendAfterImplicitAdd(ctx, request.transactionalId, acks, entries, append);
}

async function appendAfterImplicitAdd(
  ctx: RequestContext,
  transactionalId: string,
  acks: number,
  entries: readonly ProducedPartition[],
  append: (list: readonly ProducedPartition[]) => MaybePromise<AppendOutcome[]>,
): Promise<AppendOutcome[]> {
  const refusals = entries.map((e) => ctx.broker.replicaManager.appendRefusal(acks, e));
  const open = entries.filter((_, i) => refusals[i] === null);
  const added = await addImplicitTxnPartitions(ctx, transactionalId, open);
  if (added.every((c) => c === ErrorCode.NONE)) return append(entries);
  let j = 0;
  const codes = refusals.map((r) => (r === null ? added[j++]! : ErrorCode.NONE));
  return appendWhere(codes, entries, append);
}

/**
 * Kafka's ProduceRequest.validateRecords, done here as Kafka's request handler does: records
 * present, exactly one magic 2 batch, a codec this version may carry (header fields only; the
 * batch is walked once, later, by the LogValidator inside UnifiedLog.appendAsLeader).
 */
function recordsError(records: Uint8Array | null, apiVersion: number): KafkaError | null {
  if (records === null) {
    return new KafkaError(ErrorCode.INVALID_RECORD, "produce request without records");
  }
  try {
    validateProduceRecords(records, apiVersion);
    return null;
  } catch (e) {
    if (e instanceof KafkaError) return e;
    throw e;
  }
}

/**
 * Appends the partitions whose records are valid; the others are answered with their records'
 * error, unless the broker would refuse the partition anyway (internal, unknown, not led here,
 * ISR below min.insync.replicas): that refusal comes first, as the append checks it first.
 */
function appendValid(
  replicaManager: ReplicaManager,
  acks: number,
  timeoutMs: number,
  partitions: readonly ProducedPartition[],
  apiVersion: number,
): MaybePromise<AppendOutcome[]> {
  const outcomes: AppendOutcome[] = new Array(partitions.length);
  const valid: AppendEntry[] = [];
  const validAt: number[] = [];
  partitions.forEach((p, i) => {
    const invalid = recordsError(p.records, apiVersion);
    if (invalid !== null) {
      outcomes[i] = failed(replicaManager.appendRefusal(acks, p) ?? invalid);
    } else if (p.records !== null) {
      valid.push({ topic: p.topic, partition: p.partition, records: p.records });
      validAt.push(i);
    }
  });
  return thenMaybe(replicaManager.produceRecords(acks, timeoutMs, valid), (appended) => {
    appended.forEach((o, j) => {
      outcomes[validAt[j]!] = o;
    });
    return outcomes;
  });
}

/** Bytes and records in per topic: the batches of the partitions this leader accepted. */
function recordBytesIn(
  ctx: RequestContext,
  partitions: readonly ProducedPartition[],
  outcomes: readonly { errorCode: number }[],
): void {
  partitions.forEach((e, i) => {
    if (e.records !== null && outcomes[i]!.errorCode === ErrorCode.NONE) {
      ctx.broker.metrics.recordBytesIn(e.topic, e.records.byteLength, batchRecordCount(e.records));
    }
  });
}

/** The request's partitions, by topic name; a topic id (v13) is looked up, null when unknown. */
function producedPartitions(request: ProduceRequest, ctx: RequestContext) {
  const byId = ctx.apiVersion >= TOPIC_IDS_MIN_VERSION;
  const entries: ProducedPartition[] = [];
  const unknownAt = new Set<number>();
  for (const topic of request.topicData) {
    const name = byId
      ? (ctx.broker.metadataCache.topicById(topic.topicId)?.name ?? null)
      : topic.name;
    for (const p of topic.partitionData) {
      if (name === null) unknownAt.add(entries.length);
      const records = p.records instanceof Uint8Array ? p.records : null;
      entries.push({ topic: name ?? "", partition: p.index, records });
    }
  }
  return { entries, unknownAt };
}

/** The outcome of every partition, in request order. */
function produceOutcomes(
  request: ProduceRequest,
  ctx: RequestContext,
  entries: readonly ProducedPartition[],
  unknownAt: ReadonlySet<number>,
): MaybePromise<AppendOutcome[]> {
  const acks = request.acks;
  const refusal =
    ctx.apiVersion < PRODUCE_SERVED_MIN_VERSION
      ? ErrorCode.UNSUPPORTED_VERSION
      : acks !== 0 && acks !== 1 && acks !== -1
        ? ErrorCode.INVALID_REQUIRED_ACKS
        : ErrorCode.NONE;
  if (refusal !== ErrorCode.NONE) return entries.map(() => failedWith(refusal));
  if (unknownAt.size === 0) return appendAuthorized(ctx, request, entries);
  const known = entries.filter((_, i) => !unknownAt.has(i));
  return thenMaybe(appendAuthorized(ctx, request, known), (appended) => {
    let j = 0;
    return entries.map((_, i) =>
      unknownAt.has(i) ? failedWith(ErrorCode.UNKNOWN_TOPIC_ID) : appended[j++]!,
    );
  });
}

export const produceHandler = defineHandler({
  apiKey: ApiKey.Produce,
  minVersion: 0,
  maxVersion: 13,
  handle(request, ctx) {
    const { entries, unknownAt } = producedPartitions(request, ctx);
    return thenMaybe(produceOutcomes(request, ctx, entries, unknownAt), (outcomes) =>
      produceResponse(request, ctx, entries, outcomes),
    );
  },
});

/** The response body (none for acks=0), after counting the bytes the leader accepted. */
function produceResponse(
  request: ProduceRequest,
  ctx: RequestContext,
  entries: readonly ProducedPartition[],
  outcomes: readonly AppendOutcome[],
) {
  recordBytesIn(ctx, entries, outcomes);
  if (request.acks === 0) return null;
  let i = 0;
  return {
    responses: request.topicData.map((topic) => ({
      name: topic.name,
      topicId: topic.topicId,
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
}
