import type { BrokerConfig } from "../config/broker-config.ts";
import { jaasConfigFor, listenerValue } from "../config/listener-config.ts";
import { AclAuthorizer } from "../security/acl-authorizer.ts";
import { LocalAclStore } from "../security/local-acl-store.ts";
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
import { ZooKeeperAclStore } from "../security/zookeeper-acl-store.ts";
import type { Logger } from "../util/logger.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import type { CleanupStack } from "./cleanup-stack.ts";
import { startClientQuotas } from "./quota-setup.ts";

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

/**
 * The SASL authenticator, the client quotas and, with `authorizer.class.name` set, the ACL
 * authorizer with every ACL loaded (before any listener accepts a request) and kept current
 * from the store's change notices until the broker stops.
 */
export async function startSecurity(
  config: BrokerConfig,
  zooKeeper: ZooKeeperClient | null,
  log: Logger,
  cleanups: CleanupStack,
) {
  const saslAuthenticator = saslAuthenticatorFor(config, zooKeeper);
  const quotas = await startClientQuotas(config, zooKeeper, log, cleanups);
  const authorizer = await startAuthorizer(config, zooKeeper, log, cleanups);
  return { saslAuthenticator, authorizer, ...quotas };
}

/** `authorizer.class.name`'s authorizer, every ACL loaded; null without one. */
async function startAuthorizer(
  config: BrokerConfig,
  zooKeeper: ZooKeeperClient | null,
  log: Logger,
  cleanups: CleanupStack,
): Promise<AclAuthorizer | null> {
  if (config["authorizer.class.name"] === "") return null;
  const authorizerLog = log.child("AclAuthorizer");
  const store =
    zooKeeper === null
      ? new LocalAclStore(config["log.dirs"][0]!)
      : new ZooKeeperAclStore(zooKeeper, authorizerLog);
  const authorizer = new AclAuthorizer(
    store,
    {
      superUsers: config["super.users"],
      allowEveryoneIfNoAclFound: config["allow.everyone.if.no.acl.found"],
    },
    authorizerLog,
  );
  await authorizer.start();
  cleanups.push("ACL authorizer", async () => authorizer.close());
  authorizerLog.info(`Loaded ${authorizer.aclCount} ACLs`);
  return authorizer;
}
