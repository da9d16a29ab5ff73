/**
 * The broker's configuration as it is now (Kafka's DynamicBrokerConfig): the static config read
 * at start, under the cluster-wide dynamic defaults (`/config/brokers/<default>`), under this
 * broker's own dynamic configs (`/config/brokers/<id>`), strongest last. Other parts read a
 * value with `value(key)` or `current`, and learn of changes with `onChange`; the metadata
 * layer feeds the two dynamic layers in with `update` after a change was stored.
 */
import {
  BROKER_CONFIG_KEYS,
  type BrokerConfig,
  type BrokerConfigKey,
  type BrokerConfigValues,
  isBrokerConfigKey,
  resolveLogTimes,
} from "./broker-config.ts";
import { ConfigError, type ConfigOrigin } from "./config-error.ts";
import { type ConfigKey, formatValue, kafkaConfigMessage } from "./config-key.ts";
import {
  DYNAMIC_BROKER_KEYS,
  DYNAMIC_LISTENER_KEYS,
  dynamicListenerKey,
  refusalMessage,
  refusedKeys,
} from "./dynamic-broker-keys.ts";

/** Which of the two dynamic layers: one broker's own, or the cluster-wide default. */
export type DynamicLevel = "broker" | "default";

/** Most keys one dynamic layer holds (Kafka stores custom keys too, so bound them). */
export const DYNAMIC_KEYS_MAX = 1_000;

export type BrokerConfigListener = (config: BrokerConfig, changed: ReadonlySet<string>) => void;
/** Checks a config before it is stored (`next` against `now`); throws ConfigError to refuse. */
export type BrokerConfigValidator = (next: BrokerConfig, now: BrokerConfig) => void;

const DYNAMIC_ORIGIN: Record<DynamicLevel, ConfigOrigin> = {
  broker: { kind: "flag", label: "dynamic broker config" },
  default: { kind: "flag", label: "dynamic default broker config" },
};

export class DynamicBrokerConfig {
  private layers: Record<DynamicLevel, ReadonlyMap<string, string>> = {
    broker: new Map(),
    default: new Map(),
  };
  private config: BrokerConfig;
  private readonly listeners = new Set<{ fn: BrokerConfigListener; keys: Set<string> | null }>();
  private readonly validators = new Set<BrokerConfigValidator>();

  constructor(readonly staticConfig: BrokerConfig) {
    this.config = staticConfig;
  }

  /** The effective config now; a new object after every change, never mutated. */
  get current(): BrokerConfig {
    return this.config;
  }

  /** One key's effective value now. */
  value<K extends keyof BrokerConfig>(key: K): BrokerConfig[K] {
    return this.config[key];
  }

  /** The stored strings of one dynamic layer (DescribeConfigs, IncrementalAlterConfigs). */
  dynamic(level: DynamicLevel): ReadonlyMap<string, string> {
    return this.layers[level];
  }

  /**
   * Calls `listener` after each change of the effective config, with the names whose value
   * changed; with `keys`, only when one of them did. Returns the unsubscribe function.
   */
  onChange(listener: BrokerConfigListener, keys?: readonly string[]): () => void {
    const entry = { fn: listener, keys: keys === undefined ? null : new Set(keys) };
    this.listeners.add(entry);
    return () => this.listeners.delete(entry);
  }

  /**
   * Adds a check `validate` runs on the config a layer would give (a listener's key store must
   * load); returns the function that removes it.
   */
  addValidator(validator: BrokerConfigValidator): () => void {
    this.validators.add(validator);
    return () => this.validators.delete(validator);
  }

  /**
   * Checks a whole layer as it would be stored, as Kafka's validation does: keys that may not
   * change at runtime, values each key refuses, and the combined time keys. Throws ConfigError
   * with Kafka's message; changes nothing.
   */
  validate(level: DynamicLevel, texts: ReadonlyMap<string, string>): void {
    if (texts.size > DYNAMIC_KEYS_MAX) {
      throw new ConfigError(`At most ${DYNAMIC_KEYS_MAX} dynamic broker configs are kept`);
    }
    for (const [why, names] of refusedKeys(texts.keys())) {
      throw new ConfigError(refusalMessage(why, names));
    }
    for (const [name, text] of texts) {
      if (!isBrokerConfigKey(name)) continue;
      const { valueType } = BROKER_CONFIG_KEYS[name] as ConfigKey<unknown>;
      if (!valueType.schema.safeParse(text).success) {
        throw new ConfigError(kafkaConfigMessage(name, valueType.refusal(text)));
      }
    }
    const next = this.compute({ ...this.layers, [level]: texts });
    for (const validator of this.validators) validator(next, this.config);
  }

