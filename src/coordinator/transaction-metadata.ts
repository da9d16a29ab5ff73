/**
 * One transactional id's state at its coordinator (Kafka's TransactionMetadata and
 * TransactionState). The states and their wire numbers are Kafka's:
 *
 *   Empty -> Ongoing            first AddPartitionsToTxn/AddOffsetsToTxn of a transaction
 *   Ongoing -> PrepareCommit    EndTxn(commit): durable in __transaction_state, then markers
 *   Ongoing -> PrepareAbort     EndTxn(abort), a timeout, or a new producer incarnation
 *   Ongoing -> PrepareEpochFence -> PrepareAbort   the epoch is bumped first (timeout, new init)
 *   PrepareCommit -> CompleteCommit, PrepareAbort -> CompleteAbort   every marker written
 *   Complete*, Empty -> Empty   InitProducerId (epoch bumped)
 *   Empty, Complete* -> Dead    transactional.id.expiration.ms passed
 *
 * A state change is first staged as `pendingState` while its record is written; requests for
 * the id meanwhile get CONCURRENT_TRANSACTIONS, so changes of one id never interleave.
 */
import {
  type TopicPartitionKey,
  topicPartitionKey,
  topicPartitionOf,
} from "../common/topic-partition.ts";

export const TransactionState = {
  Empty: 0,
  Ongoing: 1,
  PrepareCommit: 2,
  PrepareAbort: 3,
  CompleteCommit: 4,
  CompleteAbort: 5,
  Dead: 6,
  PrepareEpochFence: 7,
} as const;
export type TransactionState = (typeof TransactionState)[keyof typeof TransactionState];

export const TRANSACTION_STATE_NAMES: Record<TransactionState, string> = {
  0: "Empty",
  1: "Ongoing",
  2: "PrepareCommit",
  3: "PrepareAbort",
  4: "CompleteCommit",
  5: "CompleteAbort",
  6: "Dead",
  7: "PrepareEpochFence",
};

/** The states each state may move to (Kafka's TransactionState.validPreviousStates, inverted). */
const VALID_NEXT: Record<TransactionState, readonly TransactionState[]> = {
  0: [
    TransactionState.Empty,
    TransactionState.Ongoing,
    TransactionState.Dead,
    TransactionState.PrepareAbort,
  ],
  1: [
    TransactionState.Ongoing,
    TransactionState.PrepareCommit,
    TransactionState.PrepareAbort,
    TransactionState.PrepareEpochFence,
  ],
  2: [TransactionState.CompleteCommit],
  3: [TransactionState.CompleteAbort],
  4: [
    TransactionState.Empty,
    TransactionState.Ongoing,
    TransactionState.Dead,
    TransactionState.PrepareAbort,
  ],
  5: [
    TransactionState.Empty,
    TransactionState.Ongoing,
    TransactionState.Dead,
    TransactionState.PrepareAbort,
  ],
  6: [],
  7: [TransactionState.PrepareAbort],
};

export function isValidTransition(from: TransactionState, to: TransactionState): boolean {
  return VALID_NEXT[from].includes(to);
}

/** The largest epoch before the producer id must change (Short.MAX_VALUE - 1, as Kafka). */
export const MAX_PRODUCER_EPOCH = 32766;
export const NO_PRODUCER_ID = -1n;
export const NO_PRODUCER_EPOCH = -1;

/** The key of a partition in a transaction. */
export type TxnPartitionKey = TopicPartitionKey;
export const txnPartitionKey = topicPartitionKey;
export const splitTxnPartitionKey = topicPartitionOf;

export class TransactionMetadata {
  lastProducerId = NO_PRODUCER_ID;
  lastProducerEpoch = NO_PRODUCER_EPOCH;
  partitions = new Set<TxnPartitionKey>();
  txnStartTimestampMs = -1;
  pendingState: TransactionState | null = null;
  /**
   * Transactions v2: the producer id the client was given when its epoch ran out at EndTxn; the
   * markers still carry the old id (at the last epoch), completion moves to this one.
   */
  nextProducerId = NO_PRODUCER_ID;

  constructor(
    readonly transactionalId: string,
    public producerId: bigint,
    public producerEpoch: number,
    public txnTimeoutMs: number,
    public state: TransactionState,
    public txnLastUpdateTimestampMs: number,
  ) {}

  /** The partitions grouped by topic, as the log record and DescribeTransactions carry them. */
  partitionsByTopic(): Map<string, number[]> {
    const out = new Map<string, number[]>();
    for (const key of this.partitions) {
      const { topic, partition } = splitTxnPartitionKey(key);
      const list = out.get(topic);
      if (list === undefined) out.set(topic, [partition]);
      else list.push(partition);
    }
    return out;
  }
}
