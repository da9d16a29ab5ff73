/**
 * Which broker keys may change without a restart (Kafka 3.9's DynamicBrokerConfig), which
 * names stand for one setting (synonyms), and why a key that may not change is refused.
 */
import { BROKER_CONFIG_KEYS, type BrokerConfigKey, isBrokerConfigKey } from "./broker-config.ts";
import { TOPIC_CONFIG_KEYS } from "./topic-config-keys.ts";

/**
 * Kafka's DynamicLogConfig keys: every broker key that gives a topic key its default. Changing
 * one reaches every log whose topic does not override it.
 */
const LOG_KEYS: readonly BrokerConfigKey[] = Object.values(TOPIC_CONFIG_KEYS).flatMap(
  (k) => k.synonyms,
);

/** Kafka's LogCleaner.ReconfigurableConfigs that Quill has (log.cleaner.threads: see below). */
const CLEANER_KEYS: readonly BrokerConfigKey[] = [
  "log.cleaner.dedupe.buffer.size",
  "log.cleaner.io.buffer.load.factor",
  "log.cleaner.io.buffer.size",
  "log.cleaner.io.max.bytes.per.second",
  "log.cleaner.backoff.ms",
];

/** Kafka's dynamic quota keys of a broker (DynamicConfig.Broker): replication throttles. */
const THROTTLE_KEYS: readonly BrokerConfigKey[] = [
  "leader.replication.throttled.rate",
  "follower.replication.throttled.rate",
  "replica.alter.log.dirs.io.max.bytes.per.second",
];

/** Quill keys an AlterConfigs may change; each takes effect at once, without a restart. */
export const DYNAMIC_BROKER_KEYS: ReadonlySet<BrokerConfigKey> = new Set([
  ...LOG_KEYS,
  ...CLEANER_KEYS,
  ...THROTTLE_KEYS,
]);

/**
 * Kafka's dynamic thread-pool keys (and log.cleaner.threads): Quill has no such pools, so it
 * stores and reports them, as it ignores them in server.properties, and they change nothing.
 */
export const DYNAMIC_KEYS_QUILL_IGNORES: ReadonlySet<string> = new Set([
  "num.io.threads",
  "num.network.threads",
  "num.replica.fetchers",
  "num.recovery.threads.per.data.dir",
  "background.threads",
  "log.cleaner.threads",
]);

/**
 * Keys Kafka changes at runtime that Quill reads only at start: the listeners (Kafka rebinds
 * them; Quill's are bound once) and the connection limit.
 */
const KAFKA_DYNAMIC_QUILL_STATIC: ReadonlySet<string> = new Set([
  "listeners",
  "advertised.listeners",
  "listener.security.protocol.map",
  "max.connections",
]);

/**
 * A TLS listener's key store, which Kafka reloads at runtime (its reconfigurable SslFactory):
 * `listener.name.<l>.<key>` for these keys may change; new connections get the new certificate.
 */
export const DYNAMIC_LISTENER_KEYS: ReadonlySet<string> = new Set([
  "ssl.keystore.type",
  "ssl.keystore.location",
  "ssl.keystore.certificate.chain",
  "ssl.keystore.key",
  "ssl.key.password",
]);

const LISTENER_KEY = /^listener\.name\.([A-Za-z0-9_]+)\.(.+)$/;

/** `listener.name.<l>.<key>` for a key of DYNAMIC_LISTENER_KEYS (listener upper-cased), or null. */
export function dynamicListenerKey(name: string): { listenerName: string; key: string } | null {
  const match = LISTENER_KEY.exec(name);
  if (match === null || !DYNAMIC_LISTENER_KEYS.has(match[2]!)) return null;
  return { listenerName: match[1]!.toUpperCase(), key: match[2]! };
}

/** Why a key may not change at runtime, in Kafka's words where Kafka refuses it too. */
export type Refusal = "static" | "quill-static" | "listener-prefix-only";

/**
 * Sorts the names of one AlterConfigs by why they are refused, in the order Kafka checks
 * (DynamicBrokerConfig.validateConfigs); names Kafka knows nothing of are accepted, as Kafka
 * stores custom keys for plugins.
 */
export function refusedKeys(names: Iterable<string>): Map<Refusal, string[]> {
  const refused = new Map<Refusal, string[]>();
  const add = (why: Refusal, name: string) => {
    const list = refused.get(why) ?? [];
    list.push(name);
    refused.set(why, list);
  };
  for (const name of names) {
    const why = refusalOf(name);
    if (why !== null) add(why, name);
  }
  return refused;
}

function refusalOf(name: string): Refusal | null {
  if (name.startsWith("listener.name.")) {
    return dynamicListenerKey(name) === null ? "quill-static" : null;
  }
  if (KAFKA_DYNAMIC_QUILL_STATIC.has(name)) return "quill-static";
  if (DYNAMIC_KEYS_QUILL_IGNORES.has(name)) return null;
  if (!isBrokerConfigKey(name)) return null;
  if (DYNAMIC_BROKER_KEYS.has(name)) return null;
  // Kafka changes key material only per listener (listener.name.<l>.ssl.keystore.location).
  if (name.startsWith("ssl.") || name.startsWith("sasl.")) return "listener-prefix-only";
  return "static";
}

/** Kafka's text for each refusal (Scala's Set formatting included). */
export function refusalMessage(why: Refusal, names: readonly string[]): string {
  const set = `Set(${names.join(", ")})`;
  switch (why) {
    case "static":
      return `Cannot update these configs dynamically: ${set}`;
    case "listener-prefix-only":
      return `These security configs can be dynamically updated only per-listener: ${set}`;
    case "quill-static":
      return (
        `Quill reads these configs only at start; change them in the config file and ` +
        `restart the broker: ${set}`
      );
  }
}

/**
 * The names that set one value, strongest first (Kafka's DynamicBrokerConfig
 * brokerConfigSynonyms): an ms key wins over its minutes and hours keys.
 */
export function brokerSynonymNames(name: string): readonly string[] {
  return SYNONYM_GROUPS.find((group) => group.includes(name)) ?? [name];
}

const SYNONYM_GROUPS: readonly (readonly string[])[] = [
  ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
  ["log.roll.ms", "log.roll.hours"],
  ["log.roll.jitter.ms", "log.roll.jitter.hours"],
];

/**
 * True for a key whose value DescribeConfigs and the log must never show, also in its
 * `listener.name.<l>.` form (a private key in `ssl.keystore.key`).
 */
export function isSensitiveKey(name: string): boolean {
  const key = LISTENER_KEY.exec(name)?.[2] ?? name;
  return isBrokerConfigKey(key) && BROKER_CONFIG_KEYS[key].valueType.type === "PASSWORD";
}
