/**
 * A producer for one topic: records collect into one batch per partition, a full batch is sent
 * in a Produce request to the partition's leader (all ready batches of one leader together), at
 * most `maxInFlight` requests wait for answers at once. Keyed records go where Kafka's default
 * partitioner puts them; unkeyed ones stick to one partition per batch, as Kafka's sticky
 * partitioner does.
 *
 * Idempotence and retries, as Kafka's producer with `enable.idempotence=true` (its default with
 * acks=all): InitProducerId gives a producer id and epoch, each partition's batches carry
 * consecutive sequence numbers, and a batch answered with a retriable error (leader moved, not
 * enough replicas, timeout, lost connection) is sent again, the same bytes with the same
 * sequence, to the partition's current leader after `retryBackoffMs`, until `deliveryTimeoutMs`
 * has passed since it was first sent. The broker's sequence check makes a resend that had in
 * fact been written a DUPLICATE_SEQUENCE_NUMBER (success) and a batch that overtook a failed
 * earlier one OUT_OF_ORDER_SEQUENCE_NUMBER (sent again after it). Any other error ends the run
 * with its name.
 */
import { CompressionType } from "../protocol/compression.ts";
import { ErrorCode, isRetriable } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { buildRecordBatch, type RecordInput } from "../protocol/record-batch.ts";
import { ClusterError, check, UnreachableError } from "./client-errors.ts";
import type { ClusterClient } from "./cluster-client.ts";
import { partitionForKey } from "./murmur2.ts";
import { describeTopics, type TopicInfo } from "./partition-offsets.ts";

export interface ProducerOptions {
  /** 0, 1 or -1 (all). */
  readonly acks: number;
  readonly compression: CompressionType;
  readonly batchBytes: number;
  readonly maxInFlight: number;
  readonly timeoutMs: number;
  /** enable.idempotence: producer id and sequence numbers (acks=all only, as Kafka requires). */
  readonly idempotent?: boolean;
  /** delivery.timeout.ms (Kafka: 120000): how long a batch is retried; 0 turns retries off. */
  readonly deliveryTimeoutMs?: number;
  /** retry.backoff.ms (Kafka: 100). */
  readonly retryBackoffMs?: number;
  /** Called per answered request (for acks=0: per request sent). */
  readonly onAck?: (records: number, bytes: number, latencyMs: number) => void;
}

/** Bytes queued on a connection for acks=0 before `send` waits for the socket to take them. */
const UNSENT_BYTES_MAX = 8 * 1024 * 1024;

interface Accumulating {
  records: RecordInput[];
  bytes: number;
}

interface ReadyBatch {
  readonly index: number;
  readonly records: Uint8Array;
  readonly count: number;
}

/** Sequence numbers wrap to 0 after Int32.MAX_VALUE, as Kafka's DefaultRecordBatch does. */
const SEQUENCE_MAX = 0x7fffffff;

export class Producer {
  private readonly batches = new Map<number, Accumulating>();
  private readonly inFlight = new Set<Promise<void>>();
  private stickyPartition = 0;
  private failure: Error | null = null;
  private dispatching: Promise<void> = Promise.resolve();
  private producerId = -1n;
  private producerEpoch = -1;
  private readonly nextSequence = new Map<number, number>();
  private readonly leaders: number[];

  constructor(
    private readonly client: ClusterClient,
    private readonly topic: TopicInfo,
    private readonly options: ProducerOptions,
  ) {
    this.stickyPartition = Math.floor(Math.random() * topic.partitions.length);
    this.leaders = topic.partitions.map((p) => p.leader);
  }

  /** With idempotence, asks for a producer id (InitProducerId without a transactional id). */
  async init(): Promise<void> {
    if (this.options.idempotent !== true || this.options.acks !== -1) return;
    const answer = await this.client.request(ApiKey.InitProducerId, {
      transactionalId: null,
      transactionTimeoutMs: 60_000,
      producerId: -1n,
      producerEpoch: -1,
    });
    check(answer.errorCode, "initializing an idempotent producer (InitProducerId)");
    this.producerId = answer.producerId;
    this.producerEpoch = answer.producerEpoch;
  }

