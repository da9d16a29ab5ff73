import type { BrokerServices } from "../api/broker-services.ts";
import { API_HANDLERS } from "../api/handlers.ts";
import { GENERATE_BROKER_ID, resolveBrokerId } from "../metadata/broker-id.ts";
import { RequestDispatcher } from "../api/request-dispatcher.ts";
import { GroupCoordinator } from "../coordinator/group-coordinator.ts";
import { groupConfigFrom } from "../coordinator/group-config.ts";
import type { BrokerConfig } from "../config/broker-config.ts";
import { SocketServer } from "../network/socket-server.ts";
import { LogManager } from "../storage/log-manager.ts";
import { AdminManager } from "../server/admin-manager.ts";
import { logConfigFor } from "../server/log-config-for-topic.ts";
import { MetadataCache } from "../server/metadata-cache.ts";
import {
  followMetadataChanges, openMetadataStores, openOffsetStore, registerBroker,
} from "./metadata-stores.ts";
import { openProducerIdManager } from "../server/producer-id-manager.ts";
import { ReplicaManager } from "../server/replica-manager.ts";
import { controllerClientFor, seedFromZooKeeper, startClusterRole } from "./cluster-role.ts";

/** How long a clean stop waits for in-flight requests (long polls are answered at once). */
const SHUTDOWN_DRAIN_MS = 10_000;

export interface RunningBroker {
  /** The address actually bound (port 0 in the config picks a free one). */
  readonly host: string;
  readonly port: number;
  readonly services: BrokerServices;
  /** Stop accepting, finish in-flight requests, flush and close logs, mark a clean shutdown. */
  stop(): Promise<void>;
}

export interface BrokerLogger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/**
 * Starts the embedded single broker: metadata from the local store, logs recovered from the log
 * dirs, the API handlers behind the socket server. The order matters: everything a request may
 * touch exists before the port is bound, and stop() undoes it in reverse.
 */
