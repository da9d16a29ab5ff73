/**
 * Kafka's TransactionCoordinator (KIP-98): gives each transactional id one producer id and
 * bumps its epoch on every InitProducerId (fencing older incarnations), records the partitions
 * a transaction touches, and on EndTxn makes the decision durable (PrepareCommit/PrepareAbort
 * in __transaction_state) before writing the markers and completing. Transactions open longer
 * than their timeout are aborted with a bumped epoch, so their producer is fenced; ids unused
 * for transactional.id.expiration.ms are forgotten. On loading a state partition, decisions
 * prepared before a crash are completed.
 */

import type { BrokerConfig } from "../config/broker-config.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import type { ProducerIdManager } from "../server/producer-id-manager.ts";
import { partitionForKey } from "./transaction-log.ts";
import {
  CONSUMER_OFFSETS_TOPIC,
  type TransactionMarkerChannelManager,
} from "./transaction-marker-channel-manager.ts";
import {
  MAX_PRODUCER_EPOCH,
  NO_PRODUCER_EPOCH,
  NO_PRODUCER_ID,
  TransactionMetadata,
  TransactionState,
  txnPartitionKey,
} from "./transaction-metadata.ts";
import type { TransactionStateManager, TxnTransition } from "./transaction-state-manager.ts";

/** Kafka's offsets.topic.num.partitions default: AddOffsetsToTxn names a partition of it. */
const OFFSETS_TOPIC_PARTITIONS = 50;

export interface InitProducerIdResult {
  readonly errorCode: number;
  readonly producerId: bigint;
  readonly producerEpoch: number;
}

export interface TxnPartition {
  readonly topic: string;
  readonly partition: number;
}

const failedInit = (errorCode: number): InitProducerIdResult => ({
  errorCode,
  producerId: NO_PRODUCER_ID,
  producerEpoch: NO_PRODUCER_EPOCH,
});

/**
 * Kafka 3.9's checks of the producer id and epoch an InitProducerId carries (KIP-360), in
 * `TransactionCoordinator.prepareInitProducerIdTransit` and
 * `TransactionMetadata.prepareIncrementProducerEpoch`: while the id has no epoch yet any pair
 * passes (a new producer may send 0/0 rather than -1/-1, as @platformatic/kafka does); otherwise
 * the producer id must be the current one (or the last one with its epoch exhausted), and in a
 * completed state the epoch the current one (bumped) or the last one (a retry of an init whose
 * answer was lost, answered with the current epoch). Everything else is PRODUCER_FENCED.
 * Returns the answer, or undefined to go on with the init.
 */
function checkExpectedProducer(
  m: TransactionMetadata,
  expectedProducerId: bigint,
  expectedEpoch: number,
): InitProducerIdResult | undefined {
  if (m.producerEpoch === NO_PRODUCER_EPOCH) return undefined;
  const validId =
    expectedProducerId === m.producerId ||
    (expectedProducerId === m.lastProducerId && expectedEpoch >= MAX_PRODUCER_EPOCH);
  if (!validId) return failedInit(ErrorCode.PRODUCER_FENCED);
  const completed =
    m.state === TransactionState.Empty ||
    m.state === TransactionState.CompleteCommit ||
    m.state === TransactionState.CompleteAbort;
  if (!completed || expectedEpoch === m.producerEpoch) return undefined;
  if (expectedEpoch === m.lastProducerEpoch) {
    return { errorCode: ErrorCode.NONE, producerId: m.producerId, producerEpoch: m.producerEpoch };
  }
  return failedInit(ErrorCode.PRODUCER_FENCED);
}

/** An EndTxn v5 retried with the epoch before its bump: answered as the first one was. */
function retriedEnd(
  m: TransactionMetadata,
  commit: boolean,
  current: InitProducerIdResult,
): InitProducerIdResult {
  const committing = m.state === TransactionState.PrepareCommit;
  const aborting = m.state === TransactionState.PrepareAbort;
  const done = commit ? TransactionState.CompleteCommit : TransactionState.CompleteAbort;
  if (m.state === done) return current;
  if ((commit && committing) || (!commit && aborting)) {
    return failedInit(ErrorCode.CONCURRENT_TRANSACTIONS);
  }
  return failedInit(ErrorCode.INVALID_TXN_STATE);
}

