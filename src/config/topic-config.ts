import { BROKER_CONFIG_KEYS, type BrokerConfig, type BrokerConfigKey } from "./broker-config.ts";
import { ConfigError } from "./config-error.ts";
import { type ConfigKey, ConfigType, formatValue, kafkaConfigMessage } from "./config-key.ts";
import { TOPIC_CONFIG_KEYS, type TopicKey } from "./topic-config-keys.ts";

export { TOPIC_CONFIG_KEYS };

/** DescribeConfigs `config_source` values (Kafka's wire numbers). */
export const ConfigSource = {
  UNKNOWN: 0,
  DYNAMIC_TOPIC_CONFIG: 1,
  DYNAMIC_BROKER_CONFIG: 2,
  DYNAMIC_DEFAULT_BROKER_CONFIG: 3,
  STATIC_BROKER_CONFIG: 4,
  DEFAULT_CONFIG: 5,
  DYNAMIC_BROKER_LOGGER_CONFIG: 6,
  CLIENT_METRICS_CONFIG: 7,
  GROUP_CONFIG: 8,
} as const;

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
 * typed. Throws ConfigError with Kafka's message ("Unknown topic config name: x", "Invalid
 * value 13 for configuration segment.bytes: Value must be at least 14") for an unknown key, a
 * null value or a bad value.
 */
export function parseTopicConfigs(
  configs: Iterable<{ readonly name: string; readonly value: string | null }>,
): TopicConfigOverrides {
  const overrides: Record<string, unknown> = {};
  for (const { name, value } of configs) {
    if (!isTopicConfigKey(name)) throw new ConfigError(`Unknown topic config name: ${name}`);
    if (value === null) {
      throw new ConfigError(`Null value not supported for topic configs: ${name}`);
    }
    const { valueType } = topicKeyOf(name);
    const result = valueType.schema.safeParse(value);
    if (!result.success) throw new ConfigError(kafkaConfigMessage(name, valueType.refusal(value)));
    overrides[name] = result.data;
  }
  return overrides as TopicConfigOverrides;
}

/**
 * A topic config whose keys are each valid but do not go together, or that needs something
 * this broker lacks (Kafka's LogConfig.validateValues and its remote-storage checks). Kafka
 * answers it with INVALID_CONFIG for CreateTopics and AlterConfigs alike.
 */
export class TopicConfigConflict extends ConfigError {}

/** Kafka's checks across keys, on the topic's effective config. */
export function checkTopicConfig(overrides: TopicConfigOverrides, broker: BrokerConfig): void {
  const t = topicConfig(overrides, broker);
  const minLagMs = t["min.compaction.lag.ms"];
  const maxLagMs = t["max.compaction.lag.ms"];
  if (minLagMs > maxLagMs) {
    const [min, max] = [minLagMs, maxLagMs].map((ms) =>
      TOPIC_CONFIG_KEYS["min.compaction.lag.ms"].valueType.format(ms),
    );
    throw new TopicConfigConflict(
      "conflict topic config setting min.compaction.lag.ms " +
        `(${min}) > max.compaction.lag.ms (${max})`,
    );
  }
  if (t["remote.storage.enable"]) {
    throw new TopicConfigConflict(
      "Tiered Storage functionality is disabled in the broker. " +
        "Topic cannot be configured with remote log storage.",
    );
  }
}

/** The keys a topic sets to a value whose behaviour Quill does not have, with that value. */
export function notAppliedTopicConfigs(overrides: TopicConfigOverrides): [string, string][] {
  const formatted = Object.entries(formatTopicConfigs(overrides));
  return formatted.filter(([name, text]) => {
    const notApplied = topicKeyOf(name as TopicConfigKey).notApplied;
    return notApplied !== undefined && notApplied.inert !== text;
  });
}

/** The topic's effective config: its overrides over the broker's defaults. */
export function topicConfig(overrides: TopicConfigOverrides, broker: BrokerConfig): TopicConfig {
  const names = Object.keys(TOPIC_CONFIG_KEYS) as TopicConfigKey[];
  const entries = names.map((name) => [
    name,
    Object.hasOwn(overrides, name) ? overrides[name] : topicKeyOf(name).fromBroker(broker),
  ]);
  return Object.fromEntries(entries) as TopicConfig;
}

/** Overrides as the strings Kafka would show, for persisting them and for AlterConfigs. */
export function formatTopicConfigs(overrides: TopicConfigOverrides): Record<string, string> {
  const names = Object.keys(overrides) as TopicConfigKey[];
  return Object.fromEntries(
    names.map((name) => [name, topicKeyOf(name).valueType.format(overrides[name])]),
  );
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
  brokerSynonyms: (k: BrokerConfigKey) => ConfigSynonym[] = (k) => staticBrokerSynonyms(k, broker),
): ConfigDescription {
  const def = topicKeyOf(name);
  const overridden = Object.hasOwn(overrides, name);
  const value = overridden ? overrides[name] : def.fromBroker(broker);
  const synonyms: ConfigSynonym[] = overridden
    ? [{ name, value: def.valueType.format(value), source: ConfigSource.DYNAMIC_TOPIC_CONFIG }]
    : [];
  synonyms.push(...def.synonyms.flatMap(brokerSynonyms));
  const text = def.valueType.format(value);
  return description(name, text, false, def.valueType.type, def.doc, synonyms);
}

/** One DescribeConfigs entry; its source is its first synonym's, else DEFAULT_CONFIG. */
export function description(
  name: string,
  value: string | null,
  readOnly: boolean,
  type: keyof typeof ConfigType,
  documentation: string,
  synonyms: ConfigSynonym[],
): ConfigDescription {
  const source = synonyms[0]?.source ?? ConfigSource.DEFAULT_CONFIG;
  return {
    name,
    value,
    source,
    isDefault: source === ConfigSource.DEFAULT_CONFIG,
    readOnly,
    sensitive: false,
    type: ConfigType[type],
    documentation,
    synonyms,
  };
}

/** The broker key as the operator set it, then its default when it has one. */
export function staticBrokerSynonyms(k: BrokerConfigKey, broker: BrokerConfig): ConfigSynonym[] {
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
