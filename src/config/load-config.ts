import { readFileSync } from "node:fs";
import { basename } from "node:path";
import {
  BROKER_CONFIG_KEYS,
  type BrokerConfig,
  type BrokerConfigKey,
  type BrokerConfigValues,
  isBrokerConfigKey,
  KAFKA_KEYS_QUILL_IGNORES,
  resolveBrokerConfig,
} from "./broker-config.ts";
import { ConfigError, type ConfigOrigin, invalidValue } from "./config-error.ts";
import type { ConfigKey } from "./config-key.ts";
import { isPerListenerKey } from "./listener-config.ts";
import { parseProperties } from "./properties.ts";
import { MECHANISM_JAAS_KEY, MECHANISM_REAUTH_KEY } from "./sasl-config-keys.ts";
import { checkSecuritySetting, isSecurityKey } from "./security-guard.ts";

/** One setting from the command line: `--set key=value` or a dedicated flag like `--listen`. */
export interface FlagSetting {
  readonly key: string;
  readonly value: string;
  /** The flag as typed, for messages: "--set", "--listen". */
  readonly flag: string;
}

/** The three places a setting can come from, lowest precedence first: file < env < flags. */
export interface ConfigSources {
  /** A Java .properties file (`--config`), read here so errors can name its lines. */
  readonly configFile?: string | null;
  /** Usually `process.env`; only `QUILL_<KEY>` variables are read (dots become underscores). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** In command-line order; a later flag for the same key wins. */
  readonly flags?: readonly FlagSetting[];
}

export interface LoadedConfig {
  readonly config: BrokerConfig;
  /** One line listing unknown and ignored keys, or null when every key was used. */
  readonly warning: string | null;
}

interface Setting {
  readonly key: string;
  readonly value: string;
  readonly origin: ConfigOrigin;
}

const ENV_PREFIX = "QUILL_";

/** `log.retention.hours` is read from `QUILL_LOG_RETENTION_HOURS`. */
export const envName = (key: string) => ENV_PREFIX + key.toUpperCase().replaceAll(".", "_");

/**
 * Builds the broker configuration from defaults, a properties file, `QUILL_*` environment
 * variables and command-line settings, in rising precedence. Every value is checked against
 * its key's schema where it is read, so a ConfigError names the key, the value and its source.
 * Kafka's combining rules (retention ms > minutes > hours, log.dirs > log.dir) apply after
 * merging, as in Kafka: a `log.retention.ms` in the file beats `--set log.retention.hours=1`.
 *
 * @example
 * loadConfig({ env: process.env, flags: [{ key: "broker.id", value: "2", flag: "--set" }] })
 */
export function loadConfig(sources: ConfigSources): LoadedConfig {
  const settings = [
    ...fileSettings(sources.configFile),
    ...envSettings(sources.env ?? {}),
    ...(sources.flags ?? []).map(
      ({ key, value, flag }): Setting => ({ key, value, origin: { kind: "flag", label: flag } }),
    ),
  ];
  const values = defaultValues();
  const origins = new Map<BrokerConfigKey, ConfigOrigin>();
  const unknown: string[] = [];
  const ignored = new Set<string>();
  const security = new Map<string, Setting>();
  const listenerOverrides = new Map<string, Map<string, unknown>>();
  for (const setting of settings) {
    const perListener = perListenerKey(setting.key);
    if (perListener !== null) {
      const { listenerName, key: k, schemaKey } = perListener;
      const overrides = listenerOverrides.get(listenerName) ?? new Map<string, unknown>();
      overrides.set(k, parseSetting(schemaKey, { ...setting, key: schemaKey }));
      listenerOverrides.set(listenerName, overrides);
    } else if (isBrokerConfigKey(setting.key)) {
      setValue(values, setting.key, parseSetting(setting.key, setting));
      origins.set(setting.key, setting.origin);
    } else if (isSecurityKey(setting.key)) {
      security.set(setting.key, setting);
    } else if (KAFKA_KEYS_QUILL_IGNORES.has(setting.key)) {
      ignored.add(setting.key);
    } else {
      unknown.push(`${setting.key} (${setting.origin.label})`);
    }
  }
  // The effective value of each: honoured as written (PLAINTEXT, blank) or no start at all.
  for (const s of security.values()) checkSecuritySetting({ ...s, source: s.origin.label });
  const config = { ...resolveBrokerConfig(values, origins), listenerOverrides };
  return { config, warning: warningText(unknown, [...ignored]) };
}

