import type { BrokerConfig } from "../config/broker-config.ts";
import type { ReplicaManager } from "../server/replica-manager.ts";
import type { Logger } from "../util/logger.ts";
import type { CleanupStack } from "./cleanup-stack.ts";

const LOAD_RETRY_MS = 500;

/** What a coordinator does when this broker starts or stops leading one of its partitions. */
export interface InternalTopicPartitions {
  /** Reads the partition's state; a rejection is retried while this broker leads it. */
  load(partition: number): Promise<void>;
  unload(partition: number): void;
}

/**
 * In a cluster a coordinator follows the leadership of its internal topic's partitions
 * (`__transaction_state`, `__share_group_state`): a new leader reads the partition (failover),
 * a former one forgets it. Only a change of role reloads: a new ISR under the same leader keeps
 * the state in memory. A load can fail transiently (LeaderAndIsr arrives before the
 * UpdateMetadata that makes the topic known to the fetch path): it is retried while this
 * broker still leads the partition, or the keys hashed to it would answer
 * COORDINATOR_LOAD_IN_PROGRESS until the next leader change.
 */
export function followInternalTopic(
  replicaManager: ReplicaManager,
  config: BrokerConfig,
  internalTopic: string,
  coordinator: InternalTopicPartitions,
  log: Logger,
  cleanups: CleanupStack,
): void {
  const led = new Set<number>();
  const load = (partition: number): void => {
    void coordinator.load(partition).catch((error: unknown) => {
      log.warn(`loading ${internalTopic}-${partition}, retrying: ${String(error)}`);
      setTimeout(() => {
        if (led.has(partition)) load(partition);
      }, LOAD_RETRY_MS).unref();
    });
  };
  const unwatch = replicaManager.onLeadershipChange((topic, partition, isLeader) => {
    if (topic !== internalTopic || config["zookeeper.connect"] === null) return;
    if (!isLeader) {
      if (led.delete(partition)) coordinator.unload(partition);
      return;
    }
    if (led.has(partition)) return;
    led.add(partition);
    load(partition);
  });
  cleanups.push(`${internalTopic} leadership`, () => {
    unwatch();
    led.clear(); // a pending retry finds its partition gone and stops
  });
}
