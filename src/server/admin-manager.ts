import { randomBytes } from "node:crypto";
import type { MetadataStore, TopicRecord } from "../cluster/metadata-store.ts";
import type { BrokerConfig } from "../config/broker-config.ts";
import { ConfigError } from "../config/config-error.ts";
import {
  formatTopicConfigs, parseTopicConfigs, type TopicConfigOverrides,
} from "../config/topic-config.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import type { LogManager } from "../storage/log-manager.ts";
import { logConfigFor } from "./log-config-for-topic.ts";
import type { MetadataCache } from "./metadata-cache.ts";

/** Kafka's limit on topic names (so `<topic>-<partition>` fits a file name) and its alphabet. */
const TOPIC_NAME_BYTES_MAX = 249;
const TOPIC_NAME = /^[a-zA-Z0-9._-]+$/;
/** Partitions one topic may have; every partition holds open files, so this bounds them. */
export const PARTITIONS_PER_TOPIC_MAX = 10_000;

export interface NewTopic {
  readonly name: string;
  /** -1: the broker's num.partitions. */
  readonly numPartitions: number;
  /** -1: the broker's default.replication.factor. */
  readonly replicationFactor: number;
  /** Explicit replica assignment by partition; empty for automatic. */
  readonly assignments: readonly { readonly partitionIndex: number; readonly brokerIds: readonly number[] }[];
  readonly configs: readonly { readonly name: string; readonly value: string | null }[];
}

export interface CreatedTopic {
  readonly topicId: Uint8Array;
  readonly numPartitions: number;
  readonly replicationFactor: number;
  readonly configs: TopicConfigOverrides;
}

/**
 * Topic administration (Kafka's ZkAdminManager): create, delete, add partitions, change configs.
 * Each operation checks its input, writes the MetadataStore, then brings the local logs and the
 * MetadataCache in line. Failures are KafkaErrors whose code the handlers return per topic.
 */
export class AdminManager {
  constructor(
    private readonly config: BrokerConfig,
    private readonly brokerIds: () => readonly number[],
    private readonly store: MetadataStore,
    private readonly cache: MetadataCache,
    private readonly logs: LogManager,
  ) {}

  async createTopic(topic: NewTopic, validateOnly: boolean): Promise<CreatedTopic> {
    checkTopicName(topic.name);
    if (this.store.topic(topic.name) !== undefined) {
      throw new KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${topic.name}' already exists.`);
    }
    const assignment = this.assignmentFor(topic);
    const configs = parseConfigs(topic.configs);
    const created: CreatedTopic = {
      topicId: randomBytes(16),
      numPartitions: assignment.length,
      replicationFactor: assignment[0]?.length ?? 0,
      configs,
    };
    if (validateOnly) return created;
    const record: TopicRecord = {
      name: topic.name,
      topicIdHex: Buffer.from(created.topicId).toString("hex"),
      assignment,
      configs: formatTopicConfigs(configs),
    };
    await this.store.createTopic(record);
    this.cache.reload();
    this.createLocalLogs(topic.name, 0, assignment.length, configs);
    return created;
  }

  async deleteTopic(name: string): Promise<Uint8Array> {
    if (!this.config["delete.topic.enable"]) {
      throw new KafkaError(ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled.");
    }
    const topic = this.cache.topic(name);
    if (topic === undefined) {
      throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Topic '${name}' does not exist.`);
    }
    await this.store.deleteTopic(name);
    this.cache.reload();
    await Promise.all(topic.partitions.map((p) => this.logs.deleteLog(name, p.partition)));
    return topic.topicId;
  }

  async createPartitions(name: string, count: number, validateOnly: boolean): Promise<void> {
    const record = this.store.topic(name);
    if (record === undefined) {
      throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Topic '${name}' does not exist.`);
    }
    const current = record.assignment.length;
    if (count <= current) {
      throw new KafkaError(ErrorCode.INVALID_PARTITIONS,
        `Topic currently has ${current} partitions, which is higher than or equal to the requested ${count}.`);
    }
    checkPartitionCount(count);
    const replicationFactor = record.assignment[0]?.length ?? 1;
    const added = this.autoAssign(current, count - current, replicationFactor);
    if (validateOnly) return;
    await this.store.updateTopic({ ...record, assignment: [...record.assignment, ...added] });
    this.cache.reload();
    this.createLocalLogs(name, current, count, this.cache.topic(name)?.configs ?? {});
  }

