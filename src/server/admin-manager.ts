import { randomBytes } from "node:crypto";
import type { BrokerConfig } from "../config/broker-config.ts";
import { ConfigError } from "../config/config-error.ts";
import {
  checkTopicConfig,
  formatTopicConfigs,
  isTopicConfigKey,
  parseTopicConfigs,
  TOPIC_CONFIG_KEYS,
  TopicConfigConflict,
  type TopicConfigKey,
  type TopicConfigOverrides,
  topicConfig,
} from "../config/topic-config.ts";
import { type MetadataStore, TOPICS_MAX, type TopicRecord } from "../metadata/metadata-store.ts";
import { assignReplicasToBrokers } from "../metadata/replica-assignment.ts";
import { reassignmentInProgress } from "../metadata/zookeeper-metadata-store.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import type { LogManager } from "../storage/log-manager.ts";
import { assert } from "../util/assert.ts";
import { type Logger, SILENT_LOGGER } from "../util/logger.ts";
import {
  type ControllerMutationQuota,
  UNBOUNDED_MUTATION_QUOTA,
} from "./controller-mutation-quota.ts";
import { logConfigFor } from "./log-config-for-topic.ts";
import type { MetadataCache } from "./metadata-cache.ts";

/** Kafka's limit on topic names (so `<topic>-<partition>` fits a file name) and its alphabet. */
const TOPIC_NAME_BYTES_MAX = 249;
const TOPIC_NAME = /^[a-zA-Z0-9._-]+$/;
/** Partitions one topic may have; every partition holds open files, so this bounds them. */
export const PARTITIONS_PER_TOPIC_MAX = 10_000;
/**
 * Partitions one broker hosts across all topics: LogManager's default limit on open logs
 * (broker.ts does not change it). Checked before a topic is written, so a request that would
 * pass it fails whole instead of leaving a topic without some of its logs.
 */
export const PARTITIONS_PER_BROKER_MAX = 100_000;
/** CreateTopics' and CreatePartitions' "use the broker default" value. */
const USE_DEFAULT = -1;
const ZERO_TOPIC_ID = new Uint8Array(16);

export interface ConfigEntry {
  readonly name: string;
  readonly value: string | null;
}

export interface ReplicaAssignment {
  readonly partitionIndex: number;
  readonly brokerIds: readonly number[];
}

export interface NewTopic {
  readonly name: string;
  /** -1: the broker's num.partitions. */
  readonly numPartitions: number;
  /** -1: the broker's default.replication.factor. */
  readonly replicationFactor: number;
  /** Explicit replica assignment by partition; empty for automatic. */
  readonly assignments: readonly ReplicaAssignment[];
  readonly configs: readonly ConfigEntry[];
}

export interface CreatedTopic {
  /** All zeros when only validated: no topic was created, so it has no id. */
  readonly topicId: Uint8Array;
  readonly numPartitions: number;
  readonly replicationFactor: number;
  readonly configs: TopicConfigOverrides;
}

/** IncrementalAlterConfigs operations, by their wire numbers. */
export const ConfigOperation = { SET: 0, DELETE: 1, APPEND: 2, SUBTRACT: 3 } as const;

export interface ConfigChange {
  readonly name: string;
  /** A ConfigOperation value. */
  readonly operation: number;
  readonly value: string | null;
}

/**
 * Topic administration (Kafka's ZkAdminManager): create, delete, add partitions, change configs.
 * Each operation checks its input in Kafka's order and with Kafka's messages, writes the
 * MetadataStore, then brings the local logs and the MetadataCache in line. Failures are
 * KafkaErrors whose code and message the handlers return per topic or resource.
 */
export class AdminManager {
  constructor(
    private readonly brokerIds: () => readonly number[],
    private readonly store: MetadataStore,
    private readonly cache: MetadataCache,
    private readonly logs: LogManager,
    /** Where topic administration says what it refused (internal topics without brokers). */
    readonly log: Logger = SILENT_LOGGER,
  ) {}

  /** The broker config now: dynamic changes of topic defaults apply to the next request. */
  private get config(): BrokerConfig {
    return this.cache.brokerConfig;
  }

