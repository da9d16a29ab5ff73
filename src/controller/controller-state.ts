/**
 * The cluster as ZooKeeper holds it: live brokers (`/brokers/ids`), topics with their replica
 * assignment (`/brokers/topics/<topic>`) and each partition's state znode with its version.
 * A new controller builds everything it knows from this alone, and a starting broker reads it
 * to answer Metadata correctly before the controller first speaks to it.
 */
import { type TopicPartitionKey, topicPartitionKey } from "../common/topic-partition.ts";
import {
  BROKER_IDS_PATH,
  type BrokerRegistrationInfo,
  brokerIdPath,
  decodeBrokerRegistration,
  decodePartitionState,
  decodeTopicAssignment,
  isLegalTopicName,
  MalformedZnodeError,
  type PartitionStateZnode,
  partitionStatePath,
  TOPICS_PATH,
  type TopicAssignmentZnode,
  topicIdFromBase64,
  topicPath,
} from "../metadata/kafka-znodes.ts";
import type { Logger } from "../util/logger.ts";
import { mapLimit } from "../util/map-limit.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import { NoNodeError } from "../zookeeper/zookeeper-errors.ts";

/** One partition as the controller tracks it. */
export interface ControllerPartition {
  readonly topic: string;
  /** Hex, as TopicRecord keeps it; null for a topic whose znode has no id yet. */
  readonly topicIdHex: string | null;
  readonly partition: number;
  /** Every replica, during a reassignment the target ones first, then the original ones. */
  readonly replicas: readonly number[];
  /** A reassignment in progress: replicas being added, and being removed (else both empty). */
  readonly addingReplicas: readonly number[];
  readonly removingReplicas: readonly number[];
  /** null: the state znode does not exist (yet). */
  readonly state: PartitionStateZnode | null;
  /** The state znode's version, the partition epoch; -1 while it does not exist. */
  readonly version: number;
}

export interface ClusterSnapshot {
  readonly brokers: ReadonlyMap<number, LiveBroker>;
  /** By topicPartitionKey(topic, partition). */
  readonly partitions: ReadonlyMap<TopicPartitionKey, ControllerPartition>;
}

/** Watches to set while reading (a watcher already registered is passed as undefined). */
export interface SnapshotWatches {
  readonly brokers?: () => void;
  readonly topics?: () => void;
  /** A watch on one topic's znode (its assignment grows with CreatePartitions). */
  readonly topic?: (topic: string) => (() => void) | undefined;
}

/** Reads run this many at a time. */
const READ_CONCURRENCY = 128;

/**
 * A registered broker with its epoch (KIP-380): the czxid of its `/brokers/ids/<id>` znode, new
 * with every registration, so requests meant for an earlier incarnation can be told apart.
 */
export interface LiveBroker extends BrokerRegistrationInfo {
  readonly epoch: bigint;
}

/** Reads brokers, topics and partition states; znodes deleted meanwhile are left out. */
export async function readClusterSnapshot(
  zk: ZooKeeperClient,
  log: Logger,
  watches: SnapshotWatches = {},
  interBrokerListener = "PLAINTEXT",
): Promise<ClusterSnapshot> {
  const [brokers, partitions] = await Promise.all([
    readBrokers(zk, log, watches.brokers, interBrokerListener),
    readPartitions(zk, log, watches),
  ]);
  return { brokers, partitions };
}

export async function readBrokers(
  zk: ZooKeeperClient,
  log: Logger,
  watch?: () => void,
  interBrokerListener = "PLAINTEXT",
): Promise<Map<number, LiveBroker>> {
  const children = await zk.getChildren(BROKER_IDS_PATH, { watch: watch && (() => watch()) });
  const ids = children.filter((c) => /^\d+$/.test(c)).map(Number);
  const infos = await mapLimit(ids, READ_CONCURRENCY, async (id) => {
    try {
      const { data, stat } = await zk.getData(brokerIdPath(id));
      return { ...decodeBrokerRegistration(id, data, interBrokerListener), epoch: stat.czxid };
    } catch (error) {
      if (error instanceof NoNodeError) return null;
      if (!(error instanceof MalformedZnodeError)) throw error;
      log.warn(`ignoring broker ${id}: ${error.message}`);
      return null;
    }
  });
  return new Map(infos.flatMap((info) => (info === null ? [] : [[info.brokerId, info]])));
}

async function readPartitions(
  zk: ZooKeeperClient,
  log: Logger,
  watches: SnapshotWatches,
): Promise<Map<TopicPartitionKey, ControllerPartition>> {
  const watch = watches.topics;
  const children = await zk.getChildren(TOPICS_PATH, { watch: watch && (() => watch()) });
  const topics = await mapLimit(children.filter(isLegalTopicName), READ_CONCURRENCY, (topic) => {
    return readTopic(zk, log, topic, watches.topic?.(topic));
  });
  const result = new Map<TopicPartitionKey, ControllerPartition>();
  for (const p of topics.flat()) result.set(topicPartitionKey(p.topic, p.partition), p);
  return result;
}

/** One topic's partitions with their states; none when the topic vanished or is malformed. */
export async function readTopic(
  zk: ZooKeeperClient,
  log: Logger,
  topic: string,
  watch?: () => void,
): Promise<ControllerPartition[]> {
  let decoded: TopicAssignmentZnode;
  let topicIdHex: string | null;
  try {
    const read = await zk.getData(topicPath(topic), { watch: watch && (() => watch()) });
    decoded = decodeTopicAssignment(topic, read.data);
    topicIdHex = decoded.topicIdBase64 === null ? null : topicIdFromBase64(decoded.topicIdBase64);
  } catch (error) {
    if (error instanceof NoNodeError) return [];
    if (!(error instanceof MalformedZnodeError)) throw error;
    log.warn(`controller ignores topic ${topic}: ${error.message}`);
    return [];
  }
  return await Promise.all(
    decoded.assignment.map(async (replicas, partition) => {
      const { state, version } = await readPartitionState(zk, log, topic, partition);
      const addingReplicas = decoded.addingReplicas?.get(partition) ?? [];
      const removingReplicas = decoded.removingReplicas?.get(partition) ?? [];
      return {
        topic,
        topicIdHex,
        partition,
        replicas,
        addingReplicas,
        removingReplicas,
        state,
        version,
      };
    }),
  );
}

export async function readPartitionState(
  zk: ZooKeeperClient,
  log: Logger,
  topic: string,
  partition: number,
): Promise<{ state: PartitionStateZnode | null; version: number }> {
  const path = partitionStatePath(topic, partition);
  let read: Awaited<ReturnType<ZooKeeperClient["getData"]>>;
  try {
    read = await zk.getData(path);
  } catch (error) {
    if (error instanceof NoNodeError) return { state: null, version: -1 };
    throw error;
  }
  try {
    return { state: decodePartitionState(path, read.data), version: read.stat.version };
  } catch (error) {
    if (!(error instanceof MalformedZnodeError)) throw error;
    log.warn(`${error.message}; the controller will write it anew`);
    return { state: null, version: read.stat.version };
  }
}