  /** Adds one record; resolves once it is queued (may wait for requests in flight). */
  async send(record: RecordInput, partition: number | null = null): Promise<void> {
    if (this.failure !== null) throw this.failure;
    const count = this.topic.partitions.length;
    const target =
      partition ?? (record.key ? partitionForKey(record.key, count) : this.stickyPartition);
    if (target < 0 || target >= count) {
      throw new ClusterError(3, `for ${this.topic.name} partition ${target}`);
    }
    const batch = this.batches.get(target) ?? { records: [], bytes: 0 };
    this.batches.set(target, batch);
    batch.records.push(record);
    batch.bytes += 24 + (record.key?.length ?? 0) + (record.value?.length ?? 0);
    if (batch.bytes >= this.options.batchBytes) {
      if (partition === null && !record.key) this.stickyPartition = (target + 1) % count;
      await this.dispatch([target]);
    }
  }

  /** Sends every partial batch without waiting for the answers (a producer's linger). */
  async sendPending(): Promise<void> {
    await this.dispatch([...this.batches.keys()]);
  }

  /** Sends every partial batch and waits for all answers. */
  async flush(): Promise<void> {
    await this.dispatch([...this.batches.keys()]);
    while (this.inFlight.size > 0) await Promise.race(this.inFlight);
    if (this.failure !== null) throw this.failure;
  }

  /** Dispatches run one after another, so a partition's batches leave in the order formed. */
  private dispatch(partitions: number[]): Promise<void> {
    const next = this.dispatching.then(() => this.dispatchNow(partitions));
    this.dispatching = next.catch(() => {});
    return next;
  }

  private async dispatchNow(partitions: number[]): Promise<void> {
    const byLeader = new Map<number, ReadyBatch[]>();
    for (const index of partitions) {
      const batch = this.batches.get(index);
      if (batch === undefined || batch.records.length === 0) continue;
      this.batches.delete(index);
      const leader = this.leaders[index]!;
      const records = buildRecordBatch(batch.records, {
        compression: this.options.compression,
        ...this.sequenceFor(index, batch.records.length),
      });
      const list = byLeader.get(leader) ?? [];
      list.push({ index, records, count: batch.records.length });
      byLeader.set(leader, list);
    }
    for (const [leader, list] of byLeader) {
      while (this.inFlight.size >= this.options.maxInFlight) await Promise.race(this.inFlight);
      if (this.failure !== null) throw this.failure;
      const sending = this.produceWithRetries(leader, list).catch((error: unknown) => {
        this.failure ??= error instanceof Error ? error : new Error(String(error));
      });
      this.inFlight.add(sending);
      void sending.then(() => this.inFlight.delete(sending));
    }
  }

  /** The producer id, epoch and next base sequence of a partition's batch (idempotence). */
  private sequenceFor(index: number, count: number) {
    if (this.producerId < 0n) return {};
    const baseSequence = this.nextSequence.get(index) ?? 0;
    const next = baseSequence + count;
    this.nextSequence.set(index, next > SEQUENCE_MAX ? next - SEQUENCE_MAX - 1 : next);
    return { producerId: this.producerId, producerEpoch: this.producerEpoch, baseSequence };
  }

