import type { BrokerServices } from "../api/broker-services.ts";
import { API_HANDLERS } from "../api/handlers.ts";
import { RequestDispatcher } from "../api/request-dispatcher.ts";
import type { BrokerConfig } from "../config/broker-config.ts";
import type { DynamicBrokerConfig } from "../config/dynamic-broker-config.ts";
import { formatListener, type Listener } from "../config/listeners.ts";
import type { KafkaController } from "../controller/controller.ts";
import type { ControllerClient } from "../controller/controller-client.ts";
import { AddPartitionsToTxnManager } from "../coordinator/add-partitions-to-txn-manager.ts";
import { groupConfigFrom } from "../coordinator/group-config.ts";
import { GroupCoordinator } from "../coordinator/group-coordinator.ts";
import { TransactionCoordinator } from "../coordinator/transaction-coordinator.ts";
import { TRANSACTION_STATE_TOPIC } from "../coordinator/transaction-log.ts";
import { TransactionMarkerChannelManager } from "../coordinator/transaction-marker-channel-manager.ts";
import { TransactionStateManager } from "../coordinator/transaction-state-manager.ts";
import { resolveBrokerId } from "../metadata/broker-id.ts";
import { ControllerRequestGuard } from "../metadata/controller-request-guard.ts";
import {
  LocalGroupConfigStore,
  ZooKeeperGroupConfigStore,
} from "../metadata/group-config-store.ts";
import { PLAINTEXT_SECURITY } from "../network/inter-broker-client.ts";
import { type BoundListener, ListenerServers } from "../network/listener-servers.ts";
import { AdminManager } from "../server/admin-manager.ts";
import { GroupConfigManager } from "../server/group-config-manager.ts";
import { logConfigFor } from "../server/log-config-for-topic.ts";
import { type BrokerEndpoint, MetadataCache } from "../server/metadata-cache.ts";
import { NotAppliedConfigWarnings } from "../server/not-applied-configs.ts";
import { openProducerIdManager, type ProducerIdManager } from "../server/producer-id-manager.ts";
import { ReplicaManager } from "../server/replica-manager.ts";
import { LogManager } from "../storage/log-manager.ts";
import { brokerLogger, type Logger } from "../util/logger.ts";
import { versionLine } from "../version.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import type { AdminServer, AdminState } from "./admin-server.ts";
import { type AdminHandle, adminServes, openAdmin } from "./admin-setup.ts";
import { CleanupStack } from "./cleanup-stack.ts";
import { controllerClientFor, seedFromZooKeeper, startClusterRole } from "./cluster-role.ts";
import {
  cleanerSettings,
  type DynamicConfigParts,
  dynamicServices,
  followDynamicConfig,
  openDynamicConfig,
} from "./dynamic-config-setup.ts";
import { interBrokerSecurity } from "./inter-broker-security.ts";
import { followInternalTopic } from "./internal-topic-leadership.ts";
import { followListenerCertificates, tlsFor } from "./listener-certificates.ts";
import { logDirFailureHandler } from "./log-dir-failure.ts";
import {
  followMetadataChanges,
  type MetadataStores,
  openMetadataStores,
  openOffsetStore,
  registerBroker,
} from "./metadata-stores.ts";
import { startSecurity } from "./sasl-setup.ts";
import { type CoordinatorParts, startShareGroups } from "./share-group-setup.ts";

/** How long a clean stop waits for in-flight requests (long polls are answered at once). */
const SHUTDOWN_DRAIN_MS = 10_000;
/** Pause between attempts to load a __transaction_state partition this broker leads. */

export interface RunningBroker {
  /** The first listener's address actually bound (port 0 in the config picks a free one). */
  readonly host: string;
  readonly port: number;
  /** Every listener as bound, in the configured order. */
  readonly listeners: readonly BoundListener[];
  /** The admin HTTP listeners as bound (admin.listeners), none when it is off. */
  readonly adminListeners: AdminServer["bound"];
  readonly services: BrokerServices;
  /** Stop accepting, finish in-flight requests, flush and close logs, mark a clean shutdown. */
  stop(): Promise<void>;
  /**
   * Reads the TLS listeners' certificates and keys again (SIGHUP): new connections use them,
   * open ones keep theirs. Throws a ConfigError, changing nothing, if the new files are bad.
   */
  reloadCertificates(): string[];
  /** Partition logs on this broker's disks (`quill serve`'s stop bound grows with them). */
  hostedLogCount(): number;
}