  /**
   * Creates a topic. `quota` counts its partitions after every check passed and before anything
   * is written (not when only validating), as Kafka's ZkAdminManager; a strict quota that is
   * exhausted throws THROTTLING_QUOTA_EXCEEDED there.
   */
  async createTopic(
    topic: NewTopic,
    validateOnly: boolean,
    quota: ControllerMutationQuota = UNBOUNDED_MUTATION_QUOTA,
  ): Promise<CreatedTopic> {
    if (this.store.topic(topic.name) !== undefined) {
      throw new KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${topic.name}' already exists.`);
    }
    const nullConfigs = topic.configs.filter((c) => c.value === null).map((c) => c.name);
    if (nullConfigs.length > 0) {
      throw new KafkaError(
        ErrorCode.INVALID_REQUEST,
        `Null value not supported for topic configs : ${nullConfigs.join(",")}`,
      );
    }
    const automatic = this.automaticAssignment(topic);
    checkTopicName(topic.name);
    this.checkNoCollision(topic.name);
    const assignment = automatic ?? this.checkedAssignment(topic);
    const configs = parseCreateConfigs(topic.configs, this.config);
    this.checkBrokerLimits(1, assignment.length);
    assert(assignment.length >= 1, `topic ${topic.name} would have no partitions`);
    assert(
      assignment.every((r) => r.length === assignment[0]!.length),
      `topic ${topic.name} would have unequal replication factors`,
    );
    const created = {
      topicId: validateOnly ? ZERO_TOPIC_ID : new Uint8Array(randomBytes(16)),
      numPartitions: assignment.length,
      replicationFactor: assignment[0]!.length,
      configs,
    };
    if (validateOnly) return created;
    quota.record(assignment.length);
    const record: TopicRecord = {
      name: topic.name,
      topicIdHex: Buffer.from(created.topicId).toString("hex"),
      assignment,
      configs: formatTopicConfigs(configs),
    };
    await this.store.createTopic(record);
    this.cache.reload();
    assert(this.cache.topic(topic.name) !== undefined, `created topic ${topic.name} not cached`);
    await this.createLocalLogs(topic.name, 0, assignment.length, configs);
    return created;
  }

