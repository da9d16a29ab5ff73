import { type ConfigKey, int, key, list, long, nullableKey, oneOf } from "./config-key.ts";
import { password } from "./ssl-config-keys.ts";

/**
 * Kafka's SASL keys for listeners of the SASL_PLAINTEXT and SASL_SSL protocols, each also
 * settable per listener (`listener.name.<listener>.sasl.enabled.mechanisms`), and the JAAS
 * config per listener and mechanism (`listener.name.<listener>.plain.sasl.jaas.config`).
 */
export const SASL_MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] as const;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];

export const SASL_CONFIG_KEYS = {
  "sasl.enabled.mechanisms": key(
    list("mechanisms", { allowed: SASL_MECHANISMS }),
    [],
    "SASL mechanisms a SASL listener offers (Kafka's default, GSSAPI, is not implemented: set " +
      "it for every SASL listener).",
  ),
  "sasl.jaas.config": nullableKey(
    password(),
    "JAAS config of a SASL mechanism; on a broker it is set per listener and mechanism, " +
      "`listener.name.<listener>.plain.sasl.jaas.config` (PLAIN's user_<name> entries).",
  ),
  "sasl.mechanism.inter.broker.protocol": nullableKey(
    oneOf(SASL_MECHANISMS),
    "The mechanism a broker authenticates with to other brokers when the inter-broker listener " +
      "is SASL_PLAINTEXT or SASL_SSL, with the username and password options of that " +
      "listener's JAAS config for the mechanism (Kafka's default, GSSAPI, is not implemented: " +
      "set it).",
  ),
  "connection.failed.authentication.delay.ms": key(
    int({ min: 0 }),
    100,
    "How long a connection whose authentication failed stays open after its error response " +
      "(Kafka's KIP-306), so that clients read the error before the connection closes; 0: " +
      "closed with the response.",
  ),
  "connections.max.reauth.ms": key(
    long({ min: 0n }),
    0,
    "SASL sessions last this long (KIP-368): SaslAuthenticate v1+ tells the client, which " +
      "re-authenticates on the same connection in time; a connection whose session expired " +
      "is closed at its next request. 0: sessions never expire.",
  ),
} satisfies Record<string, ConfigKey<unknown>>;

/** `plain.sasl.jaas.config`: the per-mechanism part of a listener's JAAS key. */
export const MECHANISM_JAAS_KEY = /^(plain|scram-sha-256|scram-sha-512)\.sasl\.jaas\.config$/;
/** `scram-sha-512.connections.max.reauth.ms`: a session lifetime per listener and mechanism. */
export const MECHANISM_REAUTH_KEY =
  /^(plain|scram-sha-256|scram-sha-512)\.connections\.max\.reauth\.ms$/;