export async function startBroker(
  configured: BrokerConfig,
  log: BrokerLogger = consoleLogger,
): Promise<RunningBroker> {
  const logDirs = configured["log.dirs"];
  const stores = await openMetadataStores(configured, log);
  // In a cluster the id may come from the data dir or ZooKeeper (broker.id -1).
  const config = stores.zooKeeper === null ? embeddedConfig(configured) : {
    ...configured,
    "broker.id": await resolveBrokerId(configured["broker.id"], stores.metadataStore.clusterId,
      logDirs, stores.zooKeeper).catch(async (error: unknown) => {
      await stores.close();
      throw error;
    }),
  };
  const brokerId = config["broker.id"];
  const store = stores.metadataStore;
  const listen = config.listeners;
  const advertised = config["advertised.listeners"];
  // The advertised port follows the bound one when the operator asked for port 0 (tests).
  const self = { nodeId: brokerId, host: advertised.host, port: advertised.port, rack: config["broker.rack"] };
  const cache = new MetadataCache(store, self, config);
  const logs = LogManager.open({
    logDirs,
    configForTopic: (topic) => logConfigFor(cache.topic(topic)?.configs ?? {}, config),
    retentionCheckIntervalMs: config["log.retention.check.interval.ms"],
    logger: (line) => log.warn(line),
  });
  if (stores.zooKeeper !== null) await seedFromZooKeeper(stores.zooKeeper, cache, log);
  for (const t of cache.topics()) {
    for (const p of t.partitions) {
      // In a cluster a broker keeps logs only of the partitions it is a replica of.
      if (stores.zooKeeper !== null && !p.replicas.includes(brokerId)) continue;
      logs.getOrCreateLog(t.name, p.partition, logConfigFor(t.configs, config));
    }
  }
  logs.startBackgroundTasks();
  const unfollow = followMetadataChanges(stores, cache, logs, config, log);
  const controllerClient = stores.zooKeeper === null ? null
    : controllerClientFor(stores.zooKeeper, brokerId, cache);
  const replicaManager = new ReplicaManager(logs, cache, {
    alterIsr: controllerClient?.alterIsr, logger: (line) => log.warn(line),
  });
  // Committed offsets live where the metadata does: ZooKeeper in cluster mode, else the data dir.
  const offsetStore = openOffsetStore(stores, config);
  const isCoordinatorFor = (groupId: string) => cache.groupCoordinator(groupId).nodeId === brokerId;
  const groupCoordinator = new GroupCoordinator(offsetStore, groupConfigFrom(config), Date.now,
    isCoordinatorFor);
  // Groups follow the live brokers: those that moved elsewhere are let go at once.
  const unwatchBrokers = cache.onLiveBrokersChange(() => groupCoordinator.releaseMovedGroups());
  await groupCoordinator.start();
  const liveBrokerIds = () => cache.brokers.map((b) => b.nodeId);
  const adminManager = new AdminManager(config, liveBrokerIds, store, cache, logs);
  let services: BrokerServices | null = null;
  const dispatcher = new RequestDispatcher(() => services!, API_HANDLERS, log);
  const server = new SocketServer({
    host: listen.host,
    port: listen.port,
    handler: dispatcher,
    logger: log,
    limits: {
      socketRequestMaxBytes: config["socket.request.max.bytes"],
      maxConnections: config["max.connections"],
      maxInFlightRequestsPerConnection: config["queued.max.requests"],
      connectionsMaxIdleMs: Math.max(1, Math.min(config["connections.max.idle.ms"], 2 ** 31 - 1)),
    },
  });
  const bound = await server.start();
  if (advertised.port === 0 || listen.port === 0) Object.assign(self, { port: bound.port });
  // Set before registering: once registered, the controller may send requests at once.
  services = {
    config, brokerId, clusterId: cache.clusterId, advertisedHost: self.host, advertisedPort: self.port,
    metadataCache: cache, replicaManager, adminManager, groupCoordinator, handlers: API_HANDLERS,
    producerIdManager: openProducerIdManager(brokerId, stores.zooKeeper, logDirs[0]!),
    controller: null,
  };
  const registration = stores.zooKeeper === null ? null
    : await registerBroker(stores.zooKeeper, config, self, log).catch(async (error: unknown) => {
      unfollow();
      groupCoordinator.close();
      await server.drainAndClose(0);
      logs.close();
      await offsetStore.close();
      await stores.close();
      throw error;
    });
  const clusterRole = stores.zooKeeper === null ? null
    : await startClusterRole(stores.zooKeeper, config, cache, controllerClient!, log);
  services = { ...services, controller: clusterRole?.controller ?? null };
  log.info(`quill: broker ${brokerId} listening on ${bound.host}:${bound.port} ` +
    `(advertised ${self.host}:${self.port}), data in ${logDirs.join(",")}`);
  let stopping: Promise<void> | null = null;
  const stop = () => (stopping ??= (async () => {
    // Still serving: the controller tells this broker and the new leaders over the network.
    await clusterRole?.shutDown();
    server.stopAccepting();
    await registration?.deregister();
    unfollow();
    unwatchBrokers();
    replicaManager.completeDelayedFetches();
    // Parked JoinGroup/SyncGroup requests are answered now, or the drain would wait for them.
    groupCoordinator.close();
    await server.drainAndClose(SHUTDOWN_DRAIN_MS);
    logs.close();
    await offsetStore.close();
    await stores.close();
    log.info(`quill: broker ${brokerId} stopped cleanly`);
  })());
  return { host: bound.host, port: bound.port, services, stop };
}

/** An embedded broker has no cluster to draw an id from: -1 means 0, the default. */
function embeddedConfig(config: BrokerConfig): BrokerConfig {
  return config["broker.id"] === GENERATE_BROKER_ID ? { ...config, "broker.id": 0 } : config;
}

const consoleLogger: BrokerLogger = {
  info: (m) => console.error(m),
  warn: (m) => console.error(m),
  error: (m) => console.error(m),
};
