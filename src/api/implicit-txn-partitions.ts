/**
 * Transactions v2 (KIP-890 part 2) on the produce path: a Kafka 4 producer sends Produce v12+
 * without AddPartitionsToTxn, so before appending a transactional batch to a partition where its
 * producer has no transaction open at that epoch, the leader adds the partition to the
 * transaction at the coordinator (coordinator/add-partitions-to-txn-manager.ts). A partition the
 * coordinator refuses is answered with the error the producer expects from a produce:
 * PRODUCER_FENCED as INVALID_PRODUCER_EPOCH, and the coordinator's transient errors
 * (CONCURRENT_TRANSACTIONS while the previous transaction's markers are written, a coordinator
 * moving or loading) as NOT_ENOUGH_REPLICAS, which every client retries, as Kafka's
 * ReplicaManager answers.
 */
import type { TxnPartition } from "../coordinator/transaction-coordinator.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { isTransactional, readBatchHeader } from "../protocol/record-batch.ts";
import type { RequestContext } from "./handler.ts";

/** The first Produce version whose transactional batches may open a transaction (KIP-890). */
export const IMPLICIT_ADD_MIN_VERSION = 12;

const RETRIABLE = new Set<number>([
  ErrorCode.CONCURRENT_TRANSACTIONS,
  ErrorCode.COORDINATOR_NOT_AVAILABLE,
  ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
  ErrorCode.NOT_COORDINATOR,
  ErrorCode.REQUEST_TIMED_OUT,
]);

function produceError(code: number): number {
  if (code === ErrorCode.PRODUCER_FENCED) return ErrorCode.INVALID_PRODUCER_EPOCH;
  return RETRIABLE.has(code) ? ErrorCode.NOT_ENOUGH_REPLICAS : code;
}

interface Target extends TxnPartition {
  readonly records: Uint8Array | null;
}

/**
 * Adds to the transaction the partitions whose first batch is transactional and not yet in an
 * open transaction of its producer here. Returns the error of each entry (NONE to append).
 */
export async function addImplicitTxnPartitions(
  ctx: RequestContext,
  transactionalId: string | null,
  entries: readonly Target[],
): Promise<number[]> {
  const codes: number[] = entries.map(() => ErrorCode.NONE);
  if (ctx.apiVersion < IMPLICIT_ADD_MIN_VERSION || transactionalId === null) return codes;
  const byProducer = new Map<string, { pid: bigint; epoch: number; at: number[] }>();
  entries.forEach((e, i) => {
    if (e.records === null) return;
    let header: ReturnType<typeof readBatchHeader>;
    try {
      header = readBatchHeader(e.records);
    } catch {
      return; // the append answers a corrupt batch
    }
    if (!isTransactional(header.attributes) || header.producerId < 0n) return;
    const { producerId: pid, producerEpoch: epoch } = header;
    if (ctx.broker.replicaManager.hasOngoingTransaction(e.topic, e.partition, pid, epoch)) return;
    const key = `${pid}:${epoch}`;
    const group = byProducer.get(key) ?? { pid, epoch, at: [] };
    group.at.push(i);
    byProducer.set(key, group);
  });
  for (const { pid, epoch, at } of byProducer.values()) {
    const producer = { transactionalId, producerId: pid, producerEpoch: epoch };
    const partitions = at.map((i) => ({
      topic: entries[i]!.topic,
      partition: entries[i]!.partition,
    }));
    const code = await ctx.broker.addPartitionsToTxnManager.addPartitions(producer, partitions);
    for (const i of at) codes[i] = produceError(code);
  }
  return codes;
}