const PER_LISTENER_KEY = /^listener\.name\.([A-Za-z0-9_]+)\.(.+)$/;

/**
 * `listener.name.<listener>.<key>` for a key that may be set per listener, else null. A
 * mechanism's JAAS config (`plain.sasl.jaas.config`) is read as `sasl.jaas.config` and kept
 * under its own name; a mechanism's `scram-sha-512.connections.max.reauth.ms` likewise.
 */
function perListenerKey(
  name: string,
): { listenerName: string; key: string; schemaKey: BrokerConfigKey } | null {
  const match = PER_LISTENER_KEY.exec(name);
  if (match === null) return null;
  const rest = match[2]!.toLowerCase();
  const listenerName = match[1]!.toUpperCase();
  if (MECHANISM_JAAS_KEY.test(rest))
    return { listenerName, key: rest, schemaKey: "sasl.jaas.config" };
  if (MECHANISM_REAUTH_KEY.test(rest)) {
    return { listenerName, key: rest, schemaKey: "connections.max.reauth.ms" };
  }
  if (!isPerListenerKey(match[2]!)) return null;
  return { listenerName, key: match[2]!, schemaKey: match[2]! };
}

function defaultValues(): BrokerConfigValues {
  const entries = Object.entries(BROKER_CONFIG_KEYS).map(([k, def]) => [k, def.default]);
  return Object.fromEntries(entries) as BrokerConfigValues;
}

/** The schema of key `k` produced the value, so this one untyped step is safe. */
function setValue(values: BrokerConfigValues, k: BrokerConfigKey, value: unknown): void {
  (values as Record<BrokerConfigKey, unknown>)[k] = value;
}

function parseSetting(k: BrokerConfigKey, setting: Setting): unknown {
  const { valueType }: ConfigKey<unknown> = BROKER_CONFIG_KEYS[k];
  const result = valueType.schema.safeParse(setting.value);
  if (!result.success) {
    throw invalidValue(k, setting.value, setting.origin.label, valueType.expected);
  }
  return result.data;
}

function fileSettings(path: string | null | undefined): Setting[] {
  if (path === null || path === undefined) return [];
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new ConfigError(`cannot read config file ${path} (from --config): ${reason}`);
  }
  const name = basename(path);
  return parseProperties(text).map(({ key, value, line }) => ({
    key,
    value,
    origin: { kind: "file", label: `${name}:${line}` },
  }));
}

/** Sorted by name, so the outcome does not depend on the environment's order. */
function envSettings(env: Readonly<Record<string, string | undefined>>): Setting[] {
  const names = Object.keys(env)
    .filter((name) => name.startsWith(ENV_PREFIX))
    .sort();
  return names.flatMap((name) => {
    const value = env[name];
    if (value === undefined) return [];
    const key = name.slice(ENV_PREFIX.length).toLowerCase().replaceAll("_", ".");
    return [{ key, value, origin: { kind: "env", label: name } }];
  });
}

function warningText(unknown: string[], ignored: string[]): string | null {
  const parts: string[] = [];
  if (unknown.length > 0) parts.push(`unknown config keys, not used: ${unknown.join(", ")}`);
  if (ignored.length > 0) {
    parts.push(`Kafka config keys Quill ignores: ${ignored.sort().join(", ")}`);
  }
  return parts.length === 0 ? null : parts.join("; ");
}
