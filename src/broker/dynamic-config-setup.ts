/**
 * Dynamic broker configs at start and while running: the stored layers are read before the logs
 * open (as Kafka applies them before its LogManager starts), and every change later reaches the
 * metadata cache (topic defaults for new logs and requests), the running logs whose topic does
 * not override a changed default, and the log cleaner.
 */
import * as path from "node:path";
import type { BrokerConfig } from "../config/broker-config.ts";
import { DynamicBrokerConfig } from "../config/dynamic-broker-config.ts";
import {
  type BrokerConfigStore,
  DEFAULT_CONFIG_ENTITY,
  LocalBrokerConfigStore,
  ZooKeeperBrokerConfigStore,
} from "../metadata/broker-config-store.ts";
import { BrokerConfigManager } from "../server/broker-config-manager.ts";
import { logConfigFor } from "../server/log-config-for-topic.ts";
import type { MetadataCache } from "../server/metadata-cache.ts";
import type { LogCleanerConfig } from "../storage/log-cleaner.ts";
import type { LogManager } from "../storage/log-manager.ts";
import type { Logger } from "../util/logger.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";

export interface DynamicConfigParts {
  readonly config: DynamicBrokerConfig;
  readonly manager: BrokerConfigManager;
}

/**
 * The dynamic layers as stored now over the static config: ZooKeeper in a cluster, else a file
 * in the first log dir. A layer that cannot be applied is logged and left out, as Kafka does.
 */
export async function openDynamicConfig(
  config: BrokerConfig,
  zooKeeper: ZooKeeperClient | null,
  log: Logger,
): Promise<DynamicConfigParts> {
  const storeLog = log.child("DynamicBrokerConfig");
  const store: BrokerConfigStore =
    zooKeeper === null
      ? new LocalBrokerConfigStore(path.resolve(config["log.dirs"][0]!))
      : new ZooKeeperBrokerConfigStore(zooKeeper, storeLog);
  const dynamic = new DynamicBrokerConfig(config);
  for (const [entity, level] of [
    [DEFAULT_CONFIG_ENTITY, "default"],
    [String(config["broker.id"]), "broker"],
  ] as const) {
    try {
      dynamic.update(level, await store.read(entity));
    } catch (error) {
      storeLog.error(`dynamic configs of ${entity} not applied: ${String(error)}`);
    }
  }
  return { config: dynamic, manager: new BrokerConfigManager(dynamic, store, storeLog) };
}

/** The parts API handlers reach, under their BrokerServices names. */
export const dynamicServices = (parts: DynamicConfigParts) => ({
  dynamicConfig: parts.config,
  brokerConfigManager: parts.manager,
});

/** log.cleaner.* as the LogCleaner takes them. */
export function cleanerSettings(config: BrokerConfig): LogCleanerConfig {
  return {
    enable: config["log.cleaner.enable"],
    dedupeBufferBytes: config["log.cleaner.dedupe.buffer.size"],
    ioBufferBytes: config["log.cleaner.io.buffer.size"],
    loadFactor: config["log.cleaner.io.buffer.load.factor"],
    ioMaxBytesPerSecond: config["log.cleaner.io.max.bytes.per.second"],
    // Kafka sleeps 0 ms as "no pause"; a timer needs at least 1.
    backoffMs: Math.max(1, config["log.cleaner.backoff.ms"]),
  };
}

/** Applies every later change, and follows the store; returns the function that stops both. */
export function followDynamicConfig(
  parts: DynamicConfigParts,
  cache: MetadataCache,
  logs: LogManager,
  log: Logger,
): () => void {
  const unsubscribe = parts.config.onChange((config, changed) => {
    log.info(`broker config changed: ${[...changed].join(", ")}`);
    cache.updateBrokerConfig(config);
    for (const l of logs.allLogs()) {
      l.updateConfig(logConfigFor(cache.topic(l.topic)?.configs ?? {}, config));
    }
    if ([...changed].some((k) => k.startsWith("log.cleaner."))) {
      logs.cleaner.reconfigure(cleanerSettings(config));
    }
  });
  const unfollow = parts.manager.follow();
  return () => {
    unfollow();
    unsubscribe();
  };
}