  /**
   * Replaces one layer with what the store now holds and tells the listeners what changed.
   * Values a key refuses (written by another tool) are skipped; a layer whose time keys do not
   * combine throws ConfigError and changes nothing.
   */
  update(level: DynamicLevel, texts: ReadonlyMap<string, string>): void {
    const layers = { ...this.layers, [level]: new Map(texts) };
    const before = this.config;
    this.config = this.compute(layers);
    this.layers = layers;
    const changed = changedKeys(before, this.config);
    if (changed.size === 0) return;
    for (const { fn, keys } of this.listeners) {
      if (keys === null || [...keys].some((k) => changed.has(k))) fn(this.config, changed);
    }
  }

  private compute(layers: Record<DynamicLevel, ReadonlyMap<string, string>>): BrokerConfig {
    const origins = new Map(this.staticConfig.origins);
    const values = rawValues(this.staticConfig) as Record<string, unknown>;
    for (const level of ["default", "broker"] as const) {
      for (const [name, text] of layers[level]) {
        if (!isBrokerConfigKey(name) || !DYNAMIC_BROKER_KEYS.has(name)) continue;
        const parsed = BROKER_CONFIG_KEYS[name].valueType.schema.safeParse(text);
        if (!parsed.success) continue;
        values[name] = parsed.data;
        origins.set(name, DYNAMIC_ORIGIN[level]);
      }
    }
    const times = resolveLogTimes(values as unknown as BrokerConfigValues, origins);
    const listenerOverrides = this.listenerOverrides(layers);
    return {
      ...this.staticConfig,
      ...values,
      ...times,
      listenerOverrides,
    } as unknown as BrokerConfig;
  }

  /** The static per-listener keys under the dynamic ones (DYNAMIC_LISTENER_KEYS). */
  private listenerOverrides(layers: Record<DynamicLevel, ReadonlyMap<string, string>>) {
    const merged = new Map<string, Map<string, unknown>>();
    for (const [name, keys] of this.staticConfig.listenerOverrides ?? []) {
      merged.set(name, new Map(keys));
    }
    for (const level of ["default", "broker"] as const) {
      for (const [name, text] of layers[level]) {
        const listenerKey = dynamicListenerKey(name);
        if (listenerKey === null) continue;
        const { listenerName, key } = listenerKey;
        const parsed = BROKER_CONFIG_KEYS[key as BrokerConfigKey].valueType.schema.safeParse(text);
        if (!parsed.success) continue;
        const keys = merged.get(listenerName) ?? new Map<string, unknown>();
        merged.set(listenerName, keys.set(key, parsed.data));
      }
    }
    return merged;
  }
}

/**
 * The static config with its combined time keys taken apart again: an ms key the operator did
 * not set is null, so a dynamic hours key can still decide.
 */
function rawValues(config: BrokerConfig): Partial<BrokerConfigValues> {
  const unset = (key: "log.retention.ms" | "log.roll.ms" | "log.roll.jitter.ms") =>
    config.origins.has(key) ? config[key] : null;
  return {
    ...(config as unknown as BrokerConfigValues),
    "log.retention.ms": unset("log.retention.ms"),
    "log.roll.ms": unset("log.roll.ms"),
    "log.roll.jitter.ms": unset("log.roll.jitter.ms"),
  };
}

function changedKeys(before: BrokerConfig, after: BrokerConfig): Set<string> {
  const changed = new Set<string>();
  for (const name of Object.keys(BROKER_CONFIG_KEYS) as BrokerConfigKey[]) {
    const def = BROKER_CONFIG_KEYS[name] as ConfigKey<unknown>;
    const a = before[name as keyof BrokerConfig];
    const b = after[name as keyof BrokerConfig];
    if (a !== b && formatValue(def, a) !== formatValue(def, b)) changed.add(name);
  }
  const listeners = new Set([
    ...(before.listenerOverrides?.keys() ?? []),
    ...(after.listenerOverrides?.keys() ?? []),
  ]);
  for (const listener of listeners) {
    for (const key of DYNAMIC_LISTENER_KEYS) {
      const a = before.listenerOverrides?.get(listener)?.get(key);
      const b = after.listenerOverrides?.get(listener)?.get(key);
      if (a !== b) changed.add(`listener.name.${listener.toLowerCase()}.${key}`);
    }
  }
  return changed;
}