/**
 * This broker as Metadata names it: host and port of its inter-broker listener (embedded: the
 * first), every advertised listener; ports follow the bound ones when asked for port 0.
 */
type SelfEndpoint = { -readonly [K in keyof BrokerEndpoint]: BrokerEndpoint[K] };

/** The listeners as bound (port 0 in the config picks a free one). */
interface BoundServer {
  readonly bound: readonly BoundListener[];
  stopAccepting(): void;
  /** Re-reads TLS key material; returns the names of the listeners reloaded. */
  reloadTls(): string[];
  connectionCounts(): { listenerName: string; count: number }[];
}

/**
 * Starts the broker: metadata stores, logs recovered from the log dirs, the replica manager and
 * group coordinator, the API handlers behind the socket server, then (in a cluster) the
 * registration and the controller candidacy. The order matters: everything a request may touch
 * exists before the port is bound. Every step pushes the undoing of what it opened onto one
 * stack, which a failed start and stop() both unwind, so each is closed in reverse order.
 */
export async function startBroker(
  configured: BrokerConfig,
  log: Logger = brokerLogger(configured),
): Promise<RunningBroker> {
  const cleanups = new CleanupStack();
  // First line of the broker's log: what is running, for anyone reading a log or a bug report.
  log.info(`quill: starting broker: ${versionLine()}, pid ${process.pid}`);
  try {
    return await startSteps(configured, log, cleanups);
  } catch (error) {
    // What failed is the error to report; a cleanup's own failure is only logged.
    await cleanups.unwind((message) => log.error(message)).catch(() => {});
    throw error;
  }
}

async function startSteps(
  configured: BrokerConfig,
  log: Logger,
  cleanups: CleanupStack,
): Promise<RunningBroker> {
  const admin = openAdmin(configured, log, cleanups);
  const { stores, config, dynamic } = await openStores(configured, log, cleanups);
  const brokerId = config["broker.id"];
  const self = selfEndpoint(config);
  const cache = new MetadataCache(stores.metadataStore, self, config);
  admin.zooKeeper = stores.zooKeeper;
  const logs = await openLogs(config, stores, cache, dynamic, log, cleanups);
  const replication = startReplicaManager(stores, cache, logs, log, cleanups);
  const { controllerClient, replicaManager } = replication;
  const groupCoordinator = await startGroupCoordinator(replication, stores, cache, log, cleanups);
  const liveBrokerIds = () => cache.brokers.map((b) => b.nodeId);
  const adminManager = new AdminManager(
    liveBrokerIds,
    stores.metadataStore,
    cache,
    logs,
    log.child("AdminManager"),
  );
  const firstLogDir = config["log.dirs"][0]!;
  const producerIdManager = openProducerIdManager(brokerId, stores.zooKeeper, firstLogDir);
  const parts = { config, replicaManager, adminManager, cache, log, cleanups };
  const transactions = startTransactionCoordinator(parts, groupCoordinator, producerIdManager);
  const { groupConfigs } = replication;
  const shares = startShareGroups({ ...parts, connections: transactions.markers, groupConfigs });
  let services: BrokerServices | null = null;
  const answerParked = parkedRequestsAnswerer(replicaManager, groupCoordinator);
  const security = await startSecurity(config, stores.zooKeeper, log, cleanups);
  const server = await serve(dynamic.config, () => services!, log, cleanups, answerParked);
  Object.assign(self, advertisedAsBound(config, server.bound));
  // Set before registering: once registered, the controller may send requests at once.
  services = {
    config,
    ...dynamicServices(dynamic),
    brokerId,
    clusterId: cache.clusterId,
    metadataCache: cache,
    ...security,
    replicaManager,
    ...shares,
    adminManager,
    groupCoordinator,
    handlers: API_HANDLERS,
    metrics: admin.state.metrics,
    controller: null,
    controllerRequestGuard: controllerRequestGuard(stores.zooKeeper, brokerId, log),
    producerIdManager,
    transactionCoordinator: transactions.coordinator,
    transactionStateManager: transactions.state,
    addPartitionsToTxnManager: transactions.partitionAdder,
  };
  const controller = await joinCluster(
    config,
    stores,
    self,
    server,
    cache,
    controllerClient,
    log,
    cleanups,
  );
  services = { ...services, controller };
  if (stores.zooKeeper === null) await loadTransactionState(transactions, cache, log);
  logListening(config, server.bound, self, log);
  return runningBroker(server, admin, services, stopOnce(brokerId, cleanups, log, admin.state));
}

