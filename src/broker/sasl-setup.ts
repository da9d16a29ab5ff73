import type { BrokerConfig } from "../config/broker-config.ts";
import { jaasConfigFor, listenerValue } from "../config/listener-config.ts";
import {
  SaslAuthenticator,
  type SaslListenerConfig,
  saslListenerConfig,
} from "../security/sasl-authenticator.ts";
import {
  LocalScramCredentialStore,
  type ScramCredentialStore,
  ZooKeeperScramCredentialStore,
} from "../security/scram-credential-store.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";

/**
 * SCRAM credentials live where the metadata does: ZooKeeper's /config/users in a cluster, the
 * first log dir in the embedded broker.
 */
export function scramCredentialStore(
  config: BrokerConfig,
  zooKeeper: ZooKeeperClient | null,
): ScramCredentialStore {
  return zooKeeper === null
    ? new LocalScramCredentialStore(config["log.dirs"][0]!)
    : new ZooKeeperScramCredentialStore(zooKeeper);
}

/** The SASL listeners' settings, checked (a ConfigError names the key); null without any. */
export function saslAuthenticatorFor(
  config: BrokerConfig,
  zooKeeper: ZooKeeperClient | null,
): SaslAuthenticator {
  const listeners = new Map<string, SaslListenerConfig>();
  for (const l of config.listeners) {
    if (!l.securityProtocol.startsWith("SASL_")) continue;
    const name = l.listenerName;
    const mechanisms = listenerValue(config, name, "sasl.enabled.mechanisms");
    listeners.set(name, saslListenerConfig(name, mechanisms, jaasConfigFor(config, name, "PLAIN")));
  }
  return new SaslAuthenticator(listeners, scramCredentialStore(config, zooKeeper));
}
