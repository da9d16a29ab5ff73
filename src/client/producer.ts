/**
 * A producer for one topic: records collect into one batch per partition, a full batch is sent
 * in a Produce request to the partition's leader (all ready batches of one leader together), at
 * most `maxInFlight` requests wait for answers at once. Keyed records go where Kafka's default
 * partitioner puts them; unkeyed ones stick to one partition per batch, as Kafka's sticky
 * partitioner does. No retries: an error ends the run with the error's name.
 */
import { CompressionType } from "../protocol/compression.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { buildRecordBatch, type RecordInput } from "../protocol/record-batch.ts";
import { ClusterError, check } from "./client-errors.ts";
import type { ClusterClient } from "./cluster-client.ts";
import { partitionForKey } from "./murmur2.ts";
import type { TopicInfo } from "./partition-offsets.ts";

export interface ProducerOptions {
  /** 0, 1 or -1 (all). */
  readonly acks: number;
  readonly compression: CompressionType;
  readonly batchBytes: number;
  readonly maxInFlight: number;
  readonly timeoutMs: number;
  /** Called per answered request (for acks=0: per request sent). */
  readonly onAck?: (records: number, bytes: number, latencyMs: number) => void;
}

/** Bytes queued on a connection for acks=0 before `send` waits for the socket to take them. */
const UNSENT_BYTES_MAX = 8 * 1024 * 1024;

interface Accumulating {
  records: RecordInput[];
  bytes: number;
}

export class Producer {
  private readonly batches = new Map<number, Accumulating>();
  private readonly inFlight = new Set<Promise<void>>();
  private stickyPartition = 0;
  private failure: Error | null = null;
  private dispatching: Promise<void> = Promise.resolve();

  constructor(
    private readonly client: ClusterClient,
    private readonly topic: TopicInfo,
    private readonly options: ProducerOptions,
  ) {
    this.stickyPartition = Math.floor(Math.random() * topic.partitions.length);
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
    const byLeader = new Map<number, { index: number; records: Uint8Array; count: number }[]>();
    for (const index of partitions) {
      const batch = this.batches.get(index);
      if (batch === undefined || batch.records.length === 0) continue;
      this.batches.delete(index);
      const leader = this.topic.partitions[index]!.leader;
      const records = buildRecordBatch(batch.records, { compression: this.options.compression });
      const list = byLeader.get(leader) ?? [];
      list.push({ index, records, count: batch.records.length });
      byLeader.set(leader, list);
    }
    for (const [leader, list] of byLeader) {
      while (this.inFlight.size >= this.options.maxInFlight) await Promise.race(this.inFlight);
      if (this.failure !== null) throw this.failure;
      const sending = this.produce(leader, list).catch((error: unknown) => {
        this.failure ??= error instanceof Error ? error : new Error(String(error));
      });
      this.inFlight.add(sending);
      void sending.then(() => this.inFlight.delete(sending));
    }
  }

  private async produce(
    leader: number,
    list: readonly { index: number; records: Uint8Array; count: number }[],
  ): Promise<void> {
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
      return;
    }
    const response = await this.client.request(ApiKey.Produce, body, leader);
    for (const t of response.responses) {
      for (const p of t.partitionResponses) {
        check(p.errorCode, `producing to ${t.name} partition ${p.index}`, p.errorMessage);
      }
    }
    this.options.onAck?.(records, bytes, performance.now() - started);
  }
}

export const COMPRESSION_NAMES: Readonly<Record<string, CompressionType>> = {
  none: CompressionType.None,
  gzip: CompressionType.Gzip,
  snappy: CompressionType.Snappy,
  lz4: CompressionType.Lz4,
  zstd: CompressionType.Zstd,
};