/** What a stop runs before draining: parked fetches and group requests are answered now. */
function parkedRequestsAnswerer(replicaManager: ReplicaManager, groups: GroupCoordinator) {
  return () => {
    replicaManager.completeDelayedFetches();
    // Parked JoinGroup/SyncGroup requests are answered now, or the drain would wait for them.
    groups.close();
  };
}

/** The started broker, which /health/ready now reports ready (once caught up on metadata). */
function runningBroker(
  server: BoundServer,
  admin: AdminHandle,
  services: BrokerServices,
  stop: () => Promise<void>,
): RunningBroker {
  adminServes(admin, services, () => server.connectionCounts());
  const first = server.bound[0]!;
  return {
    host: first.host,
    port: first.port,
    listeners: server.bound,
    adminListeners: admin.bound,
    services,
    stop,
    reloadCertificates: () => server.reloadTls(),
    hostedLogCount: () => services.replicaManager.hostedLogCount,
  };
}

/**
 * The replica manager, with (in a cluster) its client to the controller for AlterPartition,
 * which must exist before the broker serves and so before the controller election starts.
 */
function startReplicaManager(
  stores: MetadataStores,
  cache: MetadataCache,
  logs: LogManager,
  log: Logger,
  cleanups: CleanupStack,
) {
  const brokerId = cache.brokerConfig["broker.id"];
  const zk = stores.zooKeeper;
  const security = zk === null ? PLAINTEXT_SECURITY : interBrokerSecurity(cache.brokerConfig);
  const controllerClient = zk === null ? null : controllerClientFor(zk, brokerId, cache, security);
  if (controllerClient !== null) cleanups.push("controller client", () => controllerClient.close());
  const replicaManager = new ReplicaManager(logs, cache, {
    alterIsr: controllerClient?.alterIsr,
    interBrokerSecurity: security,
    logger: log.child("ReplicaManager"),
    onLogDirFailure: logDirFailureHandler(zk, brokerId, log.child("LogDirFailure")),
    zooKeeperSilence:
      zk === null
        ? undefined
        : { silentMs: () => zk.silentForMs, timeoutMs: () => zk.sessionTimeoutMs },
  });
  // Stops the ISR checks and replica fetchers, and answers parked fetches and produces.
  cleanups.push("replica manager", () => replicaManager.completeDelayedFetches());
  const groupConfigs = openGroupConfigs(cache.brokerConfig, stores, log, cleanups);
  return { controllerClient, replicaManager, groupConfigs };
}

/** Group configs (GROUP resources): ZooKeeper in a cluster, a file in the data dir embedded. */
function openGroupConfigs(
  config: BrokerConfig,
  stores: MetadataStores,
  log: Logger,
  cleanups: CleanupStack,
): GroupConfigManager {
  const groupConfigStore =
    stores.zooKeeper === null
      ? new LocalGroupConfigStore(config["log.dirs"][0]!)
      : new ZooKeeperGroupConfigStore(stores.zooKeeper, log.child("GroupConfigStore"));
  const groupConfigs = new GroupConfigManager(groupConfigStore, () => config, log);
  cleanups.push("group configs", () => groupConfigs.close());
  return groupConfigs;
}

/** This broker as Metadata names it, before the listeners are bound (see advertisedAsBound). */
function selfEndpoint(config: BrokerConfig): SelfEndpoint {
  const own = interBrokerEndpoint(config, config["advertised.listeners"]);
  return {
    nodeId: config["broker.id"],
    host: own.host,
    port: own.port,
    rack: config["broker.rack"],
    listeners: config["advertised.listeners"],
  };
}

