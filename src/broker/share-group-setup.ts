import type { BrokerConfig } from "../config/broker-config.ts";
import { ShareCoordinator } from "../coordinator/share-coordinator.ts";
import { type BrokerConnections, ShareStatePersister } from "../coordinator/share-persister.ts";
import { SHARE_STATE_TOPIC } from "../coordinator/share-state-log.ts";
import type { AdminManager } from "../server/admin-manager.ts";
import type { GroupConfigManager } from "../server/group-config-manager.ts";
import type { MetadataCache } from "../server/metadata-cache.ts";
import type { ReplicaManager } from "../server/replica-manager.ts";
import { SharePartitionManager, type ShareStateStore } from "../server/share-partition-manager.ts";
import { LocalShareStateStore } from "../server/share-state-store.ts";
import type { Logger } from "../util/logger.ts";
import type { CleanupStack } from "./cleanup-stack.ts";
import { followInternalTopic } from "./internal-topic-leadership.ts";

/** What the coordinators (transactions, share groups) are built on. */
export interface CoordinatorParts {
  readonly config: BrokerConfig;
  readonly replicaManager: ReplicaManager;
  readonly adminManager: AdminManager;
  readonly cache: MetadataCache;
  readonly log: Logger;
  readonly cleanups: CleanupStack;
}

export interface ShareGroupParts extends CoordinatorParts {
  /** Connections to the other brokers, for the share coordinator's RPCs. */
  readonly connections: BrokerConnections;
  /** Group configs: `share.auto.offset.reset` and the group's `share.*` values. */
  readonly groupConfigs: GroupConfigManager;
}

/** How long a share partition's leader retries a moving or loading share coordinator. */
const PERSISTER_RETRY_MS = 10_000;

/**
 * Share groups' delivery state (KIP-932, docs/share-groups.md): in embedded mode a file in the
 * data dir; in a cluster the share coordinator, which keeps it in __share_group_state and
 * follows the leadership of that topic's partitions, and which partition leaders read and
 * write through the persister.
 */
export function startShareGroups(parts: ShareGroupParts) {
  const { config, replicaManager, cache, log, cleanups } = parts;
  const cluster = config["zookeeper.connect"] !== null;
  const coordinatorLog = log.child("ShareCoordinator");
  const shareCoordinator = new ShareCoordinator(
    config,
    replicaManager,
    parts.adminManager,
    cache,
    coordinatorLog,
  );
  followInternalTopic(
    replicaManager,
    config,
    SHARE_STATE_TOPIC,
    {
      load: (p) => shareCoordinator.loadPartition(p),
      unload: (p) => shareCoordinator.unloadPartition(p),
    },
    coordinatorLog,
    cleanups,
  );
  const dataDir = cluster ? null : config["log.dirs"][0]!;
  let store: ShareStateStore;
  if (dataDir === null) {
    const retryMs = PERSISTER_RETRY_MS;
    const persisterLog = log.child("SharePersister");
    store = new ShareStatePersister(
      shareCoordinator,
      cache,
      parts.connections,
      retryMs,
      persisterLog,
    );
  } else {
    const local = new LocalShareStateStore(dataDir, log.child("ShareStateStore"));
    cleanups.push("share state store", () => local.close());
    store = local;
  }
  const sharePartitionManager = new SharePartitionManager(
    replicaManager,
    {
      lockDurationMs: config["group.share.record.lock.duration.ms"],
      deliveryCountLimit: config["group.share.delivery.count.limit"],
      maxInFlightRecords: config["group.share.partition.max.record.locks"],
      maxSessions: config["group.share.max.share.sessions"],
      fetchMaxBytes: config["fetch.max.bytes"],
    },
    parts.groupConfigs,
    store,
  );
  cleanups.push("share partition manager", () => sharePartitionManager.close());
  return { sharePartitionManager, shareCoordinator };
}
