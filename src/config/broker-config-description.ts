/**
 * DescribeConfigs entries of a BROKER resource as Kafka 3.9's ZooKeeper-mode broker writes them
 * (ZkAdminManager.createBrokerConfigEntry): the synonyms of a key are listed level by level
 * (this broker's dynamic config, the cluster-wide dynamic default, the static file, Kafka's
 * default), each level over the key's synonym names strongest first, and those before the
 * first entry of the key itself are dropped; the source is the first synonym's.
 */
import { BROKER_CONFIG_KEYS, type BrokerConfigKey, isBrokerConfigKey } from "./broker-config.ts";
import type { ConfigKey } from "./config-key.ts";
import { formatValue } from "./config-key.ts";
import type { DynamicBrokerConfig } from "./dynamic-broker-config.ts";
import {
  brokerSynonymNames,
  DYNAMIC_BROKER_KEYS,
  DYNAMIC_KEYS_QUILL_IGNORES,
  isSensitiveKey,
} from "./dynamic-broker-keys.ts";
import {
  type ConfigDescription,
  ConfigSource,
  type ConfigSynonym,
  description,
  staticBrokerSynonyms,
} from "./topic-config.ts";

type Texts = (name: string) => string | null | undefined;

/** Every level's value texts, strongest first. */
function levels(config: DynamicBrokerConfig): [number, Texts][] {
  const { staticConfig } = config;
  const broker = config.dynamic("broker");
  const dflt = config.dynamic("default");
  return [
    [ConfigSource.DYNAMIC_BROKER_CONFIG, (n) => broker.get(n)],
    [ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, (n) => dflt.get(n)],
    [
      ConfigSource.STATIC_BROKER_CONFIG,
      (n) => (isBrokerConfigKey(n) && staticConfig.origins.has(n) ? textOf(n, staticConfig) : null),
    ],
    [
      ConfigSource.DEFAULT_CONFIG,
      (n) => (isBrokerConfigKey(n) ? formatValue(keyOf(n), keyOf(n).default) : null),
    ],
  ];
}

const keyOf = (name: BrokerConfigKey): ConfigKey<unknown> => BROKER_CONFIG_KEYS[name];

const textOf = (name: BrokerConfigKey, config: Record<BrokerConfigKey, unknown>) =>
  formatValue(keyOf(name), config[name]);

/** Kafka's configSynonyms: level by level, from the key's own first entry on. */
function brokerKeySynonyms(config: DynamicBrokerConfig, name: string): ConfigSynonym[] {
  const sensitive = isSensitiveKey(name);
  const all: ConfigSynonym[] = [];
  for (const [source, texts] of levels(config)) {
    for (const synonym of brokerSynonymNames(name)) {
      const text = texts(synonym);
      if (text === null || text === undefined) continue;
      all.push({ name: synonym, value: sensitive ? null : text, source });
    }
  }
  const first = all.findIndex((s) => s.name === name);
  return first === -1 ? [] : all.slice(first);
}

/**
 * The entries of a BROKER resource: for this broker's id every key it has (static, dynamic and
 * stored custom keys); for the empty name (the cluster-wide default) only the keys stored there,
 * with only their DYNAMIC_DEFAULT_BROKER_CONFIG synonyms.
 */
export function describeBrokerConfigs(
  config: DynamicBrokerConfig,
  level: "broker" | "default",
  wanted: (name: string) => boolean,
): ConfigDescription[] {
  if (level === "default") {
    const stored = config.dynamic("default");
    return [...stored.keys()].filter(wanted).map((name) => {
      const synonyms = brokerKeySynonyms(config, name).filter(
        (s) => s.source === ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
      );
      return entry(name, isSensitiveKey(name) ? null : stored.get(name)!, synonyms);
    });
  }
  const custom = [...config.dynamic("default").keys(), ...config.dynamic("broker").keys()].filter(
    (n) => !isBrokerConfigKey(n),
  );
  const names = [...Object.keys(BROKER_CONFIG_KEYS), ...new Set(custom)].filter(wanted);
  return names.map((name) => {
    const value = isBrokerConfigKey(name)
      ? textOf(name, config.current as unknown as Record<BrokerConfigKey, unknown>)
      : (config.dynamic("broker").get(name) ?? config.dynamic("default").get(name)!);
    return entry(name, isSensitiveKey(name) ? null : value, brokerKeySynonyms(config, name));
  });
}

function entry(name: string, value: string | null, synonyms: ConfigSynonym[]) {
  const known = isBrokerConfigKey(name) ? keyOf(name) : null;
  const readOnly = !(
    (known !== null && DYNAMIC_BROKER_KEYS.has(name as BrokerConfigKey)) ||
    DYNAMIC_KEYS_QUILL_IGNORES.has(name)
  );
  const type = known?.valueType.type ?? "UNKNOWN";
  const d = description(name, value, readOnly, type, known?.doc ?? "", synonyms);
  return { ...d, sensitive: isSensitiveKey(name) };
}

/**
 * A topic key's broker synonyms with the dynamic levels first: this broker's dynamic config,
 * the cluster-wide default, then what the static config says (its file, then the default).
 */
export function topicBrokerSynonyms(config: DynamicBrokerConfig) {
  return (k: BrokerConfigKey): ConfigSynonym[] => {
    const dynamic: ConfigSynonym[] = [];
    const broker = config.dynamic("broker").get(k);
    if (broker !== undefined) {
      dynamic.push({ name: k, value: broker, source: ConfigSource.DYNAMIC_BROKER_CONFIG });
    }
    const dflt = config.dynamic("default").get(k);
    if (dflt !== undefined) {
      dynamic.push({ name: k, value: dflt, source: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG });
    }
    return [...dynamic, ...staticBrokerSynonyms(k, config.staticConfig)];
  };
}
