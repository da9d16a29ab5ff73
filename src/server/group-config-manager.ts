import type { BrokerConfig } from "../config/broker-config.ts";
import { type ConfigDescription, ConfigSource, description } from "../config/topic-config.ts";
import type { GroupConfigStore, GroupConfigValues } from "../metadata/group-config-store.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import type { Logger } from "../util/logger.ts";

/**
 * Kafka 4's group configs (the GROUP config resource, `kafka-configs.sh --entity-type groups`):
 * per-group values of the broker's group keys, each checked against the broker's
 * `group.consumer.min/max...` and `group.share.min/max...` bounds as Kafka's GroupConfig.validate
 * does. Kept through a GroupConfigStore (ZooKeeper's `/config/groups/<group>` in a cluster,
 * followed on every broker; `group-configs.json` embedded) and read by the consumer group
 * coordinator (session timeout, heartbeat interval) and the share-group code (the `share.*` keys).
 */

type Broker = BrokerConfig;
type IntKey = {
  readonly kind: "int";
  readonly fromBroker: (c: Broker) => number;
  readonly bounds: (c: Broker) => [number, number];
};
type EnumKey = {
  readonly kind: "enum";
  readonly allowed: readonly string[];
  readonly fallback: string;
};
type GroupKey = (IntKey | EnumKey) & { readonly doc: string };

const intKey = (
  fromBroker: (c: Broker) => number,
  bounds: (c: Broker) => [number, number],
  doc: string,
): GroupKey => ({ kind: "int", fromBroker, bounds, doc });

/** The group keys Quill applies (Kafka 4.4's streams, assignor offload and DLQ keys are not). */
export const GROUP_CONFIG_KEYS: Readonly<Record<string, GroupKey>> = {
  "consumer.session.timeout.ms": intKey(
    (c) => c["group.consumer.session.timeout.ms"],
    (c) => [c["group.consumer.min.session.timeout.ms"], c["group.consumer.max.session.timeout.ms"]],
    "The timeout to detect client failures when using the consumer group protocol.",
  ),
  "consumer.heartbeat.interval.ms": intKey(
    (c) => c["group.consumer.heartbeat.interval.ms"],
    (c) => [
      c["group.consumer.min.heartbeat.interval.ms"],
      c["group.consumer.max.heartbeat.interval.ms"],
    ],
    "The heartbeat interval given to the members of a consumer group.",
  ),
  "share.session.timeout.ms": intKey(
    (c) => c["group.share.session.timeout.ms"],
    (c) => [c["group.share.min.session.timeout.ms"], c["group.share.max.session.timeout.ms"]],
    "The timeout to detect client failures when using the share group protocol.",
  ),
  "share.heartbeat.interval.ms": intKey(
    (c) => c["group.share.heartbeat.interval.ms"],
    (c) => [c["group.share.min.heartbeat.interval.ms"], c["group.share.max.heartbeat.interval.ms"]],
    "The heartbeat interval given to the members of a share group.",
  ),
  "share.record.lock.duration.ms": intKey(
    (c) => c["group.share.record.lock.duration.ms"],
    (c) => [
      c["group.share.min.record.lock.duration.ms"],
      c["group.share.max.record.lock.duration.ms"],
    ],
    "The record acquisition lock duration in milliseconds for share groups.",
  ),
  "share.delivery.count.limit": intKey(
    (c) => c["group.share.delivery.count.limit"],
    (c) => [c["group.share.min.delivery.count.limit"], c["group.share.max.delivery.count.limit"]],
    "The maximum number of delivery attempts for a record delivered to a share group.",
  ),
  "share.partition.max.record.locks": intKey(
    (c) => c["group.share.partition.max.record.locks"],
    (c) => [
      c["group.share.min.partition.max.record.locks"],
      c["group.share.max.partition.max.record.locks"],
    ],
    "Share-group record lock limit per share-partition.",
  ),
  "share.auto.offset.reset": {
    kind: "enum",
    allowed: ["earliest", "latest"],
    fallback: "latest",
    doc: "The strategy to initialize the share-partition start offset: earliest or latest.",
  },
  "share.isolation.level": {
    kind: "enum",
    allowed: ["read_committed", "read_uncommitted"],
    fallback: "read_uncommitted",
    doc: "Controls how to read records written transactionally (Quill: read_uncommitted only).",
  },
};

/** Session and heartbeat pairs Kafka checks against each other. */
const SESSION_HEARTBEAT_PAIRS = [
  ["consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"],
  ["share.session.timeout.ms", "share.heartbeat.interval.ms"],
] as const;

/** IncrementalAlterConfigs' operations. */
export interface GroupConfigChange {
  readonly name: string;
  /** 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT. */
  readonly operation: number;
  readonly value: string | null;
}

const invalid = (message: string) => new KafkaError(ErrorCode.INVALID_CONFIG, message);

export class GroupConfigManager {
  private readonly overrides = new Map<string, GroupConfigValues>();
  private unfollow: (() => void) | null = null;

  constructor(
    private readonly store: GroupConfigStore,
    private readonly brokerConfig: () => BrokerConfig,
    private readonly log: Logger,
  ) {}

  /** Loads every group's configs and follows changes other brokers make. */
  async start(): Promise<void> {
    const load = async () => {
      const all = await this.store.loadAll();
      this.overrides.clear();
      for (const [group, configs] of all) this.overrides.set(group, configs);
    };
    await load();
    this.unfollow = this.store.follow(
      (group, configs) => this.apply(group, configs),
      () => {
        load().catch((e: unknown) => this.log.warn(`group configs not reloaded: ${String(e)}`));
      },
    );
  }

  close(): void {
    this.unfollow?.();
  }

