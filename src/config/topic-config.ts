import {
  BROKER_CONFIG_KEYS, type BrokerConfig, type BrokerConfigKey, CLEANUP_POLICIES, COMPRESSION_TYPES,
  TIMESTAMP_TYPES,
} from "./broker-config.ts";
import { ConfigError, invalidValue } from "./config-error.ts";
import {
  type ConfigKey, ConfigType, formatValue, int, list, long, LONG_MAX_AS_NUMBER, oneOf,
  type ValueType,
} from "./config-key.ts";

/** DescribeConfigs `config_source` values (Kafka's wire numbers). */
export const ConfigSource = {
  UNKNOWN: 0, DYNAMIC_TOPIC_CONFIG: 1, DYNAMIC_BROKER_CONFIG: 2, DYNAMIC_DEFAULT_BROKER_CONFIG: 3,
  STATIC_BROKER_CONFIG: 4, DEFAULT_CONFIG: 5, DYNAMIC_BROKER_LOGGER_CONFIG: 6,
} as const;

/** A topic key: its type, and the broker keys that give its default (Kafka's synonyms). */
interface TopicKey<T> {
  readonly valueType: ValueType<T>;
  /** Strongest first, as DescribeConfigs lists them. */
  readonly synonyms: readonly BrokerConfigKey[];
  readonly fromBroker: (broker: BrokerConfig) => T;
  readonly doc: string;
}

const topicKey = <T>(
  valueType: ValueType<T>,
  synonyms: readonly BrokerConfigKey[],
  fromBroker: (broker: BrokerConfig) => T,
  doc: string,
): TopicKey<T> => ({ valueType, synonyms, fromBroker, doc });

/** The per-topic keys Quill honours (CreateTopics, AlterConfigs, DescribeConfigs). */
export const TOPIC_CONFIG_KEYS = {
  "cleanup.policy": topicKey(list("policies", { allowed: CLEANUP_POLICIES, minItems: 1 }),
    ["log.cleanup.policy"], (b) => [...b["log.cleanup.policy"]],
    "delete: drop old segments by age and size; compact: keep the last record per key."),
  "compression.type": topicKey(oneOf(COMPRESSION_TYPES), ["compression.type"],
    (b) => b["compression.type"], "Codec batches are stored with; producer keeps the producer's."),
  "flush.messages": topicKey(long({ min: 1n }), ["log.flush.interval.messages"],
    (b) => b["log.flush.interval.messages"], "fsync after this many messages."),
  "flush.ms": topicKey(long({ min: 0n }), ["log.flush.interval.ms"],
    (b) => b["log.flush.interval.ms"] ?? LONG_MAX_AS_NUMBER,
    "fsync when the oldest unflushed message is this old."),
  "index.interval.bytes": topicKey(int({ min: 0 }), ["log.index.interval.bytes"],
    (b) => b["log.index.interval.bytes"], "Bytes between offset index entries."),
  "max.message.bytes": topicKey(int({ min: 0 }), ["message.max.bytes"],
    (b) => b["message.max.bytes"], "Largest record batch accepted."),
  "message.timestamp.type": topicKey(oneOf(TIMESTAMP_TYPES), ["log.message.timestamp.type"],
    (b) => b["log.message.timestamp.type"],
    "CreateTime keeps the producer's timestamps; LogAppendTime uses the broker's clock."),
  "min.insync.replicas": topicKey(int({ min: 1 }), ["min.insync.replicas"],
    (b) => b["min.insync.replicas"], "Replicas that must have a write before acks=all succeeds."),
  "retention.bytes": topicKey(long(), ["log.retention.bytes"], (b) => b["log.retention.bytes"],
    "Delete old segments while the partition is larger than this; -1: no limit."),
  "retention.ms": topicKey(long({ min: -1n }),
    ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
    (b) => b["log.retention.ms"], "Delete segments older than this; -1: keep forever."),
  "segment.bytes": topicKey(int({ min: 14 }), ["log.segment.bytes"],
    (b) => b["log.segment.bytes"], "Size at which a new segment is rolled."),
  "segment.ms": topicKey(long({ min: 1n }), ["log.roll.ms", "log.roll.hours"],
    (b) => b["log.roll.ms"], "Roll a new segment after this age."),
} satisfies Record<string, TopicKey<unknown>>;

export type TopicConfigKey = keyof typeof TOPIC_CONFIG_KEYS;
type ValueOf<K> = K extends TopicKey<infer T> ? T : never;
/** Every topic key with its effective value. */
export type TopicConfig = {
  readonly [K in TopicConfigKey]: ValueOf<(typeof TOPIC_CONFIG_KEYS)[K]>;
};
/** What a topic sets itself (persisted with the topic); the rest follows the broker. */
export type TopicConfigOverrides = Partial<TopicConfig>;

export const isTopicConfigKey = (name: string): name is TopicConfigKey =>
  Object.hasOwn(TOPIC_CONFIG_KEYS, name);

const topicKeyOf = (name: TopicConfigKey): TopicKey<unknown> => TOPIC_CONFIG_KEYS[name];

