/**
 * The bodies of the controller's requests to brokers, built from what the controller read from
 * ZooKeeper, and the versions it sends them at (Kafka 3.9's for a ZooKeeper-mode cluster).
 */

import { topicPartitionKey } from "../common/topic-partition.ts";
import { SECURITY_PROTOCOL_IDS } from "../config/listeners.ts";
import type { BrokerRegistrationInfo, PartitionStateZnode } from "../metadata/kafka-znodes.ts";
import { ErrorCode } from "../protocol/errors.ts";
import type {
  Init,
  LeaderAndIsrRequest,
  LeaderAndIsrResponse,
  StopReplicaRequest,
  UpdateMetadataRequest,
} from "../protocol/generated/index.ts";

export const LEADER_AND_ISR_VERSION = 7;
export const UPDATE_METADATA_VERSION = 8;
export const STOP_REPLICA_VERSION = 4;
export const CONTROLLED_SHUTDOWN_VERSION = 3;
/**
 * LeaderAndIsr's Type (v5+): INCREMENTAL's place is taken by 0 (unspecified), as Kafka's
 * ZooKeeper controller sends; FULL names every replica the recipient hosts (the state a broker
 * gets when it (re)joins), so the broker may delete any other log it holds.
 */
export const LeaderAndIsrType = { UNSPECIFIED: 0, FULL: 2 } as const;
/** v1 names topics (v2+ uses ids), which is what callers of alterPartition have. */
export const ALTER_PARTITION_VERSION = 1;

export interface StatedPartition {
  readonly topic: string;
  readonly topicIdHex: string | null;
  readonly partition: number;
  readonly replicas: readonly number[];
  readonly addingReplicas: readonly number[];
  readonly removingReplicas: readonly number[];
  readonly state: PartitionStateZnode;
  /** The state znode's version. */
  readonly version: number;
}

export interface ControllerIdentity {
  readonly controllerId: number;
  readonly controllerEpoch: number;
}

const ZERO_ID = new Uint8Array(16);

function topicIdBytes(topicIdHex: string | null): Uint8Array {
  return topicIdHex === null ? ZERO_ID : new Uint8Array(Buffer.from(topicIdHex, "hex"));
}

function byTopic(partitions: readonly StatedPartition[]): Map<string, StatedPartition[]> {
  const grouped = new Map<string, StatedPartition[]>();
  for (const p of partitions) {
    const list = grouped.get(p.topic) ?? [];
    list.push(p);
    grouped.set(p.topic, list);
  }
  return grouped;
}

export function leaderAndIsrRequest(
  controller: ControllerIdentity,
  partitions: readonly StatedPartition[],
  liveBrokers: ReadonlyMap<number, BrokerRegistrationInfo>,
  isNew: boolean | ((p: StatedPartition) => boolean),
  type: number = LeaderAndIsrType.UNSPECIFIED,
): Init<LeaderAndIsrRequest> {
  const leaders = new Set(partitions.map((p) => p.state.leader));
  return {
    controllerId: controller.controllerId,
    controllerEpoch: controller.controllerEpoch,
    brokerEpoch: -1n,
    type,
    topicStates: [...byTopic(partitions)].map(([topicName, list]) => ({
      topicName,
      topicId: topicIdBytes(list[0]!.topicIdHex),
      // Partition states name their topic only in the versions without topic groups.
      partitionStates: list.map((p) => ({
        partitionIndex: p.partition,
        controllerEpoch: p.state.controllerEpoch,
        leader: p.state.leader,
        leaderEpoch: p.state.leaderEpoch,
        isr: [...p.state.isr],
        partitionEpoch: p.version,
        replicas: [...p.replicas],
        addingReplicas: [...p.addingReplicas],
        removingReplicas: [...p.removingReplicas],
        isNew: typeof isNew === "boolean" ? isNew : isNew(p),
        leaderRecoveryState: 0,
      })),
    })),
    liveLeaders: [...liveBrokers.values()]
      .filter((b) => leaders.has(b.brokerId))
      .map((b) => ({ brokerId: b.brokerId, hostName: b.host, port: b.port })),
  };
}