  /** Replaces a topic's overrides (AlterConfigs semantics; IncrementalAlterConfigs merges first). */
  async setTopicConfigs(
    name: string,
    configs: readonly { readonly name: string; readonly value: string | null }[],
    validateOnly: boolean,
  ): Promise<void> {
    const record = this.store.topic(name);
    if (record === undefined) {
      throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Topic '${name}' does not exist.`);
    }
    const overrides = parseConfigs(configs);
    if (validateOnly) return;
    await this.store.updateTopic({ ...record, configs: formatTopicConfigs(overrides) });
    this.cache.reload();
    const logConfig = logConfigFor(overrides, this.config);
    for (let p = 0; p < record.assignment.length; p++) this.logs.getLog(name, p)?.updateConfig(logConfig);
  }

  private createLocalLogs(name: string, from: number, to: number, configs: TopicConfigOverrides): void {
    const logConfig = logConfigFor(configs, this.config);
    for (let p = from; p < to; p++) this.logs.getOrCreateLog(name, p, logConfig);
  }

  private assignmentFor(topic: NewTopic): number[][] {
    if (topic.assignments.length > 0) return this.checkedAssignment(topic);
    const count = topic.numPartitions === -1 ? this.config["num.partitions"] : topic.numPartitions;
    const replicationFactor =
      topic.replicationFactor === -1 ? this.config["default.replication.factor"] : topic.replicationFactor;
    checkPartitionCount(count);
    return this.autoAssign(0, count, replicationFactor);
  }

  private checkedAssignment(topic: NewTopic): number[][] {
    if (topic.numPartitions !== -1 || topic.replicationFactor !== -1) {
      throw new KafkaError(ErrorCode.INVALID_REQUEST,
        "Both numPartitions or replicationFactor and replicasAssignment were set.");
    }
    const live = new Set(this.brokerIds());
    const sorted = [...topic.assignments].sort((a, b) => a.partitionIndex - b.partitionIndex);
    checkPartitionCount(sorted.length);
    return sorted.map((a, i) => {
      const ids = [...a.brokerIds];
      const valid = a.partitionIndex === i && ids.length > 0 && new Set(ids).size === ids.length &&
        ids.every((id) => live.has(id));
      if (!valid) {
        throw new KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
          `Invalid replica assignment for partition ${a.partitionIndex}: [${ids.join(",")}]`);
      }
      return ids;
    });
  }

  /** Kafka's round-robin placement, starting each partition's replicas one broker further on. */
  private autoAssign(firstPartition: number, count: number, replicationFactor: number): number[][] {
    const brokers = [...this.brokerIds()].sort((a, b) => a - b);
    if (replicationFactor < 1 || replicationFactor > brokers.length) {
      throw new KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
        `Replication factor: ${replicationFactor} larger than available brokers: ${brokers.length}.`);
    }
    return Array.from({ length: count }, (_, i) =>
      Array.from({ length: replicationFactor }, (_, r) => brokers[(firstPartition + i + r) % brokers.length]));
  }
}

function checkTopicName(name: string): void {
  const problem =
    name.length === 0 ? "the empty string"
    : name === "." || name === ".." ? `'${name}'`
    : name.length > TOPIC_NAME_BYTES_MAX ? `longer than ${TOPIC_NAME_BYTES_MAX} characters`
    : !TOPIC_NAME.test(name) ? "not only ASCII alphanumerics, '.', '_' and '-'"
    : null;
  if (problem !== null) {
    throw new KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, `Topic name '${name}' is illegal: ${problem}.`);
  }
}

function checkPartitionCount(count: number): void {
  if (!Number.isInteger(count) || count < 1 || count > PARTITIONS_PER_TOPIC_MAX) {
    throw new KafkaError(ErrorCode.INVALID_PARTITIONS,
      `Number of partitions must be between 1 and ${PARTITIONS_PER_TOPIC_MAX}, got ${count}.`);
  }
}

function parseConfigs(configs: readonly { readonly name: string; readonly value: string | null }[]) {
  try {
    return parseTopicConfigs(configs);
  } catch (e) {
    if (e instanceof ConfigError) throw new KafkaError(ErrorCode.INVALID_CONFIG, e.message);
    throw e;
  }
}

export { checkTopicName };