/**
 * Checks topic configs as a client sends them (CreateTopics, AlterConfigs) and returns them
 * typed. Throws ConfigError, to be answered with INVALID_CONFIG and its message, for an
 * unknown key, a null value or a bad value.
 */
export function parseTopicConfigs(
  configs: Iterable<{ readonly name: string; readonly value: string | null }>,
): TopicConfigOverrides {
  const overrides: Record<string, unknown> = {};
  for (const { name, value } of configs) {
    if (!isTopicConfigKey(name)) {
      throw new ConfigError(`unknown or unsupported topic config ${name}`);
    }
    if (value === null) {
      throw new ConfigError(`null value not supported for topic config ${name}`);
    }
    const { valueType } = topicKeyOf(name);
    const result = valueType.schema.safeParse(value);
    if (!result.success) throw invalidValue(name, value, "topic config", valueType.expected);
    overrides[name] = result.data;
  }
  return overrides as TopicConfigOverrides;
}

/** The topic's effective config: its overrides over the broker's defaults. */
export function topicConfig(overrides: TopicConfigOverrides, broker: BrokerConfig): TopicConfig {
  const names = Object.keys(TOPIC_CONFIG_KEYS) as TopicConfigKey[];
  const entries = names.map((name) =>
    [name, Object.hasOwn(overrides, name) ? overrides[name] : topicKeyOf(name).fromBroker(broker)]);
  return Object.fromEntries(entries) as TopicConfig;
}

/** Overrides as the strings Kafka would show, for persisting them and for AlterConfigs. */
export function formatTopicConfigs(overrides: TopicConfigOverrides): Record<string, string> {
  const names = Object.keys(overrides) as TopicConfigKey[];
  return Object.fromEntries(names.map((name) =>
    [name, topicKeyOf(name).valueType.format(overrides[name])]));
}

export interface ConfigSynonym {
  readonly name: string;
  readonly value: string | null;
  readonly source: number;
}

/** One DescribeConfigs entry, with every field any version of the response needs. */
export interface ConfigDescription {
  readonly name: string;
  readonly value: string | null;
  /** ConfigSource value (v1+). */
  readonly source: number;
  /** v0's flag: true when nothing set this key anywhere. */
  readonly isDefault: boolean;
  readonly readOnly: boolean;
  readonly sensitive: boolean;
  /** ConfigType value (v3+). */
  readonly type: number;
  readonly documentation: string;
  readonly synonyms: readonly ConfigSynonym[];
}

/**
 * Describes one topic key as Kafka does: the topic's override if any, else the broker's value,
 * with the synonyms (the override, then each broker key that was set, then the default).
 */
export function describeTopicConfig(
  name: TopicConfigKey,
  overrides: TopicConfigOverrides,
  broker: BrokerConfig,
): ConfigDescription {
  const def = topicKeyOf(name);
  const overridden = Object.hasOwn(overrides, name);
  const value = overridden ? overrides[name] : def.fromBroker(broker);
  const synonyms: ConfigSynonym[] = overridden
    ? [{ name, value: def.valueType.format(value), source: ConfigSource.DYNAMIC_TOPIC_CONFIG }]
    : [];
  synonyms.push(...def.synonyms.flatMap((k) => brokerSynonyms(k, broker)));
  const text = def.valueType.format(value);
  return description(name, text, false, def.valueType.type, def.doc, synonyms);
}

/**
 * Describes one broker key. Quill's broker config is static (read at start), so every key is
 * read-only, and its source is STATIC_BROKER_CONFIG when anything set it.
 */
export function describeBrokerConfig(k: BrokerConfigKey, broker: BrokerConfig) {
  const def: ConfigKey<unknown> = BROKER_CONFIG_KEYS[k];
  const value = formatValue(def, broker[k]);
  return description(k, value, true, def.valueType.type, def.doc, brokerSynonyms(k, broker));
}

function description(
  name: string,
  value: string | null,
  readOnly: boolean,
  type: keyof typeof ConfigType,
  documentation: string,
  synonyms: ConfigSynonym[],
): ConfigDescription {
  const source = synonyms[0]?.source ?? ConfigSource.DEFAULT_CONFIG;
  return {
    name, value, source, isDefault: source === ConfigSource.DEFAULT_CONFIG, readOnly,
    sensitive: false, type: ConfigType[type], documentation, synonyms,
  };
}

/** The broker key as the operator set it, then its default when it has one. */
function brokerSynonyms(k: BrokerConfigKey, broker: BrokerConfig): ConfigSynonym[] {
  const def: ConfigKey<unknown> = BROKER_CONFIG_KEYS[k];
  const synonyms: ConfigSynonym[] = [];
  if (broker.origins.has(k)) {
    const value = formatValue(def, broker[k]);
    synonyms.push({ name: k, value, source: ConfigSource.STATIC_BROKER_CONFIG });
  }
  if (def.default !== null) {
    const value = formatValue(def, def.default);
    synonyms.push({ name: k, value, source: ConfigSource.DEFAULT_CONFIG });
  }
  return synonyms;
}