/**
 * UpdateMetadata naming `partitions`; a replica is offline when its broker is not live or, as
 * Kafka's controller says of replicasOnOfflineDirs, `offlineDirReplicas` (by partition key) lists
 * it in a failed log dir of its broker.
 */
export function updateMetadataRequest(
  controller: ControllerIdentity,
  partitions: readonly StatedPartition[],
  liveBrokers: ReadonlyMap<number, BrokerRegistrationInfo>,
  offlineDirReplicas: ReadonlyMap<string, ReadonlySet<number>> = new Map(),
): Init<UpdateMetadataRequest> {
  return {
    controllerId: controller.controllerId,
    controllerEpoch: controller.controllerEpoch,
    brokerEpoch: -1n,
    topicStates: [...byTopic(partitions)].map(([topicName, list]) => ({
      topicName,
      topicId: topicIdBytes(list[0]!.topicIdHex),
      // Partition states name their topic only in the versions without topic groups.
      partitionStates: list.map((p) => ({
        partitionIndex: p.partition,
        controllerEpoch: p.state.controllerEpoch,
        leader: p.state.leader,
        leaderEpoch: p.state.leaderEpoch,
        isr: [...p.state.isr],
        zkVersion: p.version,
        replicas: [...p.replicas],
        offlineReplicas: p.replicas.filter(
          (r) =>
            !liveBrokers.has(r) ||
            offlineDirReplicas.get(topicPartitionKey(p.topic, p.partition))?.has(r) === true,
        ),
      })),
    })),
    liveBrokers: [...liveBrokers.values()].map((b) => ({
      id: b.brokerId,
      endpoints: (
        b.endpoints ?? [{ ...b, listenerName: "PLAINTEXT", securityProtocol: "PLAINTEXT" as const }]
      ).map((e) => ({
        port: e.port,
        host: e.host,
        listener: e.listenerName,
        securityProtocol: SECURITY_PROTOCOL_IDS[e.securityProtocol],
      })),
      rack: b.rack,
    })),
  };
}

export function stopReplicaRequest(
  controller: ControllerIdentity,
  partitions: readonly { topic: string; partition: number; leaderEpoch?: number }[],
  deletePartitions: boolean,
): Init<StopReplicaRequest> {
  const grouped = new Map<string, { partitionIndex: number; leaderEpoch: number }[]>();
  for (const p of partitions) {
    // -2: Kafka's EpochDuringDelete, for a deleted topic, accepted whatever epoch the broker
    // holds; a replica removed by a reassignment gets the partition's leader epoch instead.
    const leaderEpoch = p.leaderEpoch ?? (deletePartitions ? -2 : -1);
    const list = grouped.get(p.topic) ?? [];
    list.push({ partitionIndex: p.partition, leaderEpoch });
    grouped.set(p.topic, list);
  }
  return {
    controllerId: controller.controllerId,
    controllerEpoch: controller.controllerEpoch,
    brokerEpoch: -1n,
    topicStates: [...grouped].map(([topicName, states]) => ({
      topicName,
      partitionStates: states.map((s) => ({ ...s, deletePartition: deletePartitions })),
    })),
  };
}

/**
 * The partitions a LeaderAndIsr (v5+, topics by id) was answered KAFKA_STORAGE_ERROR for: the
 * recipient's replica is in a failed log dir (KIP-112). `sent` is what the request named.
 */
export function storageErrorPartitions(
  sent: readonly StatedPartition[],
  response: LeaderAndIsrResponse,
): StatedPartition[] {
  const idOf = (p: StatedPartition) => p.topicIdHex ?? "0".repeat(32);
  const byId = new Map(sent.map((p) => [`${idOf(p)}:${p.partition}`, p]));
  const failed: StatedPartition[] = [];
  for (const topic of response.topics) {
    const hex = Buffer.from(topic.topicId).toString("hex");
    for (const e of topic.partitionErrors) {
      if (e.errorCode !== ErrorCode.KAFKA_STORAGE_ERROR) continue;
      const p = byId.get(`${hex}:${e.partitionIndex}`);
      if (p !== undefined) failed.push(p);
    }
  }
  return failed;
}