function codeOf(error: unknown): number {
  if (error instanceof KafkaError) return error.code;
  throw error;
}

export class TransactionCoordinator {
  private timers: ReturnType<typeof setInterval>[] = [];

  constructor(
    private readonly config: BrokerConfig,
    private readonly state: TransactionStateManager,
    private readonly markers: TransactionMarkerChannelManager,
    private readonly producerIds: ProducerIdManager,
    private readonly nowMs: () => number = Date.now,
  ) {}

  start(): void {
    const abortEvery = this.config["transaction.abort.timed.out.transaction.cleanup.interval.ms"];
    const expireEvery = this.config["transaction.remove.expired.transaction.cleanup.interval.ms"];
    this.timers.push(setInterval(() => void this.abortTimedOutTransactions(), abortEvery));
    this.timers.push(setInterval(() => void this.expireTransactionalIds(), expireEvery));
    for (const t of this.timers) t.unref();
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    this.markers.stop();
  }

  /** After loading a state partition: finish what was decided, abort what was fenced. */
  async onPartitionLoaded(loaded: readonly TransactionMetadata[]): Promise<void> {
    await Promise.all(
      loaded.map(async (m) => {
        if (
          m.state === TransactionState.PrepareCommit ||
          m.state === TransactionState.PrepareAbort
        ) {
          await this.completeTransaction(m);
        } else if (m.state === TransactionState.PrepareEpochFence) {
          await this.abort(m, m.producerEpoch).catch(() => undefined);
        }
      }),
    );
  }

  // ---- InitProducerId -----------------------------------------------------------------------

  async initProducerId(
    transactionalId: string,
    txnTimeoutMs: number,
    expectedProducerId: bigint,
    expectedEpoch: number,
  ): Promise<InitProducerIdResult> {
    if (txnTimeoutMs <= 0 || txnTimeoutMs > this.config["transaction.max.timeout.ms"]) {
      return failedInit(ErrorCode.INVALID_TRANSACTION_TIMEOUT);
    }
    const notReady = this.state.readiness(transactionalId);
    if (notReady !== null) return failedInit(notReady);
    try {
      let m = this.state.get(transactionalId);
      if (m === undefined) {
        const producerId = await this.producerIds.generateProducerId();
        m =
          this.state.get(transactionalId) ??
          new TransactionMetadata(
            transactionalId,
            producerId,
            NO_PRODUCER_EPOCH,
            txnTimeoutMs,
            TransactionState.Empty,
            this.nowMs(),
          );
        if (this.state.get(transactionalId) === undefined) this.state.add(m);
      }
      if (m.pendingState !== null) return failedInit(ErrorCode.CONCURRENT_TRANSACTIONS);
      if (expectedProducerId !== NO_PRODUCER_ID) {
        const answer = checkExpectedProducer(m, expectedProducerId, expectedEpoch);
        if (answer !== undefined) return answer;
      }
      return await this.initInState(m, txnTimeoutMs);
    } catch (error) {
      return failedInit(codeOf(error));
    }
  }

  private async initInState(
    m: TransactionMetadata,
    txnTimeoutMs: number,
  ): Promise<InitProducerIdResult> {
    switch (m.state) {
      case TransactionState.PrepareCommit:
      case TransactionState.PrepareAbort:
      case TransactionState.PrepareEpochFence:
        return failedInit(ErrorCode.CONCURRENT_TRANSACTIONS);
      case TransactionState.Ongoing:
        // The previous incarnation's transaction is aborted under a bumped epoch first; the
        // client retries on CONCURRENT_TRANSACTIONS and then gets the next epoch.
        void this.fenceAndAbort(m).catch(() => undefined);
        return failedInit(ErrorCode.CONCURRENT_TRANSACTIONS);
      case TransactionState.Dead:
        return failedInit(ErrorCode.CONCURRENT_TRANSACTIONS);
      default: {
        const exhausted = m.producerEpoch >= MAX_PRODUCER_EPOCH;
        const producerId = exhausted ? await this.producerIds.generateProducerId() : m.producerId;
        const producerEpoch = exhausted ? 0 : m.producerEpoch + 1;
        await this.state.write(
          m,
          this.transition(m, {
            producerId,
            producerEpoch,
            lastProducerId: m.producerId,
            lastProducerEpoch: m.producerEpoch,
            txnTimeoutMs,
            state: TransactionState.Empty,
            partitions: new Set(),
            txnStartTimestampMs: -1,
          }),
        );
        return { errorCode: ErrorCode.NONE, producerId, producerEpoch };
      }
    }
  }