function logListening(
  config: BrokerConfig,
  bound: readonly BoundListener[],
  self: SelfEndpoint,
  log: Logger,
): void {
  // Scripts read the first "HOST:PORT" after "listening on": the first listener comes first.
  const bindings = bound.map((l) => `${l.host}:${l.port} (${l.listenerName})`).join(", ");
  log.info(
    `broker ${config["broker.id"]} listening on ${bindings} (advertised ` +
      `${self.listeners!.map(formatListener).join(",")}), data in ${config["log.dirs"].join(",")}`,
  );
}

/** Controller requests checked against ZooKeeper in a cluster; none when embedded. */
function controllerRequestGuard(zk: ZooKeeperClient | null, brokerId: number, log: Logger) {
  return zk === null
    ? null
    : new ControllerRequestGuard(zk, brokerId, log.child("ControllerRequestGuard"));
}

/** stop(): unwinds the start-up's cleanups once, however often it is called. */
function stopOnce(brokerId: number, cleanups: CleanupStack, log: Logger, admin: AdminState) {
  let stopping: Promise<void> | null = null;
  return () =>
    (stopping ??= (async () => {
      admin.ready = false;
      await cleanups.unwind((message) => log.error(message));
      log.info(`broker ${brokerId} stopped cleanly`);
    })());
}

function interBrokerEndpoint(config: BrokerConfig, listeners: readonly Listener[]): Listener {
  const name = config["inter.broker.listener.name"];
  return listeners.find((l) => l.listenerName === name) ?? listeners[0]!;
}

/**
 * This broker's endpoints with each advertised port 0 (a listener on port 0 that advertises
 * itself, or an explicit port 0) replaced by the port bound; an advertised port set to another
 * value stays, as a proxy in front of the broker needs.
 */
function advertisedAsBound(config: BrokerConfig, bound: readonly BoundListener[]) {
  const listeners = config["advertised.listeners"].map((a, i) =>
    a.port === 0 ? { ...a, port: bound[i]!.port } : a,
  );
  const own = interBrokerEndpoint(config, listeners);
  return { host: own.host, port: own.port, listeners };
}

/**
 * Opens the metadata store (the local file, or ZooKeeper in a cluster) and settles the broker
 * id, which may come from the data dir or, in a cluster, ZooKeeper (broker.id -1); then reads
 * the dynamic broker configs, so that everything started after runs with them.
 */
async function openStores(
  configured: BrokerConfig,
  log: Logger,
  cleanups: CleanupStack,
): Promise<{ stores: MetadataStores; config: BrokerConfig; dynamic: DynamicConfigParts }> {
  const stores = await openMetadataStores(configured, log.child("MetadataStore"));
  cleanups.push("metadata stores", () => stores.close());
  const brokerId = await resolveBrokerId(
    configured["broker.id"],
    stores.metadataStore.clusterId,
    configured["log.dirs"],
    stores.zooKeeper,
  );
  const config = { ...configured, "broker.id": brokerId };
  const dynamic = await openDynamicConfig(config, stores.zooKeeper, log);
  return { stores, config: dynamic.config.current, dynamic };
}

/**
 * Opens the log dirs (recovering them if the last stop was not clean) and keeps the logs in
 * line with topic changes made elsewhere. The embedded broker creates the logs of every
 * partition here; in a cluster the controller's LeaderAndIsr does, as in Kafka.
 */
async function openLogs(
  config: BrokerConfig,
  stores: MetadataStores,
  cache: MetadataCache,
  dynamic: DynamicConfigParts,
  log: Logger,
  cleanups: CleanupStack,
): Promise<LogManager> {
  const logs = await LogManager.openAsync({
    logDirs: config["log.dirs"],
    configForTopic: (topic) => logConfigFor(cache.topic(topic)?.configs ?? {}, cache.brokerConfig),
    retentionCheckIntervalMs: config["log.retention.check.interval.ms"],
    logger: log.child("LogManager"),
    cleaner: cleanerSettings(config),
  });
  cleanups.push("logs", () => logs.closeAsync());
  if (stores.zooKeeper !== null) await seedFromZooKeeper(stores.zooKeeper, cache, log);
  const notApplied = new NotAppliedConfigWarnings(log.child("TopicConfig"));
  notApplied.check([...cache.topics()]);
  cleanups.push(
    "config warnings",
    cache.onReload(() => notApplied.check([...cache.topics()])),
  );
  // In a cluster the controller's LeaderAndIsr creates logs (and deletes strays), as in Kafka.
  for (const t of stores.zooKeeper === null ? cache.topics() : []) {
    for (const p of t.partitions) {
      logs.getOrCreateLog(t.name, p.partition, logConfigFor(t.configs, config));
    }
  }
  logs.startBackgroundTasks();
  const unfollow = followMetadataChanges(stores, cache, logs, log);
  cleanups.push("topic change subscription", unfollow);
  cleanups.push("dynamic config", followDynamicConfig(dynamic, cache, logs, log));
  return logs;
}

