import type { BrokerConfig, BrokerConfigKey } from "./broker-config.ts";
import { isSslConfigKey, SSL_CONFIG_KEYS, type SslConfigKey } from "./ssl-config-keys.ts";

/** Keys Kafka lets an operator set for one listener with `listener.name.<listener>.`. */
export const isPerListenerKey = (key: string): key is BrokerConfigKey =>
  isSslConfigKey(key) || key === "sasl.enabled.mechanisms" || key === "connections.max.reauth.ms";

/**
 * The SASL session lifetime on one listener for one mechanism (KIP-368), as Kafka's
 * SaslChannelBuilder reads it: `listener.name.<l>.<mechanism>.connections.max.reauth.ms`, else
 * `listener.name.<l>.connections.max.reauth.ms`, else the broker's.
 */
export function reauthMsFor(config: BrokerConfig, listenerName: string, mechanism: string): number {
  const overrides = config.listenerOverrides?.get(listenerName);
  const value = overrides?.get(`${mechanism.toLowerCase()}.connections.max.reauth.ms`);
  return typeof value === "number"
    ? value
    : listenerValue(config, listenerName, "connections.max.reauth.ms");
}

/** One mechanism's JAAS config on one listener (`listener.name.<l>.<mech>.sasl.jaas.config`). */
export function jaasConfigFor(
  config: BrokerConfig,
  listenerName: string,
  mechanism: string,
): string | null {
  const overrides = config.listenerOverrides?.get(listenerName);
  const value = overrides?.get(`${mechanism.toLowerCase()}.sasl.jaas.config`);
  return typeof value === "string" ? value : null;
}

export type SslSettings = { readonly [K in SslConfigKey]: BrokerConfig[K] };

/** A key's value for one listener: its `listener.name.<listener>.` setting, else the broker's. */
export function listenerValue<K extends BrokerConfigKey>(
  config: BrokerConfig,
  listenerName: string,
  key: K,
): BrokerConfig[K] {
  const overrides = config.listenerOverrides?.get(listenerName);
  return overrides?.has(key) ? (overrides.get(key) as BrokerConfig[K]) : config[key];
}

/** Every TLS key as it applies to one listener. */
export function sslSettingsFor(config: BrokerConfig, listenerName: string): SslSettings {
  const keys = Object.keys(SSL_CONFIG_KEYS) as SslConfigKey[];
  return Object.fromEntries(
    keys.map((k) => [k, listenerValue(config, listenerName, k)]),
  ) as unknown as SslSettings;
}