  private transition(m: TransactionMetadata, changes: Partial<TxnTransition>): TxnTransition {
    return {
      producerId: m.producerId,
      producerEpoch: m.producerEpoch,
      lastProducerId: m.lastProducerId,
      lastProducerEpoch: m.lastProducerEpoch,
      txnTimeoutMs: m.txnTimeoutMs,
      state: m.state,
      partitions: m.partitions,
      txnStartTimestampMs: m.txnStartTimestampMs,
      txnLastUpdateTimestampMs: this.nowMs(),
      ...changes,
    };
  }

  // ---- AddPartitionsToTxn / AddOffsetsToTxn --------------------------------------------------

  /** Checks id, producer and epoch; null when the request may proceed. */
  private validate(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
  ): { error: number } | { m: TransactionMetadata } {
    const notReady = this.state.readiness(transactionalId);
    if (notReady !== null) return { error: notReady };
    const m = this.state.get(transactionalId);
    if (m === undefined || m.producerId !== producerId) {
      return { error: ErrorCode.INVALID_PRODUCER_ID_MAPPING };
    }
    if (m.producerEpoch !== producerEpoch) return { error: ErrorCode.PRODUCER_FENCED };
    if (m.pendingState !== null) return { error: ErrorCode.CONCURRENT_TRANSACTIONS };
    return { m };
  }

  async addPartitions(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    partitions: readonly TxnPartition[],
    verifyOnly = false,
  ): Promise<number> {
    const checked = this.validate(transactionalId, producerId, producerEpoch);
    if ("error" in checked) return checked.error;
    const m = checked.m;
    if (
      m.state === TransactionState.PrepareCommit ||
      m.state === TransactionState.PrepareAbort ||
      m.state === TransactionState.PrepareEpochFence
    ) {
      return ErrorCode.CONCURRENT_TRANSACTIONS;
    }
    const keys = partitions.map((p) => txnPartitionKey(p.topic, p.partition));
    const known = m.state === TransactionState.Ongoing && keys.every((k) => m.partitions.has(k));
    if (known) return ErrorCode.NONE;
    if (verifyOnly) return ErrorCode.INVALID_TXN_STATE;
    const ongoing = m.state === TransactionState.Ongoing;
    try {
      await this.state.write(
        m,
        this.transition(m, {
          state: TransactionState.Ongoing,
          partitions: new Set([...(ongoing ? m.partitions : []), ...keys]),
          txnStartTimestampMs: ongoing ? m.txnStartTimestampMs : this.nowMs(),
        }),
      );
      return ErrorCode.NONE;
    } catch (error) {
      return codeOf(error);
    }
  }

  addOffsets(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    groupId: string,
  ): Promise<number> {
    const partition = partitionForKey(groupId, OFFSETS_TOPIC_PARTITIONS);
    return this.addPartitions(transactionalId, producerId, producerEpoch, [
      { topic: CONSUMER_OFFSETS_TOPIC, partition },
    ]);
  }

  // ---- EndTxn --------------------------------------------------------------------------------