  private apply(groupId: string, configs: GroupConfigValues): void {
    if (Object.keys(configs).length === 0) this.overrides.delete(groupId);
    else this.overrides.set(groupId, configs);
  }

  private int(groupId: string, name: string): number {
    const set = this.overrides.get(groupId)?.[name];
    const key = GROUP_CONFIG_KEYS[name] as IntKey;
    return set === undefined ? key.fromBroker(this.brokerConfig()) : Number(set);
  }

  consumerSessionTimeoutMs = (g: string) => this.int(g, "consumer.session.timeout.ms");
  consumerHeartbeatIntervalMs = (g: string) => this.int(g, "consumer.heartbeat.interval.ms");
  shareSessionTimeoutMs = (g: string) => this.int(g, "share.session.timeout.ms");
  shareHeartbeatIntervalMs = (g: string) => this.int(g, "share.heartbeat.interval.ms");
  shareRecordLockDurationMs = (g: string) => this.int(g, "share.record.lock.duration.ms");
  shareDeliveryCountLimit = (g: string) => this.int(g, "share.delivery.count.limit");
  sharePartitionMaxRecordLocks = (g: string) => this.int(g, "share.partition.max.record.locks");

  autoOffsetReset(groupId: string): "earliest" | "latest" {
    const set = this.overrides.get(groupId)?.["share.auto.offset.reset"];
    return set === "earliest" ? "earliest" : "latest";
  }

  /** DescribeConfigs: every key, the group's value (GROUP_CONFIG) or the broker's. */
  describe(groupId: string, wanted: (name: string) => boolean): ConfigDescription[] {
    checkGroupId(groupId);
    const set = this.overrides.get(groupId) ?? {};
    const broker = this.brokerConfig();
    return Object.entries(GROUP_CONFIG_KEYS)
      .filter(([name]) => wanted(name))
      .map(([name, key]) => {
        const value = set[name];
        const fallback = key.kind === "int" ? String(key.fromBroker(broker)) : key.fallback;
        const synonyms =
          value === undefined ? [] : [{ name, value, source: ConfigSource.GROUP_CONFIG }];
        const type = key.kind === "int" ? "INT" : "STRING";
        return description(name, value ?? fallback, false, type, key.doc, synonyms);
      });
  }

  /** IncrementalAlterConfigs on a GROUP resource. */
  async alter(groupId: string, changes: readonly GroupConfigChange[], validateOnly: boolean) {
    checkGroupId(groupId);
    const next: Record<string, string> = { ...this.overrides.get(groupId) };
    for (const c of changes) {
      if (GROUP_CONFIG_KEYS[c.name] === undefined) throw unknownKey(c.name);
      if (c.operation === 1) delete next[c.name];
      else if (c.operation !== 0) {
        throw new KafkaError(ErrorCode.INVALID_REQUEST, `${c.name} is not a list.`);
      } else next[c.name] = c.value ?? "";
    }
    await this.replaceChecked(groupId, next, validateOnly);
  }

  /** AlterConfigs on a GROUP resource: the given configs replace all of the group's. */
  async replace(
    groupId: string,
    configs: readonly { name: string; value: string | null }[],
    only: boolean,
  ) {
    checkGroupId(groupId);
    const next: Record<string, string> = {};
    for (const c of configs) {
      if (GROUP_CONFIG_KEYS[c.name] === undefined) throw unknownKey(c.name);
      if (c.value !== null) next[c.name] = c.value;
    }
    await this.replaceChecked(groupId, next, only);
  }

  private async replaceChecked(groupId: string, next: Record<string, string>, only: boolean) {
    this.validate(next);
    if (only) return;
    try {
      await this.store.write(groupId, next);
    } catch (error) {
      // ZooKeeper away, a full disk, the local bound: the change is not made, the broker goes on.
      this.log.warn(`group ${groupId}: configs not stored: ${String(error)}`);
      throw new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "The group configs were not stored.");
    }
    this.apply(groupId, next);
  }

  /** Kafka's GroupConfig.validate: each value, then session against heartbeat. */
  private validate(configs: Record<string, string>): void {
    const broker = this.brokerConfig();
    for (const [name, value] of Object.entries(configs)) {
      const key = GROUP_CONFIG_KEYS[name]!;
      if (key.kind === "enum") {
        if (!key.allowed.includes(value)) {
          throw invalid(
            `Invalid value ${value} for configuration ${name}: ` +
              `String must be one of: ${key.allowed.join(", ")}`,
          );
        }
        continue;
      }
      const n = /^[+-]?\d+$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
      if (!Number.isSafeInteger(n) || Math.abs(n) > 2 ** 31 - 1) {
        throw invalid(`Invalid value ${value} for configuration ${name}: Not a number of type INT`);
      }
      const [min, max] = key.bounds(broker);
      if (n < min || n > max)
        throw invalid(`${name} must be in the range ${min} to ${max} inclusive.`);
      configs[name] = String(n);
    }
    for (const [session, heartbeat] of SESSION_HEARTBEAT_PAIRS) {
      if (configs[session] === undefined && configs[heartbeat] === undefined) continue;
      const s = Number(
        configs[session] ?? (GROUP_CONFIG_KEYS[session] as IntKey).fromBroker(broker),
      );
      const h = Number(
        configs[heartbeat] ?? (GROUP_CONFIG_KEYS[heartbeat] as IntKey).fromBroker(broker),
      );
      if (s <= h) throw invalid(`${session} must be greater than ${heartbeat}`);
    }
  }
}

function unknownKey(name: string): KafkaError {
  return invalid(`Unknown group config name: ${name}`);
}

function checkGroupId(groupId: string): void {
  if (groupId === "")
    throw new KafkaError(ErrorCode.INVALID_REQUEST, "Group id must not be empty.");
}