  /** Sends, and sends again what failed retriably, to the leader of the moment. */
  private async produceWithRetries(leader: number, list: readonly ReadyBatch[]): Promise<void> {
    const deadline = performance.now() + (this.options.deliveryTimeoutMs ?? 120_000);
    let pending: { leader: number; list: readonly ReadyBatch[] }[] = [{ leader, list }];
    for (;;) {
      const failed: ReadyBatch[] = [];
      let lastError: Error | null = null;
      for (const attempt of pending) {
        try {
          const { retry, error } = await this.produce(attempt.leader, attempt.list);
          failed.push(...retry);
          lastError = error ?? lastError;
        } catch (error) {
          if (!(error instanceof UnreachableError)) throw error;
          failed.push(...attempt.list);
          lastError = error;
        }
      }
      if (failed.length === 0) return;
      if (performance.now() > deadline) {
        throw lastError ?? new ClusterError(ErrorCode.REQUEST_TIMED_OUT, "delivering records");
      }
      await Bun.sleep(this.options.retryBackoffMs ?? 100);
      await this.refreshLeaders();
      const byLeader = new Map<number, ReadyBatch[]>();
      for (const b of failed) {
        const l = this.leaders[b.index]!;
        byLeader.set(l, [...(byLeader.get(l) ?? []), b]);
      }
      pending = [...byLeader].map(([l, bs]) => ({ leader: l, list: bs }));
    }
  }

  private async refreshLeaders(): Promise<void> {
    try {
      const [info] = await describeTopics(this.client, [this.topic.name]);
      info!.partitions.forEach((p, i) => {
        if (p.leader >= 0) this.leaders[i] = p.leader;
      });
    } catch (error) {
      if (!(error instanceof UnreachableError || error instanceof ClusterError)) throw error;
    }
  }

  /** One Produce request; returns the batches to send again and the last retriable error. */
  private async produce(
    leader: number,
    list: readonly ReadyBatch[],
  ): Promise<{ retry: ReadyBatch[]; error: ClusterError | null }> {
    const body = {
      acks: this.options.acks,
      timeoutMs: this.options.timeoutMs,
      topicData: [
        {
          name: this.topic.name,
          partitionData: list.map((b) => ({ index: b.index, records: b.records })),
        },
      ],
    };
    const records = list.reduce((n, b) => n + b.count, 0);
    const bytes = list.reduce((n, b) => n + b.records.byteLength, 0);
    const started = performance.now();
    if (this.options.acks === 0) {
      const connection = await this.client.broker(leader);
      connection.sendWithoutResponse(ApiKey.Produce, this.client.version(ApiKey.Produce), body);
      while (connection.unsentBytes > UNSENT_BYTES_MAX) await Bun.sleep(1);
      this.options.onAck?.(records, bytes, performance.now() - started);
      return { retry: [], error: null };
    }
    const response = await this.client.request(ApiKey.Produce, body, leader);
    const retry: ReadyBatch[] = [];
    let error: ClusterError | null = null;
    for (const t of response.responses) {
      for (const p of t.partitionResponses) {
        const context = `producing to ${t.name} partition ${p.index}`;
        if (this.retriable(p.errorCode)) {
          retry.push(list.find((b) => b.index === p.index)!);
          error = new ClusterError(p.errorCode, context, p.errorMessage);
        } else if (p.errorCode !== ErrorCode.DUPLICATE_SEQUENCE_NUMBER) {
          check(p.errorCode, context, p.errorMessage);
        }
      }
    }
    const acked = list.filter((b) => !retry.includes(b));
    const ackedRecords = acked.reduce((n, b) => n + b.count, 0);
    const ackedBytes = acked.reduce((n, b) => n + b.records.byteLength, 0);
    if (acked.length > 0)
      this.options.onAck?.(ackedRecords, ackedBytes, performance.now() - started);
    return { retry, error };
  }

  private retriable(code: number): boolean {
    if (this.options.deliveryTimeoutMs === 0) return false;
    if (code === ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER) return this.producerId >= 0n;
    return isRetriable(code);
  }
}

export const COMPRESSION_NAMES: Readonly<Record<string, CompressionType>> = {
  none: CompressionType.None,
  gzip: CompressionType.Gzip,
  snappy: CompressionType.Snappy,
  lz4: CompressionType.Lz4,
  zstd: CompressionType.Zstd,
};
