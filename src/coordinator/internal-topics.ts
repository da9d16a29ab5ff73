/**
 * What the coordinators do with their internal compacted topics (`__transaction_state`,
 * `__share_group_state`): create one on first use, append a keyed record with acks=all, and
 * read a partition back from its log start to its log end when this broker becomes its leader.
 * To the log end, not the high watermark (Kafka's `FetchIsolation.LOG_END`): a write the old
 * leader acknowledged can lie above the new leader's high watermark until followers fetch again.
 */
import * as fs from "node:fs";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import {
  buildRecordBatch,
  decodeRecords,
  isControl,
  iterateBatches,
  readBatchHeader,
} from "../protocol/record-batch.ts";
import type { FileRange } from "../protocol/records.ts";
import type { AdminManager } from "../server/admin-manager.ts";
import type { MetadataCache } from "../server/metadata-cache.ts";
import type { ReplicaManager } from "../server/replica-manager.ts";

const READ_CHUNK_BYTES = 1 << 20;

export interface InternalTopicSpec {
  readonly name: string;
  readonly numPartitions: number;
  /**
   * Needs as many live brokers, as in Kafka: with fewer the topic is not created (a cluster
   * started one broker at a time must not end up with fewer replicas than configured).
   */
  readonly replicationFactor: number;
  /** The config key that sets it, for the log line when the live brokers are too few. */
  readonly replicationFactorKey: string;
  /** Capped at the replication factor; the broker default when absent. */
  readonly minIsr?: number;
  /** The broker default when absent, with the producer's compression kept. */
  readonly segmentBytes?: number;
}

/**
 * One coordinator's internal topic: its partition count (the existing topic's, else the
 * configured one) and its creation on first use, shared by concurrent callers.
 */
export class InternalTopic {
  private creating: Promise<boolean> | null = null;

  constructor(
    private readonly adminManager: AdminManager,
    private readonly cache: MetadataCache,
    private readonly spec: InternalTopicSpec,
  ) {}

  get partitionCount(): number {
    return this.cache.topic(this.spec.name)?.partitions.length ?? this.spec.numPartitions;
  }

  /** Creates the topic unless it exists; true when this creation made it. */
  async ensure(): Promise<boolean> {
    if (this.cache.topic(this.spec.name) !== undefined) return false;
    this.creating ??= createInternalTopic(this.adminManager, this.cache, this.spec).finally(() => {
      this.creating = null;
    });
    return await this.creating;
  }
}

/**
 * Creates the topic, compacted; false when it already existed. Throws COORDINATOR_NOT_AVAILABLE,
 * creating nothing, while fewer brokers live than its replication factor (Kafka's answer to
 * FindCoordinator then). Embedded mode has one broker for good, so there the factor is capped.
 */
export async function createInternalTopic(
  adminManager: AdminManager,
  cache: MetadataCache,
  spec: InternalTopicSpec,
): Promise<boolean> {
  const live = cache.brokers.length;
  const embedded = cache.brokerConfig["zookeeper.connect"] === null;
  if (!embedded && live < spec.replicationFactor) {
    const message =
      `Number of alive brokers '${live}' does not meet the required replication factor ` +
      `'${spec.replicationFactor}' for the ${spec.name} topic (configured via ` +
      `'${spec.replicationFactorKey}'). This error can be ignored if the cluster is starting ` +
      "up and not all brokers are up yet.";
    adminManager.log.warn(message, { topic: spec.name });
    throw new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, message);
  }
  const replicationFactor = Math.max(1, Math.min(spec.replicationFactor, live));
  const configs = [{ name: "cleanup.policy", value: "compact" }];
  if (spec.minIsr !== undefined) {
    const minIsr = Math.min(spec.minIsr, replicationFactor);
    configs.push({ name: "min.insync.replicas", value: String(minIsr) });
  }
  if (spec.segmentBytes !== undefined) {
    configs.push({ name: "segment.bytes", value: String(spec.segmentBytes) });
    configs.push({ name: "compression.type", value: "uncompressed" });
  }
  try {
    await adminManager.createTopic(
      {
        name: spec.name,
        numPartitions: spec.numPartitions,
        replicationFactor,
        assignments: [],
        configs,
      },
      false,
    );
    return true;
  } catch (error) {
    if (error instanceof KafkaError && error.code === ErrorCode.TOPIC_ALREADY_EXISTS) return false;
    throw error;
  }
}

/**
 * Appends one keyed record with acks=all. Throws KafkaError as Kafka's coordinators map a
 * failed write: NOT_COORDINATOR when this broker no longer leads the partition, else
 * COORDINATOR_NOT_AVAILABLE; both make the sender find the coordinator again and retry.
 */
export async function appendInternal(
  replicaManager: ReplicaManager,
  timeoutMs: number,
  target: { topic: string; partition: number },
  key: Uint8Array,
  value: Uint8Array | null,
  what: string,
): Promise<void> {
  const records = buildRecordBatch([{ key, value }]);
  const [outcome] = await replicaManager.produceRecords(-1, timeoutMs, [
    { ...target, records, internal: true },
  ]);
  if (outcome!.errorCode === ErrorCode.NONE) return;
  const code =
    outcome!.errorCode === ErrorCode.NOT_LEADER_OR_FOLLOWER ||
    outcome!.errorCode === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
      ? ErrorCode.NOT_COORDINATOR
      : ErrorCode.COORDINATOR_NOT_AVAILABLE;
  throw new KafkaError(
    code,
    `writing the state of ${what} failed: ${outcome!.errorMessage ?? outcome!.errorCode}`,
  );
}

/** Calls `onRecord` for every record of the partition, in offset order (control batches aside). */
export async function readInternalPartition(
  replicaManager: ReplicaManager,
  topic: string,
  partition: number,
  onRecord: (key: Uint8Array | null, value: Uint8Array | null) => void,
): Promise<void> {
  let offset = replicaManager.listOffset(topic, partition, -2n).offset;
  // Each pass reads at least one batch or stops: bounded by the partition's size.
  for (;;) {
    const [o] = await replicaManager.fetchMessages({
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: READ_CHUNK_BYTES,
      toLogEnd: true,
      onCancel: () => () => {},
      entries: [{ topic, partition, fetchOffset: offset, partitionMaxBytes: READ_CHUNK_BYTES }],
    });
    if (o!.errorCode !== ErrorCode.NONE) {
      throw new KafkaError(o!.errorCode, `loading ${topic}-${partition}`);
    }
    const bytes = readRanges(o!.records);
    if (bytes.length === 0) return;
    for (const { position, sizeBytes } of iterateBatches(bytes)) {
      const batch = bytes.subarray(position, position + sizeBytes);
      const header = readBatchHeader(batch, 0);
      offset = header.baseOffset + BigInt(header.lastOffsetDelta) + 1n;
      if (isControl(header.attributes)) continue;
      for (const record of decodeRecords(batch)) onRecord(record.key, record.value);
    }
  }
}

/** Copies FileRanges into memory and releases them. */
function readRanges(ranges: readonly FileRange[]): Uint8Array {
  const total = ranges.reduce((n, r) => n + r.sizeBytes, 0);
  const out = new Uint8Array(total);
  let at = 0;
  try {
    for (const r of ranges) {
      let got = 0;
      while (got < r.sizeBytes) {
        const n = fs.readSync(r.fd, out, at + got, r.sizeBytes - got, r.position + got);
        if (n === 0) throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, "short read");
        got += n;
      }
      at += r.sizeBytes;
    }
  } finally {
    for (const r of ranges) r.release();
  }
  return out;
}
