import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { validateProduceRecords } from "../protocol/record-batch.ts";
import type { FileRange } from "../protocol/records.ts";
import type { LogManager } from "../storage/log-manager.ts";
import type { ProducerStateEntry } from "../storage/producer-state-entry.ts";
import { LATEST_TIMESTAMP, type UnifiedLog } from "../storage/unified-log.ts";
import { AssertionError } from "../util/assert.ts";
import { DelayedFetchPurgatory } from "./delayed-fetch-purgatory.ts";
import type { MetadataCache } from "./metadata-cache.ts";

/** Long-poll fetches parked at once, across all connections. */
export const PARKED_FETCHES_MAX = 10_000;

export interface AppendEntry {
  readonly topic: string;
  readonly partition: number;
  readonly records: Uint8Array | null;
}

export interface AppendOutcome {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly baseOffset: bigint;
  readonly logAppendTimeMs: bigint;
  readonly logStartOffset: bigint;
}

export interface FetchEntry {
  readonly topic: string;
  readonly partition: number;
  readonly fetchOffset: bigint;
  readonly partitionMaxBytes: number;
}

export interface FetchOutcome {
  readonly errorCode: number;
  readonly highWatermark: bigint;
  readonly logStartOffset: bigint;
  /** Whole batches as file ranges; the network layer sends and releases them. */
  readonly records: FileRange[];
}

export interface FetchParams {
  readonly maxWaitMs: number;
  readonly minBytes: number;
  readonly maxBytes: number;
  readonly entries: readonly FetchEntry[];
  /** Resolves when the requesting connection closes, so a parked fetch can give up. */
  readonly onCancel: (listener: () => void) => () => void;
}

export interface OffsetLookup {
  readonly errorCode: number;
  readonly timestamp: bigint;
  readonly offset: bigint;
}

/** The idempotent producers a partition remembers (DescribeProducers). */
export interface ActiveProducers {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly producers: readonly ProducerStateEntry[];
}

/**
 * Reads and writes partitions on behalf of clients (Kafka's ReplicaManager): checks that this
 * broker hosts the partition, appends, moves the high watermark, serves reads below it and parks
 * fetches that found too little. In the embedded default the broker is the only replica, so the
 * high watermark is the log end offset after every append and acks=-1 completes at once; cluster
 * mode will move it by the followers' fetch positions instead.
 */
export class ReplicaManager {
  private readonly purgatory = new DelayedFetchPurgatory(PARKED_FETCHES_MAX);

  constructor(
    private readonly logs: LogManager,
    private readonly cache: MetadataCache,
  ) {
    for (const log of logs.allLogs()) log.highWatermark = log.logEndOffset;
    // A fetch parked on a partition that stops existing can be answered (with an error) now.
    cache.onReload(() => this.purgatory.wakeWhere((key) => !this.isHosted(key)));
  }

  private isHosted(key: string): boolean {
    const sep = key.lastIndexOf(PARTITION_KEY_SEPARATOR);
    const topic = this.cache.topic(key.slice(0, sep));
    return topic !== undefined && Number(key.slice(sep + 1)) < topic.partitions.length;
  }

  /** `produceVersion` decides which record formats and codecs the request may carry. */
  appendRecords(acks: number, entries: readonly AppendEntry[], produceVersion: number): AppendOutcome[] {
    return entries.map((e) => this.appendOne(acks, e, produceVersion));
  }

  private appendOne(acks: number, entry: AppendEntry, produceVersion: number): AppendOutcome {
    try {
      const log = this.hostedLog(entry.topic, entry.partition);
      if (acks === -1) this.checkMinInsyncReplicas(entry.topic);
      if (entry.records === null) {
        throw new KafkaError(ErrorCode.INVALID_RECORD, "produce request without records");
      }
      validateProduceRecords(entry.records, produceVersion);
      const result = log.append(entry.records, { assignOffsets: true });
      log.highWatermark = log.logEndOffset;
      this.purgatory.onAppend(partitionKey(entry.topic, entry.partition), entry.records.length);
      return {
        errorCode: ErrorCode.NONE,
        errorMessage: null,
        baseOffset: result.baseOffset,
        logAppendTimeMs: BigInt(result.logAppendTimeMs),
        logStartOffset: result.logStartOffset,
      };
    } catch (e) {
      const error = asKafkaError(e);
      return { errorCode: error.code, errorMessage: error.message, baseOffset: -1n, logAppendTimeMs: -1n, logStartOffset: -1n };
    }
  }

