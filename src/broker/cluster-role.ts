/**
 * A broker's part in a ZooKeeper-mode cluster beyond its registration: its metadata cache
 * seeded from ZooKeeper at startup (so Metadata is right before the controller first speaks),
 * its candidacy for controller, its client to the active controller (AlterPartition for the
 * ReplicaManager, ControlledShutdown before it stops).
 */

import type { BrokerConfig } from "../config/broker-config.ts";
import { KafkaController } from "../controller/controller.ts";
import { ControllerClient } from "../controller/controller-client.ts";
import { readClusterSnapshot } from "../controller/controller-state.ts";
import type { InterBrokerSecurity } from "../network/inter-broker-client.ts";
import type { MetadataCache } from "../server/metadata-cache.ts";
import type { Logger } from "../util/logger.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";

/** Controlled shutdown asks the controller this many times before the broker stops anyway. */
const CONTROLLED_SHUTDOWN_ATTEMPTS = 3;
const CONTROLLED_SHUTDOWN_RETRY_MS = 500;

export interface ClusterRole {
  readonly controller: KafkaController;
  readonly controllerClient: ControllerClient;
  /** Moves this broker's leaderships away (retrying), then leaves the controller election. */
  shutDown(): Promise<void>;
}

/** Reads live brokers and partition states from ZooKeeper into the cache. */
export async function seedFromZooKeeper(
  zk: ZooKeeperClient,
  cache: MetadataCache,
  log: Logger,
): Promise<void> {
  const listener = cache.brokerConfig["inter.broker.listener.name"];
  const snapshot = await readClusterSnapshot(zk, log, {}, listener);
  cache.setLiveBrokers(
    [...snapshot.brokers.values()].map((b) => ({
      nodeId: b.brokerId,
      host: b.host,
      port: b.port,
      rack: b.rack,
      ...(b.endpoints === undefined ? {} : { listeners: b.endpoints }),
    })),
  );
  cache.applyLeaderStates(
    [...snapshot.partitions.values()].flatMap((p) => {
      if (p.state === null) return [];
      return [
        {
          topic: p.topic,
          topicId: p.topicIdHex === null ? new Uint8Array(16) : Buffer.from(p.topicIdHex, "hex"),
          partition: p.partition,
          leader: p.state.leader,
          leaderEpoch: p.state.leaderEpoch,
          partitionEpoch: p.version,
          isr: p.state.isr,
          replicas: p.replicas,
        },
      ];
    }),
  );
}

/**
 * The broker's client to whichever broker the cache names as controller; the ReplicaManager
 * needs it (AlterPartition) before the broker serves, so it exists before the election starts.
 */
export function controllerClientFor(
  zk: ZooKeeperClient,
  brokerId: number,
  cache: MetadataCache,
  security: InterBrokerSecurity,
): ControllerClient {
  return new ControllerClient(
    brokerId,
    () => {
      const id = cache.controllerId;
      const endpoint = id < 0 ? undefined : cache.broker(id);
      return endpoint === undefined ? null : { id, host: endpoint.host, port: endpoint.port };
    },
    zk.sessionTimeoutMs,
    () => cache.brokerEpoch,
    security,
  );
}

/** Joins the controller election; call once the broker is registered and serving. */
export async function startClusterRole(
  zk: ZooKeeperClient,
  config: BrokerConfig,
  cache: MetadataCache,
  controllerClient: ControllerClient,
  log: Logger,
): Promise<ClusterRole> {
  const brokerId = config["broker.id"];
  const controller = await KafkaController.start(zk, {
    brokerId,
    requestTimeoutMs: zk.sessionTimeoutMs,
    interBrokerListenerName: config["inter.broker.listener.name"],
    interBrokerSecurity: controllerClient.security,
    log: log.child("KafkaController"),
    onControllerChange: (id, epoch) => cache.setController(id, epoch),
    uncleanLeaderElectionEnable: () => config["unclean.leader.election.enable"],
    deleteTopicEnable: config["delete.topic.enable"],
    leaderRebalance: config["auto.leader.rebalance.enable"]
      ? {
          intervalMs: config["leader.imbalance.check.interval.seconds"] * 1000,
          imbalancePercentage: config["leader.imbalance.per.broker.percentage"],
        }
      : null,
  });
  const shutDown = async () => {
    // All attempts together take at most one session timeout: a broker whose controller is
    // unreachable (ZooKeeper down, say) must still stop in reasonable time.
    const deadlineMs = Date.now() + zk.sessionTimeoutMs;
    for (let attempt = 1; attempt <= CONTROLLED_SHUTDOWN_ATTEMPTS; attempt++) {
      const leftMs = deadlineMs - Date.now();
      if (leftMs <= 0) break;
      const remaining = await controllerClient.controlledShutdown(leftMs);
      if (remaining === 0) {
        log.info(`controlled shutdown of broker ${brokerId}: leaderships moved away`);
        break;
      }
      log.warn(
        `controlled shutdown of broker ${brokerId}, attempt ${attempt}: ` +
          (remaining < 0 ? "no controller answered" : `${remaining} partitions still led here`),
      );
      if (attempt < CONTROLLED_SHUTDOWN_ATTEMPTS) await Bun.sleep(CONTROLLED_SHUTDOWN_RETRY_MS);
    }
    controllerClient.close();
    await controller.close();
  };
  return { controller, controllerClient, shutDown };
}