  async endTransaction(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    commit: boolean,
  ): Promise<number> {
    const checked = this.validate(transactionalId, producerId, producerEpoch);
    if ("error" in checked) return checked.error;
    const m = checked.m;
    switch (m.state) {
      case TransactionState.Ongoing:
        break;
      case TransactionState.CompleteCommit:
        return commit ? ErrorCode.NONE : ErrorCode.INVALID_TXN_STATE;
      case TransactionState.CompleteAbort:
        return commit ? ErrorCode.INVALID_TXN_STATE : ErrorCode.NONE;
      case TransactionState.PrepareCommit:
        return commit ? ErrorCode.CONCURRENT_TRANSACTIONS : ErrorCode.INVALID_TXN_STATE;
      case TransactionState.PrepareAbort:
        return commit ? ErrorCode.INVALID_TXN_STATE : ErrorCode.CONCURRENT_TRANSACTIONS;
      case TransactionState.PrepareEpochFence:
        return ErrorCode.CONCURRENT_TRANSACTIONS;
      default:
        return ErrorCode.INVALID_TXN_STATE;
    }
    try {
      await this.prepare(m, commit, m.producerEpoch);
    } catch (error) {
      return codeOf(error);
    }
    void this.completeTransaction(m);
    return ErrorCode.NONE;
  }

  /**
   * EndTxn v5 (transactions v2, KIP-890 part 2): every commit or abort bumps the epoch, so a
   * zombie of the same producer cannot write into the next transaction; the markers carry the
   * bumped epoch and the answer names the producer id and epoch to use next. A retry of an
   * EndTxn whose answer was lost comes with the epoch before the bump and is answered as the
   * first one was. An abort with no transaction open (the client cannot know whether its
   * produce added a partition) is a prepared abort of no partitions, bumping the epoch too.
   */
  async endTransactionV2(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    commit: boolean,
  ): Promise<InitProducerIdResult> {
    const notReady = this.state.readiness(transactionalId);
    if (notReady !== null) return failedInit(notReady);
    const m = this.state.get(transactionalId);
    if (m === undefined || m.producerId !== producerId) {
      return failedInit(ErrorCode.INVALID_PRODUCER_ID_MAPPING);
    }
    if (m.pendingState !== null) return failedInit(ErrorCode.CONCURRENT_TRANSACTIONS);
    const current = {
      errorCode: ErrorCode.NONE,
      producerId: m.producerId,
      producerEpoch: m.producerEpoch,
    };
    if (producerEpoch !== m.producerEpoch) {
      const retry = producerEpoch === m.lastProducerEpoch && m.lastProducerId === m.producerId;
      if (!retry) return failedInit(ErrorCode.PRODUCER_FENCED);
      return retriedEnd(m, commit, current);
    }
    const abortable =
      m.state === TransactionState.Ongoing ||
      (!commit &&
        (m.state === TransactionState.Empty ||
          m.state === TransactionState.CompleteCommit ||
          m.state === TransactionState.CompleteAbort));
    if (!abortable) {
      const concurrent =
        m.state === TransactionState.PrepareCommit ||
        m.state === TransactionState.PrepareAbort ||
        m.state === TransactionState.PrepareEpochFence;
      return failedInit(
        concurrent ? ErrorCode.CONCURRENT_TRANSACTIONS : ErrorCode.INVALID_TXN_STATE,
      );
    }
    try {
      const next = await this.prepareBumped(m, commit);
      void this.completeTransaction(m);
      return next;
    } catch (error) {
      return failedInit(codeOf(error));
    }
  }

  /** Prepare*, the epoch bumped; a spent epoch also draws the producer id the client moves to. */
  private async prepareBumped(m: TransactionMetadata, commit: boolean) {
    const exhausted = m.producerEpoch >= MAX_PRODUCER_EPOCH;
    const nextProducerId = exhausted ? await this.producerIds.generateProducerId() : NO_PRODUCER_ID;
    const ongoing = m.state === TransactionState.Ongoing;
    await this.state.write(
      m,
      this.transition(m, {
        producerEpoch: m.producerEpoch + 1,
        lastProducerId: m.producerId,
        lastProducerEpoch: m.producerEpoch,
        state: commit ? TransactionState.PrepareCommit : TransactionState.PrepareAbort,
        partitions: ongoing ? m.partitions : new Set(),
        txnStartTimestampMs: ongoing ? m.txnStartTimestampMs : this.nowMs(),
      }),
    );
    m.nextProducerId = nextProducerId;
    return exhausted
      ? { errorCode: ErrorCode.NONE, producerId: nextProducerId, producerEpoch: 0 }
      : { errorCode: ErrorCode.NONE, producerId: m.producerId, producerEpoch: m.producerEpoch };
  }

