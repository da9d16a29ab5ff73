/**
 * The controller's writes of a partition's assignment into its topic znode
 * (`/brokers/topics/<topic>`: partitions, adding_replicas, removing_replicas), and of the legacy
 * `/admin/reassign_partitions` request, each conditional on the controller epoch's znode version
 * so that a deposed controller's write fails.
 */
import {
  CONTROLLER_EPOCH_PATH,
  decodeReassignPartitions,
  decodeTopicAssignment,
  encodeReassignPartitions,
  encodeTopicAssignment,
  type LegacyReassignment,
  REASSIGN_PARTITIONS_PATH,
  topicPath,
} from "../metadata/kafka-znodes.ts";
import type { ZooKeeperOp } from "../zookeeper/znode.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import { BadVersionError, NoNodeError } from "../zookeeper/zookeeper-errors.ts";
import type { ReplicaAssignment } from "./partition-reassignment.ts";

/** Other partitions' writes race with one write this many times before it gives up. */
const WRITE_ATTEMPTS_MAX = 5;

function epochCheck(epochZkVersion: number): ZooKeeperOp {
  return { type: "check", path: CONTROLLER_EPOCH_PATH, version: epochZkVersion };
}

/**
 * Replaces one partition's assignment in its topic znode, keeping the others'. False when the
 * topic is gone. Throws BadVersionError on `/controller_epoch` when this controller is deposed.
 */
export async function writePartitionAssignment(
  zk: ZooKeeperClient,
  epochZkVersion: number,
  topic: string,
  partition: number,
  next: ReplicaAssignment,
): Promise<boolean> {
  const path = topicPath(topic);
  for (let attempt = 1; ; attempt++) {
    let read: Awaited<ReturnType<ZooKeeperClient["getData"]>>;
    try {
      read = await zk.getData(path);
    } catch (error) {
      if (error instanceof NoNodeError) return false;
      throw error;
    }
    const znode = decodeTopicAssignment(topic, read.data);
    if (partition >= znode.assignment.length) return false;
    const assignment = znode.assignment.map((r, p) => (p === partition ? next.replicas : r));
    const adding = new Map(znode.addingReplicas ?? []);
    const removing = new Map(znode.removingReplicas ?? []);
    adding.set(partition, next.addingReplicas);
    removing.set(partition, next.removingReplicas);
    const data = encodeTopicAssignment({
      topicIdBase64: znode.topicIdBase64,
      assignment,
      addingReplicas: adding,
      removingReplicas: removing,
    });
    try {
      const op: ZooKeeperOp = { type: "setData", path, data, version: read.stat.version };
      await zk.multi([epochCheck(epochZkVersion), op]);
      return true;
    } catch (error) {
      const raced = error instanceof BadVersionError && error.path === path;
      if (!raced || attempt >= WRITE_ATTEMPTS_MAX) throw error;
    }
  }
}

/** The legacy request's entries; none when the znode is absent. */
export async function readLegacyReassignments(
  zk: ZooKeeperClient,
  watch: (() => void) | undefined,
): Promise<{ entries: LegacyReassignment[]; version: number }> {
  // An exists watch fires on creation, change and deletion alike.
  const stat = await zk.exists(REASSIGN_PARTITIONS_PATH, { watch: watch && (() => watch()) });
  if (stat === null) return { entries: [], version: -1 };
  try {
    const read = await zk.getData(REASSIGN_PARTITIONS_PATH);
    return { entries: decodeReassignPartitions(read.data), version: read.stat.version };
  } catch (error) {
    if (error instanceof NoNodeError) return { entries: [], version: -1 };
    throw error;
  }
}

/**
 * Keeps only the entries still in progress in the legacy znode, or deletes it when none is
 * left, as Kafka's controller does once each partition's move completes.
 */
export async function rewriteLegacyReassignments(
  zk: ZooKeeperClient,
  epochZkVersion: number,
  remaining: readonly LegacyReassignment[],
  version: number,
): Promise<void> {
  const op: ZooKeeperOp =
    remaining.length === 0
      ? { type: "delete", path: REASSIGN_PARTITIONS_PATH, version }
      : {
          type: "setData",
          path: REASSIGN_PARTITIONS_PATH,
          data: encodeReassignPartitions(remaining),
          version,
        };
  await zk.multi([epochCheck(epochZkVersion), op]);
}
