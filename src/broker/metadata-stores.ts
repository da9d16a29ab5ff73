/**
 * Where the broker keeps its metadata, picked by config: the local file store for the embedded
 * default, or ZooKeeper (Kafka's znode layout) when `zookeeper.connect` is set. In ZooKeeper
 * mode the broker also registers itself under `/brokers/ids/<id>` and follows topic changes
 * that other processes make.
 */

import * as path from "node:path";
import type { BrokerConfig } from "../config/broker-config.ts";
import type { Listener } from "../config/listeners.ts";
import { LocalOffsetStore } from "../coordinator/local-offset-store.ts";
import type { OffsetStore } from "../coordinator/offset-store.ts";
import { ZooKeeperOffsetStore } from "../coordinator/zookeeper-offset-store.ts";
import { BrokerRegistration } from "../metadata/broker-registration.ts";
import { LocalMetadataStore } from "../metadata/local-metadata-store.ts";
import type { MetadataStore } from "../metadata/metadata-store.ts";
import { ClusterStartupError, connectZooKeeper } from "../metadata/zookeeper-connection.ts";
import { ZooKeeperMetadataStore } from "../metadata/zookeeper-metadata-store.ts";
import { logConfigFor } from "../server/log-config-for-topic.ts";
import type { MetadataCache, TopicMetadata } from "../server/metadata-cache.ts";
import type { LogManager } from "../storage/log-manager.ts";
import type { Logger } from "../util/logger.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import { ZooKeeperUnavailableError } from "../zookeeper/zookeeper-errors.ts";

export interface MetadataStores {
  readonly metadataStore: MetadataStore;
  /** The broker's ZooKeeper session in cluster mode (for the offset store too); else null. */
  readonly zooKeeper: ZooKeeperClient | null;
  /** Closes the store, then the ZooKeeper session (which removes the broker's registration). */
  close(): Promise<void>;
}

/**
 * Opens the metadata store the config asks for. In ZooKeeper mode a ZooKeeper that cannot be
 * reached fails the start with ClusterStartupError after zookeeper.connection.timeout.ms.
 */
export async function openMetadataStores(
  config: BrokerConfig,
  log: Logger,
): Promise<MetadataStores> {
  if (config["zookeeper.connect"] === null) {
    const metadataStore = LocalMetadataStore.open(path.resolve(config["log.dirs"][0]!));
    return { metadataStore, zooKeeper: null, close: () => metadataStore.close() };
  }
  const zooKeeper = await connectZooKeeper(config);
  try {
    const metadataStore = await ZooKeeperMetadataStore.open(zooKeeper, {
      requestTimeoutMs: zooKeeper.sessionTimeoutMs,
      deleteTopicEnable: config["delete.topic.enable"],
      controllerDeletesTopics: true,
      log,
    });
    log.info(
      `metadata in ZooKeeper at ${config["zookeeper.connect"]} ` +
        `(cluster id ${metadataStore.clusterId}, ${metadataStore.topics().length} topics)`,
    );
    const close = async () => {
      await metadataStore.close();
      await zooKeeper.close();
    };
    return { metadataStore, zooKeeper, close };
  } catch (error) {
    await zooKeeper.close();
    if (!(error instanceof ZooKeeperUnavailableError)) throw error;
    throw new ClusterStartupError(
      `ZooKeeper at ${config["zookeeper.connect"]} stopped ` +
        `answering while the broker read its metadata: ${error.message}`,
      { cause: error },
    );
  }
}

/**
 * The group coordinator's committed-offset store, picked like the metadata store: Kafka's
 * `/consumers/<group>/offsets/<topic>/<partition>` through the broker's own ZooKeeper session
 * in cluster mode (closing the offset store leaves the session to `MetadataStores.close`), or
 * the local file store under the first log dir in the embedded default.
 */
export function openOffsetStore(
  stores: MetadataStores,
  config: BrokerConfig,
  log: Logger,
): OffsetStore {
  if (stores.zooKeeper === null) {
    return LocalOffsetStore.open(path.resolve(config["log.dirs"][0]!), { logger: log });
  }
  return new ZooKeeperOffsetStore(stores.zooKeeper);
}

/**
 * Registers the broker at `/brokers/ids/<id>` with its advertised endpoint (known once the
 * listener is bound). A crashed predecessor's registration is waited out for up to twice the
 * session timeout plus a margin; a live broker holding the id fails the start.
 */
export async function registerBroker(
  zooKeeper: ZooKeeperClient,
  config: BrokerConfig,
  advertised: { host: string; port: number; listeners?: readonly Listener[] },
  log: Logger,
  onRegistered: (brokerEpoch: bigint) => void,
): Promise<BrokerRegistration> {
  try {
    return await BrokerRegistration.register(zooKeeper, {
      brokerId: config["broker.id"],
      host: advertised.host,
      port: advertised.port,
      ...(advertised.listeners === undefined ? {} : { endpoints: advertised.listeners }),
      rack: config["broker.rack"],
      expiryWaitMs: 2 * zooKeeper.sessionTimeoutMs + 5_000,
      log,
      onRegistered,
    });
  } catch (error) {
    if (!(error instanceof ZooKeeperUnavailableError)) throw error;
    throw new ClusterStartupError(
      `ZooKeeper stopped answering while broker ` +
        `${config["broker.id"]} registered: ${error.message}`,
      { cause: error },
    );
  }
}

/**
 * Keeps the cache and the local logs in line with topic changes other processes make in
 * ZooKeeper: topics seen deleted lose their logs, changed configs reach the running logs.
 * Logs are never created here: in a cluster a replica comes into being only when the
 * controller's LeaderAndIsr names this broker, as in Kafka (an assignment read from ZooKeeper
 * may be one a reassignment has already moved on from). Changes made through this broker's
 * AdminManager are not reported by the store, so nothing here repeats that work. Returns the
 * unsubscribe function.
 */
export function followMetadataChanges(
  stores: MetadataStores,
  cache: MetadataCache,
  logs: LogManager,
  log: Logger,
): () => void {
  const store = stores.metadataStore;
  if (!(store instanceof ZooKeeperMetadataStore)) return () => {};
  let applying: Promise<void> = Promise.resolve();
  return store.onChange((change) => {
    const before = new Map([...cache.topics()].map((t) => [t.name, t]));
    cache.reload();
    const deleted = change.deletedTopics.flatMap((name) => before.get(name) ?? []);
    // Deletions are asynchronous; running each change after the previous one keeps a topic
    // deleted and created again from losing its new logs to the old deletion.
    applying = applying
      .then(() => applyChange(before, deleted, { cache, logs }))
      .catch((error) => {
        log.error(`applying a topic change from ZooKeeper failed: ${String(error)}`);
      });
  });
}

async function applyChange(
  before: ReadonlyMap<string, TopicMetadata>,
  deleted: readonly TopicMetadata[],
  parts: { cache: MetadataCache; logs: LogManager },
): Promise<void> {
  const { cache, logs } = parts;
  for (const topic of deleted) {
    await Promise.all(topic.partitions.map((p) => logs.deleteLog(topic.name, p.partition)));
  }
  for (const topic of cache.topics()) {
    if (JSON.stringify(before.get(topic.name)?.configs) === JSON.stringify(topic.configs)) continue;
    const logConfig = logConfigFor(topic.configs, cache.brokerConfig);
    for (const p of topic.partitions) logs.getLog(topic.name, p.partition)?.updateConfig(logConfig);
  }
}
