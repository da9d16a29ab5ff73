/**
 * A TLS listener's key store changed through the admin API (`kafka-configs.sh --entity-type
 * brokers --alter --add-config listener.name.<l>.ssl.keystore.location=…`), as Kafka's
 * reconfigurable SslFactory: before the change is stored the new key store must load and its
 * certificate must name the same subject and subject alternative names as the one in use
 * (INVALID_CONFIG otherwise, and the old one stays); once stored, the listener serves new
 * connections with it. Open connections keep their session.
 */
import { X509Certificate } from "node:crypto";
import type { BrokerConfig } from "../config/broker-config.ts";
import { ConfigError, InvalidKeyStoreError } from "../config/config-error.ts";
import type { DynamicBrokerConfig } from "../config/dynamic-broker-config.ts";
import { DYNAMIC_LISTENER_KEYS } from "../config/dynamic-broker-keys.ts";
import { listenerValue, sslSettingsFor } from "../config/listener-config.ts";
import type { Listener } from "../config/listeners.ts";
import { type TlsServerConfig, tlsServerConfig } from "../security/tls-server-config.ts";
import type { Logger } from "../util/logger.ts";

const usesTls = (l: Listener) => l.securityProtocol === "SSL" || l.securityProtocol === "SASL_SSL";

/** The listener's TLS settings as `config` gives them. */
export function tlsFor(config: BrokerConfig, l: Listener): TlsServerConfig {
  return tlsServerConfig(sslSettingsFor(config, l.listenerName), l.listenerName);
}

/**
 * Checks key store changes before they are stored and reloads the listeners they change; returns
 * the function that stops both. `reloadTls` makes every TLS listener take its settings again.
 */
export function followListenerCertificates(
  dynamic: DynamicBrokerConfig,
  listeners: readonly Listener[],
  reloadTls: () => string[],
  log: Logger,
): () => void {
  const tlsListeners = listeners.filter(usesTls);
  const removeValidator = dynamic.addValidator((next, now) => {
    for (const l of tlsListeners) {
      if (keyStoreChanged(next, now, l)) checkKeyStore(next, now, l);
    }
  });
  const prefixes = tlsListeners.map((l) => `listener.name.${l.listenerName.toLowerCase()}.`);
  const unsubscribe = dynamic.onChange((_config, changed) => {
    if (![...changed].some((k) => prefixes.some((p) => k.startsWith(p)))) return;
    try {
      const names = reloadTls();
      log.info(`listener certificates reloaded after a dynamic config change: ${names.join(",")}`);
    } catch (error) {
      log.error(`listener certificates not reloaded, the old ones stay: ${String(error)}`);
    }
  });
  return () => {
    unsubscribe();
    removeValidator();
  };
}

function keyStoreChanged(next: BrokerConfig, now: BrokerConfig, l: Listener): boolean {
  return [...DYNAMIC_LISTENER_KEYS].some(
    (k) =>
      listenerValue(next, l.listenerName, k as never) !==
      listenerValue(now, l.listenerName, k as never),
  );
}

/** Kafka's SslFactory validation: the new key store loads and names the same identity. */
function checkKeyStore(next: BrokerConfig, now: BrokerConfig, l: Listener): void {
  let fresh: TlsServerConfig;
  try {
    fresh = tlsFor(next, l);
    // Bun parses the key material only when a server uses it: parse it here, so a key that
    // does not fit its certificate is refused now rather than when the listener reloads.
    Bun.listen({ hostname: "127.0.0.1", port: 0, tls: fresh.options, socket: { data() {} } }).stop(
      true,
    );
  } catch (error) {
    const reason = error instanceof ConfigError ? error.message : String(error);
    throw new InvalidKeyStoreError(
      `Validation of dynamic config update of SSLFactory failed: ${reason}`,
    );
  }
  const before = identityOf(tlsFor(now, l));
  const after = identityOf(fresh);
  if (before.subject !== after.subject || before.subjectAltName !== after.subjectAltName) {
    throw new InvalidKeyStoreError(
      `Validation of dynamic config update of SSLFactory failed: Keystore ` +
        `DistinguishedName or SubjectAltNames do not match: existingCertificate ` +
        `{subject=${before.subject}, subjectAltNames=${before.subjectAltName}}, ` +
        `newCertificate {subject=${after.subject}, subjectAltNames=${after.subjectAltName}}`,
    );
  }
}

/** The first certificate of the chain: the server's own. */
function identityOf(tls: TlsServerConfig): { subject: string; subjectAltName: string } {
  const cert = new X509Certificate(String(tls.options.cert));
  return { subject: cert.subject, subjectAltName: cert.subjectAltName ?? "" };
}
