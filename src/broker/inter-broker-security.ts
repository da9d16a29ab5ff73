/**
 * How this broker reaches the others: the protocol of the inter-broker listener
 * (`inter.broker.listener.name` / `security.inter.broker.protocol`) decides, as in Kafka, for
 * every broker-to-broker connection (replica fetchers, the controller's channels, AlterPartition
 * and ControlledShutdown, transaction markers, liveness probes, the console's lag queries).
 *
 * - TLS (SSL, SASL_SSL): the listener's trust store checks the peer's certificate (the system's
 *   roots when it has none), its key store is this broker's client certificate, and
 *   `ssl.endpoint.identification.algorithm=https` checks the peer's host name.
 * - SASL (SASL_PLAINTEXT, SASL_SSL): `sasl.mechanism.inter.broker.protocol`, with the
 *   `username` and `password` options of the listener's JAAS config for that mechanism
 *   (`listener.name.<l>.<mechanism>.sasl.jaas.config`), as Kafka's brokers log in.
 */
import { authenticate, type SaslMechanism } from "../client/sasl-authenticator.ts";
import type { BrokerConfig } from "../config/broker-config.ts";
import { ConfigError } from "../config/config-error.ts";
import { jaasConfigFor, sslSettingsFor } from "../config/listener-config.ts";
import type { ClientTlsOptions, InterBrokerSecurity } from "../network/inter-broker-client.ts";
import { jaasOptions } from "../security/plain.ts";
import { tlsServerConfig } from "../security/tls-server-config.ts";

/** SaslAuthenticate v1+ (Quill's and Kafka's brokers answer up to v2). */
const SASL_AUTHENTICATE_VERSION = 2;

/** Throws a ConfigError naming the key when the inter-broker listener cannot be spoken. */
export function interBrokerSecurity(config: BrokerConfig): InterBrokerSecurity {
  const name = config["inter.broker.listener.name"];
  const listener = config.listeners.find((l) => l.listenerName === name);
  // The embedded broker has no other broker to reach.
  if (listener === undefined) return {};
  const protocol = listener.securityProtocol;
  const tls = protocol.endsWith("SSL") ? clientTls(config, name) : undefined;
  if (!protocol.startsWith("SASL_")) return tls === undefined ? {} : { tls };
  const credentials = saslCredentials(config, name);
  return {
    ...(tls === undefined ? {} : { tls }),
    authenticate: (client, timeoutMs) =>
      authenticate(client, credentials, SASL_AUTHENTICATE_VERSION, timeoutMs),
  };
}

function clientTls(config: BrokerConfig, listenerName: string): ClientTlsOptions {
  const ssl = sslSettingsFor(config, listenerName);
  const { options } = tlsServerConfig(ssl, listenerName);
  const text = (v: unknown) => (typeof v === "string" && v !== "" ? v : undefined);
  const ca = text(options.ca);
  const passphrase = text(options.passphrase);
  return {
    cert: text(options.cert)!,
    key: text(options.key)!,
    ...(ca === undefined ? {} : { ca }),
    ...(passphrase === undefined ? {} : { passphrase }),
    verifyHostname: ssl["ssl.endpoint.identification.algorithm"] === "https",
  };
}

function saslCredentials(config: BrokerConfig, listenerName: string) {
  const mechanism: SaslMechanism | null = config["sasl.mechanism.inter.broker.protocol"];
  if (mechanism === null) {
    throw new ConfigError(
      `the inter-broker listener ${listenerName} speaks SASL but ` +
        "sasl.mechanism.inter.broker.protocol is not set (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; " +
        "Kafka's default, GSSAPI, is not implemented)",
    );
  }
  const jaasKey =
    `listener.name.${listenerName.toLowerCase()}.` + `${mechanism.toLowerCase()}.sasl.jaas.config`;
  const options = jaasOptions(jaasConfigFor(config, listenerName, mechanism) ?? "");
  const username = options.get("username");
  const password = options.get("password");
  if (username === undefined || password === undefined) {
    throw new ConfigError(
      `${jaasKey} must hold the broker's own username="..." and password="..." options: ` +
        `brokers authenticate to each other with ${mechanism} on listener ${listenerName}`,
    );
  }
  return { mechanism, username, password };
}