  private async prepare(m: TransactionMetadata, commit: boolean, epoch: number): Promise<void> {
    await this.state.write(
      m,
      this.transition(m, {
        producerEpoch: epoch,
        state: commit ? TransactionState.PrepareCommit : TransactionState.PrepareAbort,
      }),
    );
  }

  /** Markers for a prepared decision, then Complete*; retried until written. */
  private async completeTransaction(m: TransactionMetadata): Promise<void> {
    const commit = m.state === TransactionState.PrepareCommit;
    const sent = await this.markers.send({
      producerId: m.producerId,
      producerEpoch: m.producerEpoch,
      coordinatorEpoch: this.state.coordinatorEpoch(m.transactionalId),
      commit,
      partitions: m.partitions,
    });
    if (!sent) return;
    // Bounded: a failed write is retried only while this broker still coordinates the id.
    for (let attempt = 0; attempt < 100; attempt++) {
      try {
        await this.state.write(m, this.completion(m, commit));
        m.nextProducerId = NO_PRODUCER_ID;
        return;
      } catch (error) {
        const code = codeOf(error);
        if (code === ErrorCode.NOT_COORDINATOR) return;
        await Bun.sleep(100);
      }
    }
  }

  /** Complete*; after an EndTxn v5 that spent the epoch, under the producer id it handed out. */
  private completion(m: TransactionMetadata, commit: boolean): TxnTransition {
    const moved = m.nextProducerId !== NO_PRODUCER_ID;
    return this.transition(m, {
      state: commit ? TransactionState.CompleteCommit : TransactionState.CompleteAbort,
      partitions: new Set(),
      txnStartTimestampMs: -1,
      ...(moved
        ? {
            producerId: m.nextProducerId,
            producerEpoch: 0,
            lastProducerId: m.producerId,
            lastProducerEpoch: NO_PRODUCER_EPOCH,
          }
        : {}),
    });
  }

  private async abort(m: TransactionMetadata, epoch: number): Promise<void> {
    await this.prepare(m, false, epoch);
    await this.completeTransaction(m);
  }

  /** Bumps the epoch (fencing the producer) and aborts its open transaction. */
  private async fenceAndAbort(m: TransactionMetadata): Promise<void> {
    if (m.state !== TransactionState.Ongoing || m.pendingState !== null) return;
    const exhausted = m.producerEpoch >= MAX_PRODUCER_EPOCH;
    const epoch = exhausted ? m.producerEpoch : m.producerEpoch + 1;
    await this.state.write(
      m,
      this.transition(m, {
        producerEpoch: epoch,
        state: TransactionState.PrepareEpochFence,
      }),
    );
    await this.abort(m, epoch);
  }

  // ---- Timers --------------------------------------------------------------------------------

  private async abortTimedOutTransactions(): Promise<void> {
    const now = this.nowMs();
    for (const m of this.state.all()) {
      if (m.state !== TransactionState.Ongoing || m.pendingState !== null) continue;
      if (m.txnStartTimestampMs + m.txnTimeoutMs > now) continue;
      if (this.state.readiness(m.transactionalId) !== null) continue;
      await this.fenceAndAbort(m).catch(() => undefined);
    }
  }

  private async expireTransactionalIds(): Promise<void> {
    const now = this.nowMs();
    const expirationMs = this.config["transactional.id.expiration.ms"];
    for (const m of [...this.state.all()]) {
      const idle =
        m.state === TransactionState.Empty ||
        m.state === TransactionState.CompleteCommit ||
        m.state === TransactionState.CompleteAbort;
      if (!idle || m.pendingState !== null) continue;
      if (m.txnLastUpdateTimestampMs + expirationMs > now) continue;
      if (this.state.readiness(m.transactionalId) !== null) continue;
      await this.state.remove(m).catch(() => undefined);
    }
  }
}
