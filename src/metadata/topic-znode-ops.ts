/**
 * The ZooKeeper operations that create, change and delete a topic in Kafka's layout, built as
 * multi operations so each change is all-or-nothing and conditional on the znode versions the
 * writer last read: two brokers changing one topic at once cannot both win.
 */
import { assert } from "../util/assert.ts";
import type { ZooKeeperOp } from "../zookeeper/znode.ts";
import { estimateMultiBytes, MAX_REQUEST_BYTES } from "../zookeeper/zookeeper-client.ts";
import {
  deleteTopicPath,
  encodePartitionState,
  encodeTopicAssignment,
  encodeTopicConfig,
  partitionPath,
  partitionStatePath,
  partitionsPath,
  topicConfigPath,
  topicIdToBase64,
  topicPath,
} from "./kafka-znodes.ts";
import type { TopicRecord } from "./metadata-store.ts";

/**
 * The controller epoch written into partition states. Quill has no controller yet (issue 6), so
 * states are written as the first controller of a fresh Kafka cluster would write them.
 */
export const STANDIN_CONTROLLER_EPOCH = 1;
/** Leaves room under ZooKeeper's request limit for the size estimate's error. */
const CHUNK_BYTES_MAX = Math.floor(MAX_REQUEST_BYTES * 0.9);

/** The znode versions a writer read, which its conditional writes expect. */
export interface TopicZnodeVersions {
  readonly topicVersion: number;
  /** null: `/config/topics/<topic>` does not exist. */
  readonly configVersion: number | null;
}

/** Partition znodes and their initial state: led by the first replica, every replica in sync. */
function partitionOps(topic: string, assignment: TopicRecord["assignment"], from: number) {
  const ops: ZooKeeperOp[] = [];
  for (let p = from; p < assignment.length; p++) {
    const replicas = assignment[p]!;
    const state = {
      leader: replicas[0]!,
      leaderEpoch: 0,
      isr: replicas,
      controllerEpoch: STANDIN_CONTROLLER_EPOCH,
    };
    ops.push({ type: "create", path: partitionPath(topic, p) });
    const data = encodePartitionState(state);
    ops.push({ type: "create", path: partitionStatePath(topic, p), data });
  }
  return ops;
}

function configOp(topic: string, configs: TopicRecord["configs"], version: number | null) {
  const path = topicConfigPath(topic);
  const data = encodeTopicConfig(configs);
  const op: ZooKeeperOp =
    version === null ? { type: "create", path, data } : { type: "setData", path, data, version };
  return op;
}

/**
 * Creates a topic as Kafka's AdminZkClient and controller together would: assignment, config,
 * partition states, in one multi when it fits, so whoever sees the topic also finds its config.
 * The topic znode comes first so that, of two brokers creating one topic, the loser's multi
 * fails on it (NodeExists there means TOPIC_ALREADY_EXISTS). `configVersion` is that of a
 * config znode left by an earlier topic of this name, or null.
 */
export function createTopicOps(record: TopicRecord, configVersion: number | null): ZooKeeperOp[] {
  const assignment = encodeTopicAssignment({
    topicIdBase64: topicIdToBase64(record.topicIdHex),
    assignment: record.assignment,
  });
  return [
    { type: "create", path: topicPath(record.name), data: assignment },
    configOp(record.name, record.configs, configVersion),
    { type: "create", path: partitionsPath(record.name) },
    ...partitionOps(record.name, record.assignment, 0),
  ];
}

/**
 * Changes a topic's assignment (only by adding partitions, as CreatePartitions does) and its
 * config, each conditional on the version last read. Returns no operations when nothing changed.
 */
export function updateTopicOps(
  previous: TopicRecord,
  next: TopicRecord,
  versions: TopicZnodeVersions,
): ZooKeeperOp[] {
  assert(previous.name === next.name, `update renames ${previous.name} to ${next.name}`);
  assert(previous.topicIdHex === next.topicIdHex, `update changes the id of topic ${next.name}`);
  const grown = next.assignment.length - previous.assignment.length;
  assert(grown >= 0, `update of ${next.name} removes partitions`);
  const ops: ZooKeeperOp[] = [];
  if (JSON.stringify(next.assignment) !== JSON.stringify(previous.assignment)) {
    const data = encodeTopicAssignment({
      topicIdBase64: topicIdToBase64(next.topicIdHex),
      assignment: next.assignment,
    });
    ops.push({ type: "setData", path: topicPath(next.name), data, version: versions.topicVersion });
    ops.push(...partitionOps(next.name, next.assignment, previous.assignment.length));
  }
  if (JSON.stringify(next.configs) !== JSON.stringify(previous.configs)) {
    ops.push(configOp(next.name, next.configs, versions.configVersion));
  }
  return ops;
}

/**
 * Deletes a topic's subtree (`subtree` lists it parents first, as listSubtree returns it),
 * its config and its deletion marker. Children go before parents and the marker goes last, so
 * a deletion split into several multis and cut short by a crash leaves the marker behind for
 * the next broker to finish.
 */
export function deleteTopicOps(
  topic: string,
  subtree: readonly string[],
  configExists: boolean,
  markerExists: boolean,
): ZooKeeperOp[] {
  assert(
    subtree.length === 0 || subtree[0] === topicPath(topic),
    `subtree of ${topic} starts at ${subtree[0]}`,
  );
  const ops: ZooKeeperOp[] = [...subtree].reverse().map((path) => ({ type: "delete", path }));
  if (configExists) ops.push({ type: "delete", path: topicConfigPath(topic) });
  if (markerExists) ops.push({ type: "delete", path: deleteTopicPath(topic) });
  return ops;
}

/**
 * Splits operations into multis under ZooKeeper's request size limit, keeping their order:
 * run one after another, parents are still created before children and deleted after them.
 */
export function chunkOps(ops: readonly ZooKeeperOp[]): ZooKeeperOp[][] {
  const chunks: ZooKeeperOp[][] = [];
  let current: ZooKeeperOp[] = [];
  let currentBytes = 0;
  for (const op of ops) {
    const opBytes = estimateMultiBytes([op]);
    assert(opBytes <= CHUNK_BYTES_MAX, `one ZooKeeper operation on ${op.path} is ${opBytes} bytes`);
    if (currentBytes + opBytes > CHUNK_BYTES_MAX) {
      chunks.push(current);
      current = [];
      currentBytes = 0;
    }
    current.push(op);
    currentBytes += opBytes;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