  /** Deletes a topic and its logs; returns the id it had. `quota` counts its partitions. */
  async deleteTopic(
    name: string,
    quota: ControllerMutationQuota = UNBOUNDED_MUTATION_QUOTA,
  ): Promise<Uint8Array> {
    if (!this.config["delete.topic.enable"]) {
      throw new KafkaError(ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled.");
    }
    const topic = this.cache.topic(name);
    if (topic === undefined) {
      throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Topic '${name}' does not exist.`);
    }
    quota.record(topic.partitions.length);
    await this.store.deleteTopic(name);
    this.cache.reload();
    assert(this.cache.topic(name) === undefined, `deleted topic ${name} still cached`);
    await Promise.all(topic.partitions.map((p) => this.logs.deleteLog(name, p.partition)));
    return topic.topicId;
  }

  /**
   * Grows a topic to `count` partitions. `assignments` places the new partitions (one broker
   * list per new partition), or null for Kafka's round-robin placement. `quota` counts the new
   * partitions once they are checked.
   */
  async createPartitions(
    name: string,
    count: number,
    assignments: readonly (readonly number[])[] | null,
    validateOnly: boolean,
    quota: ControllerMutationQuota = UNBOUNDED_MUTATION_QUOTA,
  ): Promise<void> {
    const record = this.existingTopic(name);
    // Kafka checks this first, before the counts and the placement (ZkAdminManager).
    if (this.store.isReassigning(name)) throw reassignmentInProgress(name);
    const current = record.assignment.length;
    if (count < current) {
      throw new KafkaError(
        ErrorCode.INVALID_PARTITIONS,
        `Topic currently has ${current} partitions, which is higher than the requested ${count}.`,
      );
    }
    if (count === current) {
      throw new KafkaError(
        ErrorCode.INVALID_PARTITIONS,
        `Topic already has ${current} partitions.`,
      );
    }
    checkPartitionCount(count);
    const replicationFactor = record.assignment[0]!.length;
    const added =
      assignments === null
        ? this.autoAssign(current, count - current, replicationFactor, record.assignment)
        : this.checkedNewPartitions(assignments, current, count, replicationFactor);
    this.checkBrokerLimits(0, added.length);
    assert(current + added.length === count, `topic ${name} would have ${current}+${added.length}`);
    if (validateOnly) return;
    quota.record(added.length);
    await this.store.updateTopic({ ...record, assignment: [...record.assignment, ...added] });
    this.cache.reload();
    await this.createLocalLogs(name, current, count, this.cache.topic(name)?.configs ?? {});
  }

  /** Replaces a topic's overrides (AlterConfigs): keys not named fall back to the broker. */
  async setTopicConfigs(
    name: string,
    configs: readonly ConfigEntry[],
    validateOnly: boolean,
  ): Promise<void> {
    checkConfigShape(configs.map((c) => ({ ...c, operation: ConfigOperation.SET })));
    const record = this.existingTopic(name);
    const overrides = parseAlterConfigs(name, configs, this.config);
    if (!validateOnly) await this.applyTopicConfigs(record, overrides);
  }

  /**
   * Applies SET/DELETE/APPEND/SUBTRACT to a topic's current overrides (IncrementalAlterConfigs).
   * APPEND and SUBTRACT start from the topic's effective value when it has no override.
   */
  async alterTopicConfigs(
    name: string,
    changes: readonly ConfigChange[],
    validateOnly: boolean,
  ): Promise<void> {
    checkConfigShape(changes);
    const record = this.existingTopic(name);
    const current = this.cache.topic(name)?.configs ?? {};
    const merged = new Map(Object.entries(record.configs));
    for (const change of changes) applyChange(merged, change, current, this.config);
    const entries = [...merged].map(([n, value]) => ({ name: n, value }));
    const overrides = parseAlterConfigs(name, entries, this.config);
    if (!validateOnly) await this.applyTopicConfigs(record, overrides);
  }

  /**
   * Kafka has no such limits; Quill bounds what one broker holds, and answers POLICY_VIOLATION
   * (a broker-side rule the request breaks) rather than failing half-way.
   */
  private checkBrokerLimits(newTopics: number, newPartitions: number): void {
    const topics = this.store.topics();
    if (topics.length + newTopics > TOPICS_MAX) {
      throw new KafkaError(
        ErrorCode.POLICY_VIOLATION,
        `This broker holds at most ${TOPICS_MAX} topics.`,
      );
    }
    const partitions = topics.reduce((sum, t) => sum + t.assignment.length, 0);
    if (partitions + newPartitions > PARTITIONS_PER_BROKER_MAX) {
      throw new KafkaError(
        ErrorCode.POLICY_VIOLATION,
        `This broker holds at most ${PARTITIONS_PER_BROKER_MAX} partitions; it has ` +
          `${partitions}, the request adds ${newPartitions}.`,
      );
    }
  }

  private existingTopic(name: string): TopicRecord {
    const record = this.store.topic(name);
    if (record === undefined) {
      throw new KafkaError(
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        `The topic '${name}' does not exist.`,
      );
    }
    return record;
  }

  /** Persists the overrides, then hands the new settings to every running log of the topic. */
  private async applyTopicConfigs(record: TopicRecord, overrides: TopicConfigOverrides) {
    await this.store.updateTopic({ ...record, configs: formatTopicConfigs(overrides) });
    this.cache.reload();
    const logConfig = logConfigFor(overrides, this.config);
    for (let p = 0; p < record.assignment.length; p++) {
      this.logs.getLog(record.name, p)?.updateConfig(logConfig);
    }
  }

  /** The new partitions' logs, their files made on the thread pool (LogManager.createLogs). */
  private async createLocalLogs(
    name: string,
    from: number,
    to: number,
    configs: TopicConfigOverrides,
  ): Promise<void> {
    // In a cluster the controller's LeaderAndIsr creates each replica's log, as in Kafka.
    if (this.config["zookeeper.connect"] !== null) return;
    const logConfig = logConfigFor(configs, this.config);
    const partitions = Array.from({ length: to - from }, (_, i) => from + i);
    await this.logs.createLogs(name, partitions, logConfig);
  }

  /** Round-robin placement, or null when the request assigns replicas itself. */
  private automaticAssignment(topic: NewTopic): number[][] | null {
    const explicit = topic.assignments.length > 0;
    const sized = topic.numPartitions !== USE_DEFAULT || topic.replicationFactor !== USE_DEFAULT;
    if (explicit && sized) {
      throw new KafkaError(
        ErrorCode.INVALID_REQUEST,
        "Both numPartitions or replicationFactor and replicasAssignments were set. " +
          "Both cannot be used at the same time.",
      );
    }
    if (explicit) return null;
    const count =
      topic.numPartitions === USE_DEFAULT ? this.config["num.partitions"] : topic.numPartitions;
    const replicationFactor =
      topic.replicationFactor === USE_DEFAULT
        ? this.config["default.replication.factor"]
        : topic.replicationFactor;
    if (count <= 0) {
      throw new KafkaError(
        ErrorCode.INVALID_PARTITIONS,
        "Number of partitions must be larger than 0.",
      );
    }
    checkPartitionCount(count);
    return this.autoAssign(0, count, replicationFactor);
  }

  /** Kafka's validateTopicCreate checks, plus: every broker must exist (as KRaft requires). */
  private checkedAssignment(topic: NewTopic): number[][] {
    const sorted = [...topic.assignments].sort((a, b) => a.partitionIndex - b.partitionIndex);
    checkPartitionCount(sorted.length);
    const sizes = new Set(sorted.map((a) => a.brokerIds.length));
    if (sizes.size !== 1) {
      throw new KafkaError(
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "All partitions should have the same number of replicas",
      );
    }
    if (sorted.some((a) => new Set(a.brokerIds).size !== a.brokerIds.length)) {
      throw new KafkaError(
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        `Duplicate replica assignment found: ${assignmentText(sorted)}`,
      );
    }
    if (sorted.some((a, i) => a.partitionIndex !== i)) {
      throw new KafkaError(
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "partitions should be a consecutive 0-based integer sequence",
      );
    }
    const ids = sorted.map((a) => [...a.brokerIds]);
    this.checkReplicas(ids, 0);
    return ids;
  }

  /** New partitions' replicas: as many lists as new partitions, known brokers, same factor. */
  private checkedNewPartitions(
    assignments: readonly (readonly number[])[],
    current: number,
    count: number,
    replicationFactor: number,
  ): number[][] {
    const live = new Set(this.brokerIds());
    const unknown = [...new Set(assignments.flat())].filter((id) => !live.has(id));
    if (unknown.length > 0) {
      throw new KafkaError(
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        `Unknown broker(s) in replica assignment: ${unknown.join(", ")}.`,
      );
    }
    if (assignments.length !== count - current) {
      throw new KafkaError(
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        `Increasing the number of partitions by ${count - current} but ` +
          `${assignments.length} assignments provided.`,
      );
    }
    const ids = assignments.map((a) => [...a]);
    this.checkReplicas(ids, current);
    const bad = ids
      .map((replicas, i) => [current + i, replicas.length])
      .filter(([, n]) => n !== replicationFactor);
    if (bad.length > 0) {
      const partitions = bad.map(([p]) => p).join(", ");
      const factors = bad.map(([, n]) => n).join(", ");
      throw new KafkaError(
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "Inconsistent replication factor between partitions, " +
          `partition 0 has ${replicationFactor} while partitions [${partitions}] have ` +
          `replication factors [${factors}], respectively.`,
      );
    }
    return ids;
  }

  /** Each partition needs at least one replica, no broker twice, and only brokers that exist. */
  private checkReplicas(assignment: readonly (readonly number[])[], firstPartition: number): void {
    const live = new Set(this.brokerIds());
    assignment.forEach((replicas, i) => {
      const partition = firstPartition + i;
      if (replicas.length === 0) {
        throw new KafkaError(
          ErrorCode.INVALID_REPLICA_ASSIGNMENT,
          `Cannot have replication factor of 0 for partition id ${partition}.`,
        );
      }
      if (new Set(replicas).size !== replicas.length) {
        throw new KafkaError(
          ErrorCode.INVALID_REPLICA_ASSIGNMENT,
          `Duplicate brokers not allowed in replica assignment: ${replicas.join(", ")} ` +
            `for partition id ${partition}.`,
        );
      }
      const missing = replicas.find((id) => !live.has(id));
      if (missing !== undefined) {
        throw new KafkaError(
          ErrorCode.INVALID_REPLICA_ASSIGNMENT,
          `The manual partition assignment includes broker ${missing}, but no broker with ` +
            "that ID is registered.",
        );
      }
    });
  }

  /** Kafka refuses names that differ from an existing one only by '.' versus '_'. */
  private checkNoCollision(name: string): void {
    if (!/[._]/.test(name)) return;
    const unified = unifyCollisionChars(name);
    const colliding = this.store.topics().filter((t) => unifyCollisionChars(t.name) === unified);
    if (colliding.length > 0) {
      const names = colliding.map((t) => t.name).join(", ");
      throw new KafkaError(
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        `Topic '${name}' collides with existing topics: ${names}`,
      );
    }
  }

  /**
   * Kafka's placement over the live brokers (rack-aware when every broker has a rack). New
   * partitions of an existing topic continue the round robin from its first partition's leader.
   */
  private autoAssign(
    firstPartition: number,
    count: number,
    replicationFactor: number,
    existing: readonly (readonly number[])[] = [],
  ): number[][] {
    const brokers = this.brokerIds().map((id) => ({
      id,
      rack: this.cache.broker(id)?.rack ?? null,
    }));
    const sortedIds = brokers.map((b) => b.id).sort((a, b) => a - b);
    const firstLeader = existing[0]?.[0];
    const fixedStartIndex =
      firstLeader === undefined
        ? undefined
        : Math.max(
            0,
            sortedIds.findIndex((id) => id >= firstLeader),
          );
    return assignReplicasToBrokers(brokers, count, replicationFactor, {
      startPartition: firstPartition,
      fixedStartIndex,
    });
  }
}

/** Kafka's Topic.validate, with its messages. */
export function checkTopicName(name: string): void {
  const problem =
    name.length === 0
      ? "Topic name is illegal, it can't be empty"
      : name === "." || name === ".."
        ? 'Topic name cannot be "." or ".."'
        : name.length > TOPIC_NAME_BYTES_MAX
          ? `Topic name is illegal, it can't be longer than ${TOPIC_NAME_BYTES_MAX} characters, ` +
            `topic name: ${name}`
          : !TOPIC_NAME.test(name)
            ? `Topic name "${name}" is illegal, it contains a character other than ASCII ` +
              "alphanumerics, '.', '_' and '-'"
            : null;
  if (problem !== null) throw new KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, problem);
}

const unifyCollisionChars = (name: string) => name.replaceAll(".", "_");

function checkPartitionCount(count: number): void {
  if (!Number.isInteger(count) || count < 1 || count > PARTITIONS_PER_TOPIC_MAX) {
    throw new KafkaError(
      ErrorCode.INVALID_PARTITIONS,
      `Number of partitions must be between 1 and ${PARTITIONS_PER_TOPIC_MAX}, got ${count}.`,
    );
  }
}

function assignmentText(sorted: readonly ReplicaAssignment[]): string {
  const entries = sorted.map((a) => `${a.partitionIndex} -> [${a.brokerIds.join(", ")}]`);
  return `Map(${entries.join(", ")})`;
}

/** CreateTopics: an unknown key or a bad value is INVALID_CONFIG, as Kafka answers both. */
function parseCreateConfigs(
  configs: readonly ConfigEntry[],
  broker: BrokerConfig,
): TopicConfigOverrides {
  try {
    const overrides = parseTopicConfigs(configs);
    checkTopicConfig(overrides, broker);
    return overrides;
  } catch (e) {
    if (e instanceof ConfigError) throw new KafkaError(ErrorCode.INVALID_CONFIG, e.message);
    throw e;
  }
}

/**
 * AlterConfigs and IncrementalAlterConfigs: an unknown key is INVALID_CONFIG, but a bad value
 * is INVALID_REQUEST, because Kafka's ZkAdminManager turns the ConfigException of a value into
 * an InvalidRequestException naming the resource.
 */
function parseAlterConfigs(
  topic: string,
  configs: readonly ConfigEntry[],
  broker: BrokerConfig,
): TopicConfigOverrides {
  const unknown = configs.find((c) => !isTopicConfigKey(c.name));
  if (unknown !== undefined) {
    throw new KafkaError(ErrorCode.INVALID_CONFIG, `Unknown topic config name: ${unknown.name}`);
  }
  try {
    const overrides = parseTopicConfigs(configs);
    checkTopicConfig(overrides, broker);
    return overrides;
  } catch (e) {
    if (e instanceof TopicConfigConflict) throw new KafkaError(ErrorCode.INVALID_CONFIG, e.message);
    if (!(e instanceof ConfigError)) throw e;
    const resource = `ConfigResource(type=TOPIC, name='${topic}')`;
    throw new KafkaError(
      ErrorCode.INVALID_REQUEST,
      `Invalid config value for resource ${resource}: ${e.message}`,
    );
  }
}

/**
 * Kafka's preprocessing of an AlterConfigs or IncrementalAlterConfigs resource (3.9's
 * ConfigAdminManager.preprocess): every key once, and a value for everything but DELETE.
 */
export function checkConfigShape(changes: readonly ConfigChange[]): void {
  const names = changes.map((c) => c.name);
  if (new Set(names).size !== names.length) {
    throw new KafkaError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys");
  }
  const nullUpdates = changes
    .filter((c) => c.value === null && c.operation !== ConfigOperation.DELETE)
    .map((c) => c.name);
  if (nullUpdates.length > 0) {
    throw new KafkaError(
      ErrorCode.INVALID_REQUEST,
      `Null value not supported for : ${nullUpdates.join(", ")}`,
    );
  }
}

/**
 * One IncrementalAlterConfigs operation on the override strings. APPEND and SUBTRACT work on
 * list keys only (cleanup.policy); without an override they start from the topic's effective
 * value (Kafka's ZooKeeper mode starts from the static default, which equals it unless the
 * operator changed the broker's log.cleanup.policy). APPEND skips items already present, as
 * Kafka's KRaft controller does.
 */
function applyChange(
  merged: Map<string, string>,
  change: ConfigChange,
  current: TopicConfigOverrides,
  broker: BrokerConfig,
): void {
  const { name, operation, value } = change;
  if (operation === ConfigOperation.SET) {
    merged.set(name, value!);
  } else if (operation === ConfigOperation.DELETE) {
    merged.delete(name);
  } else if (operation === ConfigOperation.APPEND || operation === ConfigOperation.SUBTRACT) {
    merged.set(name, appliedToList(merged, change, current, broker));
  } else {
    throw new KafkaError(ErrorCode.INVALID_REQUEST, `Unknown config operation ${operation}`);
  }
}

function appliedToList(
  merged: Map<string, string>,
  { name, operation, value }: ConfigChange,
  current: TopicConfigOverrides,
  broker: BrokerConfig,
): string {
  if (!isTopicConfigKey(name)) {
    throw new KafkaError(ErrorCode.INVALID_CONFIG, `Unknown topic config name: ${name}`);
  }
  const verb = operation === ConfigOperation.APPEND ? "append" : "subtract";
  if (TOPIC_CONFIG_KEYS[name].valueType.type !== "LIST") {
    throw new KafkaError(
      ErrorCode.INVALID_REQUEST,
      `Config value ${verb} is not allowed for config key: ${name}`,
    );
  }
  const old = merged.get(name) ?? effectiveText(name, current, broker);
  const oldItems = splitItems(old);
  const items = splitItems(value!);
  const next =
    operation === ConfigOperation.APPEND
      ? [...oldItems, ...items.filter((i) => !oldItems.includes(i))]
      : oldItems.filter((i) => !items.includes(i));
  return next.join(",");
}

function effectiveText(name: TopicConfigKey, current: TopicConfigOverrides, broker: BrokerConfig) {
  const value = topicConfig(current, broker)[name];
  assert(Array.isArray(value), `list key ${name} has a non-list value`);
  return value.join(",");
}

const splitItems = (text: string) =>
  text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
