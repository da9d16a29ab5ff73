/**
 * `__consumer_offsets` in a cluster: as in Kafka, a group's coordinator is the leader of the
 * group's partition of that topic (MetadataCache.groupCoordinator), so groups move only as the
 * controller moves leadership: when the leader dies, or later by a preferred leader election
 * (`auto.leader.rebalance.enable`, kafka-leader-election.sh). Quill keeps committed offsets and
 * membership records in ZooKeeper, so the topic's logs stay empty: it holds the leadership only.
 * Like Kafka, the first FindCoordinator for a group creates the topic.
 */

import { GROUP_METADATA_TOPIC } from "../common/internal-topics.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import type { AdminManager } from "../server/admin-manager.ts";
import type { BrokerEndpoint, MetadataCache } from "../server/metadata-cache.ts";
import { createInternalTopic } from "./internal-topics.ts";

/** Creations in flight, one per broker (AdminManager), so concurrent requests share it. */
const creating = new WeakMap<AdminManager, Promise<void>>();

/**
 * The group's coordinator, creating `__consumer_offsets` first if the cluster has none, and
 * waiting up to `waitMs` for this broker to learn a live leader of the group's partition (a
 * new topic's leaders arrive with the controller's LeaderAndIsr a moment later); undefined if
 * none is known by then, or at once while too few brokers live to create the topic.
 */
export async function findGroupCoordinator(
  groupId: string,
  cache: MetadataCache,
  admin: AdminManager,
  waitMs: number,
): Promise<BrokerEndpoint | undefined> {
  const known = cache.groupCoordinator(groupId);
  if (known !== undefined) return known;
  if (cache.topic(GROUP_METADATA_TOPIC) === undefined) {
    let pending = creating.get(admin);
    if (pending === undefined) {
      pending = createOffsetsTopic(cache, admin).finally(() => creating.delete(admin));
      creating.set(admin, pending);
    }
    // Too few live brokers for its replication factor: nothing to wait for (Kafka answers
    // COORDINATOR_NOT_AVAILABLE at once, and clients retry).
    const refused = await pending.then(
      () => false,
      (error) => error instanceof KafkaError && error.code === ErrorCode.COORDINATOR_NOT_AVAILABLE,
    );
    if (refused) return undefined;
  }
  const now = cache.groupCoordinator(groupId);
  if (now !== undefined) return now;
  return await new Promise((resolve) => {
    const done = (answer: BrokerEndpoint | undefined) => {
      clearTimeout(timer);
      unsubscribe();
      resolve(answer);
    };
    const timer = setTimeout(() => done(cache.groupCoordinator(groupId)), waitMs);
    const unsubscribe = cache.onReload(() => {
      const coordinator = cache.groupCoordinator(groupId);
      if (coordinator !== undefined) done(coordinator);
    });
  });
}

/**
 * Kafka's settings for the topic: compacted, `offsets.topic.num.partitions` partitions,
 * `offsets.topic.replication.factor` replicas (refused while fewer brokers live).
 */
async function createOffsetsTopic(cache: MetadataCache, admin: AdminManager): Promise<void> {
  const config = cache.brokerConfig;
  await createInternalTopic(admin, cache, {
    name: GROUP_METADATA_TOPIC,
    numPartitions: config["offsets.topic.num.partitions"],
    replicationFactor: config["offsets.topic.replication.factor"],
    replicationFactorKey: "offsets.topic.replication.factor",
  });
}