/** Committed offsets live where the metadata does: ZooKeeper in a cluster, else the data dir. */
async function startGroupCoordinator(
  replication: { groupConfigs: GroupConfigManager },
  stores: MetadataStores,
  cache: MetadataCache,
  log: Logger,
  cleanups: CleanupStack,
): Promise<GroupCoordinator> {
  const config = cache.brokerConfig;
  // Group configs are read whole before any group is served, then followed.
  const groupConfigs = replication.groupConfigs;
  await groupConfigs.start();
  const offsetStore = openOffsetStore(stores, config, log.child("OffsetStore"));
  cleanups.push("offset store", () => offsetStore.close());
  const isCoordinatorFor = (groupId: string) =>
    cache.groupCoordinator(groupId)?.nodeId === config["broker.id"];
  // KIP-848 assignors size each subscribed topic from the metadata this broker holds.
  const partitionCounts = (topics: ReadonlySet<string>) => {
    const counts = new Map<string, number>();
    for (const name of topics) {
      const topic = cache.topic(name);
      if (topic !== undefined) counts.set(name, topic.partitions.length);
    }
    return counts;
  };
  const groupCoordinator = new GroupCoordinator(
    offsetStore,
    groupConfigFrom(config),
    Date.now,
    isCoordinatorFor,
    partitionCounts,
    log.child("GroupCoordinator"),
    () => cache.topicNames(),
    groupConfigs,
  );
  // Groups follow the leaders of __consumer_offsets: those that moved are let go at once.
  const unwatchLeaders = cache.onReload(() => groupCoordinator.releaseMovedGroups());
  cleanups.push("group leadership subscription", unwatchLeaders);
  cleanups.push("group coordinator", () => groupCoordinator.close());
  await groupCoordinator.start();
  return groupCoordinator;
}

/**
 * The transaction coordinator, its state in __transaction_state and its marker channel. Its
 * timers and marker retries stop before the replica manager and group coordinator close.
 */
function startTransactionCoordinator(
  parts: CoordinatorParts,
  groupCoordinator: GroupCoordinator,
  producerIdManager: ProducerIdManager,
): {
  coordinator: TransactionCoordinator;
  state: TransactionStateManager;
  partitionAdder: AddPartitionsToTxnManager;
  markers: TransactionMarkerChannelManager;
} {
  const { config, replicaManager, adminManager, cache, log, cleanups } = parts;
  const txnLog = log.child("TransactionCoordinator");
  const state = new TransactionStateManager(config, replicaManager, adminManager, cache, txnLog);
  const markers = new TransactionMarkerChannelManager(
    replicaManager,
    groupCoordinator,
    cache,
    config["replica.socket.timeout.ms"],
    txnLog,
  );
  const coordinator = new TransactionCoordinator(config, state, markers, producerIdManager);
  const timeoutMs = config["replica.socket.timeout.ms"];
  const partitionAdder = new AddPartitionsToTxnManager(
    coordinator,
    state,
    markers,
    cache,
    timeoutMs,
    txnLog,
  );
  coordinator.start();
  cleanups.push("transaction coordinator", () => coordinator.stop());
  followInternalTopic(
    replicaManager,
    config,
    TRANSACTION_STATE_TOPIC,
    {
      // A new leader finishes what was prepared there.
      load: (p) =>
        state.loadPartition(p).then((loaded) => {
          void coordinator.onPartitionLoaded(loaded);
        }),
      unload: (p) => state.unloadPartition(p),
    },
    log,
    cleanups,
  );
  return { coordinator, state, partitionAdder, markers };
}

