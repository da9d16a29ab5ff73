import { hostname } from "node:os";
import { ConfigError, type ConfigOrigin, DEFAULT_ORIGIN, invalidValue } from "./config-error.ts";
import {
  formatListener,
  type Listener,
  type ListenerAddress,
  type SecurityProtocol,
  type SecurityProtocolMap,
} from "./listeners.ts";
import { refuseProtocol, SUPPORTED_SECURITY_PROTOCOLS } from "./security-guard.ts";

/** The listener keys after Kafka's rules (KafkaConfig's listener checks) are applied. */
export interface ResolvedListeners {
  /** Every listener with its protocol, in the order written. */
  readonly listeners: readonly Listener[];
  /** One per listener, same order: advertised.listeners' entry, else the listener's address
   * with a wildcard host replaced by the host name. */
  readonly "advertised.listeners": readonly Listener[];
  /** From inter.broker.listener.name, else the listener named like
   * security.inter.broker.protocol. */
  readonly "inter.broker.listener.name": string;
}

/** The broker keys the listener rules read, as parsed (broker-config.ts passes its values). */
interface ListenerSettings {
  readonly listeners: readonly ListenerAddress[];
  readonly "advertised.listeners": readonly ListenerAddress[] | null;
  readonly "listener.security.protocol.map": SecurityProtocolMap;
  readonly "inter.broker.listener.name": string | null;
  readonly "security.inter.broker.protocol": SecurityProtocol;
  readonly "zookeeper.connect": unknown;
}

type SettingKey = keyof ListenerSettings;
/** Where each setting came from (the broker's origins map satisfies it). */
interface Origins {
  get(key: SettingKey): ConfigOrigin | undefined;
  has(key: SettingKey): boolean;
}

const WILDCARD_HOSTS = new Set(["", "0.0.0.0", "::"]);

const sourceOf = (origins: Origins, key: SettingKey) => (origins.get(key) ?? DEFAULT_ORIGIN).label;

export function resolveListeners(values: ListenerSettings, origins: Origins): ResolvedListeners {
  const map = values["listener.security.protocol.map"];
  const listenersText = values.listeners.map(formatListener).join(",");
  const listeners = values.listeners.map((l): Listener => {
    const securityProtocol = map[l.listenerName];
    if (securityProtocol === undefined) {
      throw invalidValue(
        "listeners",
        listenersText,
        sourceOf(origins, "listeners"),
        `listener names found in listener.security.protocol.map (${l.listenerName} is not)`,
      );
    }
    if (!SUPPORTED_SECURITY_PROTOCOLS.has(securityProtocol)) {
      throw refuseProtocol(
        "listeners",
        listenersText,
        sourceOf(origins, "listeners"),
        securityProtocol,
      );
    }
    return { ...l, securityProtocol };
  });
  return {
    listeners,
    "advertised.listeners": advertisedListeners(values, listeners, origins),
    "inter.broker.listener.name": interBrokerListenerName(values, listeners, origins),
  };
}

function advertisedListeners(
  values: ListenerSettings,
  listeners: readonly Listener[],
  origins: Origins,
): Listener[] {
  const advertised: readonly ListenerAddress[] = values["advertised.listeners"] ?? [];
  const text = advertised.map(formatListener).join(",");
  const fail = (expected: string) =>
    invalidValue("advertised.listeners", text, sourceOf(origins, "advertised.listeners"), expected);
  for (const a of advertised) {
    if (WILDCARD_HOSTS.has(a.host))
      throw fail("a host clients can connect to, not a wildcard address");
    if (!listeners.some((l) => l.listenerName === a.listenerName)) {
      throw fail(`listener names found in listeners (${a.listenerName} is not)`);
    }
  }
  return listeners.map((l) => {
    const own = advertised.find((a) => a.listenerName === l.listenerName);
    if (own !== undefined) return { ...own, securityProtocol: l.securityProtocol };
    return WILDCARD_HOSTS.has(l.host) ? { ...l, host: hostname() } : l;
  });
}

/**
 * Kafka refuses both keys at once (Quill only when they differ), and an inter-broker listener that is not a listener. In the
 * embedded mode there is no inter-broker traffic, so only a cluster checks the listener exists.
 */
function interBrokerListenerName(
  values: ListenerSettings,
  listeners: readonly Listener[],
  origins: Origins,
): string {
  const named = values["inter.broker.listener.name"]?.toUpperCase() ?? null;
  // Equal values are allowed, unlike Kafka, so --print-config output reads back.
  const protocol = values["security.inter.broker.protocol"];
  if (named !== null && origins.has("security.inter.broker.protocol") && named !== protocol) {
    throw new ConfigError(
      "only one of inter.broker.listener.name " +
        `(from ${sourceOf(origins, "inter.broker.listener.name")}) and ` +
        `security.inter.broker.protocol (from ${sourceOf(origins, "security.inter.broker.protocol")})` +
        " may be set",
    );
  }
  const name = named ?? protocol;
  if (values["zookeeper.connect"] === null) return name;
  const key = named !== null ? "inter.broker.listener.name" : "security.inter.broker.protocol";
  const listener = listeners.find((l) => l.listenerName === name);
  if (listener === undefined) {
    throw invalidValue(
      key,
      name,
      sourceOf(origins, key),
      "the name of one of the listeners " + `(${listeners.map((l) => l.listenerName).join(", ")})`,
    );
  }
  return name;
}