  /** The ISR here is this broker alone; a topic asking for more in-sync replicas cannot take acks=-1. */
  private checkMinInsyncReplicas(topic: string): void {
    const t = this.cache.topic(topic);
    const required = t?.configs["min.insync.replicas"] ?? this.cache.brokerConfig["min.insync.replicas"];
    const isrSize = t?.partitions[0]?.isr.length ?? 1;
    if (isrSize < required) {
      throw new KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS,
        `The size of the current ISR ${isrSize} is insufficient to satisfy the min.isr requirement of ${required}`);
    }
  }

  /**
   * Reads every partition within the byte budgets; if fewer than minBytes came back and the
   * client is willing to wait, parks until appends bring enough, the wait ends, or the client
   * goes away, then reads once more.
   */
  async fetchMessages(params: FetchParams): Promise<FetchOutcome[]> {
    const first = this.readAll(params);
    const sizeBytes = first.reduce((n, o) => n + rangesBytes(o.records), 0);
    const anyError = first.some((o) => o.errorCode !== ErrorCode.NONE);
    if (sizeBytes >= params.minBytes || params.maxWaitMs <= 0 || anyError || params.entries.length === 0) {
      return first;
    }
    for (const o of first) releaseAll(o.records);
    const keys = params.entries.map((e) => partitionKey(e.topic, e.partition));
    const op = this.purgatory.park(keys, params.minBytes - sizeBytes, params.maxWaitMs);
    const unsubscribe = params.onCancel(() => op.complete("cancelled"));
    const outcome = await op.done;
    unsubscribe();
    if (outcome === "cancelled") return params.entries.map(() => EMPTY_OUTCOME);
    return this.readAll(params);
  }

  private readAll(params: FetchParams): FetchOutcome[] {
    let budgetBytes = params.maxBytes;
    let haveData = false;
    return params.entries.map((entry) => {
      const outcome = this.readOne(entry, Math.min(budgetBytes, entry.partitionMaxBytes), !haveData);
      const readBytes = rangesBytes(outcome.records);
      budgetBytes = Math.max(0, budgetBytes - readBytes);
      if (readBytes > 0) haveData = true;
      return outcome;
    });
  }

  private readOne(entry: FetchEntry, maxBytes: number, minOneMessage: boolean): FetchOutcome {
    let log: UnifiedLog;
    try {
      log = this.hostedLog(entry.topic, entry.partition);
    } catch (e) {
      return { ...EMPTY_OUTCOME, errorCode: asKafkaError(e).code };
    }
    const base = { highWatermark: log.highWatermark, logStartOffset: log.logStartOffset };
    try {
      const read = log.read(entry.fetchOffset, maxBytes, { maxOffset: log.highWatermark, minOneMessage });
      return { ...base, errorCode: ErrorCode.NONE, records: read.ranges };
    } catch (e) {
      return { ...base, errorCode: asKafkaError(e).code, records: [] };
    }
  }

  /**
   * ListOffsets for a consumer: earliest, latest (the high watermark, since nothing above it may
   * be read), max timestamp, or the first offset at or after a timestamp.
   */
  listOffset(topic: string, partition: number, timestamp: bigint): OffsetLookup {
    try {
      const log = this.hostedLog(topic, partition);
      if (timestamp === LATEST_TIMESTAMP) {
        return { errorCode: ErrorCode.NONE, timestamp: -1n, offset: log.highWatermark };
      }
      const found = log.offsetForTimestamp(timestamp);
      if (found === null) return { errorCode: ErrorCode.NONE, timestamp: -1n, offset: -1n };
      return { errorCode: ErrorCode.NONE, timestamp: found.timestamp, offset: found.offset };
    } catch (e) {
      return { errorCode: asKafkaError(e).code, timestamp: -1n, offset: -1n };
    }
  }

  /** The producer state of a partition this broker leads. */
  activeProducers(topic: string, partition: number): ActiveProducers {
    try {
      const log = this.hostedLog(topic, partition);
      const producers = [...log.producerState.activeProducers()];
      return { errorCode: ErrorCode.NONE, errorMessage: null, producers };
    } catch (e) {
      const error = asKafkaError(e);
      return { errorCode: error.code, errorMessage: error.message, producers: [] };
    }
  }

  /** Answers every parked fetch at once (shutdown). */
  completeDelayedFetches(): void {
    this.purgatory.completeAll();
  }

  private hostedLog(topic: string, partition: number): UnifiedLog {
    const log = this.logs.getLog(topic, partition);
    if (log === undefined || this.cache.topic(topic) === undefined) {
      throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        `This server does not host this topic-partition: ${topic}-${partition}`);
    }
    return log;
  }
}

const EMPTY_OUTCOME: FetchOutcome = Object.freeze({
  errorCode: ErrorCode.NONE, highWatermark: -1n, logStartOffset: -1n, records: [],
});

const PARTITION_KEY_SEPARATOR = "\u0000";
export const partitionKey = (topic: string, partition: number): string =>
  `${topic}${PARTITION_KEY_SEPARATOR}${partition}`;

function rangesBytes(ranges: readonly FileRange[]): number {
  let n = 0;
  for (const r of ranges) n += r.sizeBytes;
  return n;
}

function releaseAll(ranges: readonly FileRange[]): void {
  for (const r of ranges) r.release();
}

/** Operating errors keep their code; anything else is a bug, reported as UNKNOWN_SERVER_ERROR. */
function asKafkaError(e: unknown): KafkaError {
  if (e instanceof KafkaError) return e;
  if (e instanceof AssertionError || !(e instanceof Error)) throw e;
  console.error(`[replica-manager] unexpected error: ${e.stack ?? e.message}`);
  return new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, e.message);
}