/**
 * Embedded mode leads every __transaction_state partition: all are loaded at start, and
 * decisions prepared before a crash are completed in the background.
 */
async function loadTransactionState(
  transactions: { coordinator: TransactionCoordinator; state: TransactionStateManager },
  cache: MetadataCache,
  log: Logger,
): Promise<void> {
  const partitions = cache.topic(TRANSACTION_STATE_TOPIC)?.partitions.length ?? 0;
  for (let p = 0; p < partitions; p++) {
    try {
      const loaded = await transactions.state.loadPartition(p);
      void transactions.coordinator.onPartitionLoaded(loaded);
    } catch (error) {
      log.error(`quill: loading ${TRANSACTION_STATE_TOPIC}-${p} failed: ${String(error)}`);
    }
  }
}

/**
 * Binds every listener with the API handlers behind them. Stopping it first answers what is parked
 * (`answerParked`), then waits for in-flight requests before closing connections.
 */
async function serve(
  dynamic: DynamicBrokerConfig,
  services: () => BrokerServices,
  log: Logger,
  cleanups: CleanupStack,
  answerParked: () => void,
): Promise<BoundServer> {
  const config = dynamic.current;
  const server = await ListenerServers.start(
    config.listeners,
    new RequestDispatcher(services, API_HANDLERS, log.child("RequestDispatcher")),
    {
      socketRequestMaxBytes: config["socket.request.max.bytes"],
      maxConnections: config["max.connections"],
      maxInFlightRequestsPerConnection: config["queued.max.requests"],
      connectionsMaxIdleMs: Math.max(1, Math.min(config["connections.max.idle.ms"], 2 ** 31 - 1)),
      failedAuthenticationDelayMs: config["connection.failed.authentication.delay.ms"],
      ...(config["queued.max.request.bytes"] === null
        ? {}
        : { queuedMaxRequestBytes: config["queued.max.request.bytes"] }),
    },
    log.child("SocketServer"),
    // SIGHUP and dynamic key store changes read the listener's settings as they are now.
    (l) => tlsFor(dynamic.current, l),
  );
  cleanups.push("socket servers", async () => {
    server.stopAccepting();
    answerParked();
    await server.drainAndClose(SHUTDOWN_DRAIN_MS);
  });
  const reload = () => server.reloadTls();
  const certificates = log.child("ListenerCertificates");
  const unfollow = followListenerCertificates(dynamic, config.listeners, reload, certificates);
  cleanups.push("listener certificates", unfollow);
  return {
    bound: server.bound,
    stopAccepting: () => server.stopAccepting(),
    reloadTls: () => server.reloadTls(),
    connectionCounts: () => server.connectionCounts(),
  };
}

/**
 * In a cluster: registers at `/brokers/ids/<id>` with the bound endpoint, then joins the
 * controller election. Stopping runs the other way: controlled shutdown while still serving,
 * then no new connections, then deregistration. Returns the controller candidacy, or null.
 */
async function joinCluster(
  config: BrokerConfig,
  stores: MetadataStores,
  self: SelfEndpoint,
  server: BoundServer,
  cache: MetadataCache,
  controllerClient: ControllerClient | null,
  log: Logger,
  cleanups: CleanupStack,
): Promise<KafkaController | null> {
  if (stores.zooKeeper === null || controllerClient === null) return null;
  const registration = await registerBroker(
    stores.zooKeeper,
    config,
    self,
    log.child("BrokerRegistration"),
    (brokerEpoch) => cache.setBrokerEpoch(brokerEpoch),
  );
  cleanups.push("broker registration", async () => {
    // No new connections once the controlled shutdown is over and the broker leaves the cluster.
    server.stopAccepting();
    await registration.deregister();
  });
  const clusterRole = await startClusterRole(
    stores.zooKeeper,
    config,
    cache,
    controllerClient,
    log,
  );
  // Still serving: the controller tells this broker and the new leaders over the network.
  cleanups.push("cluster role", () => clusterRole.shutDown());
  return clusterRole.controller;
}
