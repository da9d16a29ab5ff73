/**
 * The cluster controller of ZooKeeper mode (Kafka's KafkaController), one per broker, of which
 * one at a time is active:
 *
 * - Election: the broker that creates the ephemeral `/controller` wins, in the same multi that
 *   increments `/controller_epoch` conditionally on its version. Every broker watches
 *   `/controller`; when it disappears (the controller's session ended) all try again.
 * - The active controller builds its whole state from ZooKeeper (brokers, topics, partition
 *   states), watches `/brokers/ids`, `/brokers/topics` and each topic, and on every change
 *   reads the cluster again and reconciles: partitions whose leader died get a new one from
 *   the ISR, dead followers leave ISRs, new partitions get a state. Each state write is a multi
 *   that checks the controller epoch's znode version (a deposed controller's writes fail) and
 *   the state's version (no other writer changed it since it was read).
 * - Brokers hear the outcome: LeaderAndIsr to the replicas of changed partitions, UpdateMetadata
 *   to every live broker, the full state to brokers that (re)joined, StopReplica to the
 *   replicas of deleted topics.
 * - Leaders' ISR changes (AlterPartition) and brokers' controlled shutdowns are decided here.
 *
 * Everything runs one task at a time in arrival order. Reading the whole cluster on each change
 * costs one read per partition; that bounds the clusters this suits to some tens of thousands
 * of partitions, which PARTITION_STATES_MAX in MetadataCache bounds anyway.
 */
import { topicPartitionKey } from "../common/topic-partition.ts";
import {
  brokerIdPath,
  CONTROLLER_EPOCH_PATH,
  CONTROLLER_PATH,
  DELETE_TOPICS_PATH,
  decodeBrokerRegistration,
  decodeController,
  decodeControllerEpoch,
  decodeLogDirEvent,
  decodeTopicConfig,
  deleteTopicPath,
  encodeController,
  encodeControllerEpoch,
  encodePartitionState,
  isLegalTopicName,
  LOG_DIR_EVENT_NOTIFICATION_PATH,
  MalformedZnodeError,
  type PartitionStateZnode,
  partitionPath,
  partitionStatePath,
  topicConfigPath,
  topicPath,
} from "../metadata/kafka-znodes.ts";
import { deleteTopicZnodes } from "../metadata/zookeeper-metadata-store.ts";
import { type InterBrokerSecurity, PLAINTEXT_SECURITY } from "../network/inter-broker-client.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import type { Logger } from "../util/logger.ts";
import { mapLimit } from "../util/map-limit.ts";
import type { ZooKeeperOp } from "../zookeeper/znode.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import {
  BadVersionError,
  NodeExistsError,
  NoNodeError,
  ZooKeeperError,
} from "../zookeeper/zookeeper-errors.ts";
import {
  readLegacyReassignments,
  rewriteLegacyReassignments,
  writePartitionAssignment,
} from "./assignment-writes.ts";
import { BrokerLiveness } from "./broker-liveness.ts";
import { ControllerChannelManager } from "./controller-channel-manager.ts";
import {
  type ElectionOutcome,
  electForShutdown,
  electLeader,
  electPreferred,
  needsUncleanElection,
  partitionsToRebalance,
  preferredElection,
  uncleanElection,
} from "./controller-leader-election.ts";
import {
  LEADER_AND_ISR_VERSION,
  LeaderAndIsrType,
  leaderAndIsrRequest,
  STOP_REPLICA_VERSION,
  type StatedPartition,
  stopReplicaRequest,
  storageErrorPartitions,
  UPDATE_METADATA_VERSION,
  updateMetadataRequest,
} from "./controller-requests.ts";
import {
  type ClusterSnapshot,
  type ControllerPartition,
  type LiveBroker,
  readClusterSnapshot,
  readPartitionState,
} from "./controller-state.ts";
import {
  isReassigning,
  isReassignmentComplete,
  planReassignment,
  type ReplicaAssignment,
  stateForAssignment,
  targetReplicas,
} from "./partition-reassignment.ts";

export interface ControllerOptions {
  readonly brokerId: number;
  /** Deadline of one request to a broker. */
  readonly requestTimeoutMs: number;
  /** The listener brokers reach each other on (PLAINTEXT by default) and how it is secured. */
  readonly interBrokerListenerName?: string;
  readonly interBrokerSecurity?: InterBrokerSecurity;
  readonly log: Logger;
  /** Called whenever another controller (or this broker) is seen to be the active one. */
  readonly onControllerChange: (controllerId: number, epoch: number) => void;
  /**
   * The broker's unclean.leader.election.enable (dynamic configs included), which a topic's own
   * key overrides; read when a partition's whole ISR is dead.
   */
  readonly uncleanLeaderElectionEnable: () => boolean;
  /** delete.topic.enable: false removes deletion markers and keeps the topics, as Kafka. */
  readonly deleteTopicEnable: boolean;
  /** auto.leader.rebalance.enable and its check interval and threshold; null: disabled. */
  readonly leaderRebalance: {
    readonly intervalMs: number;
    readonly imbalancePercentage: number;
  } | null;
}

/** What AlterPartition answers for one partition. */
export interface AlterPartitionOutcome {
  readonly errorCode: number;
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
  readonly isr: readonly number[];
}

/** One partition of an AlterPartitionReassignments request; replicas null cancels. */
export interface ReassignmentRequest {
  readonly topic: string;
  readonly partition: number;
  readonly replicas: readonly number[] | null;
}

export interface ReassignmentOutcome {
  readonly errorCode: number;
  readonly message: string | null;
}

/** ElectLeaders' answer for one partition. */
export interface ElectionResult {
  readonly topic: string;
  readonly partition: number;
  readonly errorCode: number;
}

/** ElectLeaders' election types. */
export const ElectionType = { PREFERRED: 0, UNCLEAN: 1 } as const;

/** A reassignment in progress, as ListPartitionReassignments reports it. */
export interface OngoingReassignment extends ReplicaAssignment {
  readonly topic: string;
  readonly partition: number;
}

export interface ShutdownOutcome {
  readonly errorCode: number;
  /** Partitions the broker still leads (no other live ISR member could take them). */
  readonly remaining: readonly { topic: string; partition: number }[];
}

interface ActiveState {
  readonly epoch: number;
  /** `/controller_epoch`'s version after this controller's increment. */
  readonly epochZkVersion: number;
  readonly channels: ControllerChannelManager;
  /** Probes of the other brokers' ports: a refused one is treated as dead before its session. */
  readonly liveness: BrokerLiveness;
  /** What brokers were last told about each partition. */
  readonly partitions: Map<string, StatedPartition>;
  brokers: ReadonlyMap<number, LiveBroker>;
  /**
   * Brokers whose ControlledShutdown was accepted (Kafka's shuttingDownBrokerIds): not eligible
   * for any ISR until they leave the cluster or register again.
   */
  readonly shuttingDown: Set<number>;
  /** Topics being deleted: StopReplica with deletion sent, answers awaited. */
  readonly deleting: Set<string>;
  /**
   * Replicas in a failed log dir of their broker (Kafka's replicasOnOfflineDirs), by partition
   * key: such a replica counts as dead for its partition until its broker registers again.
   */
  readonly offlineReplicas: Map<string, Set<number>>;
  /** Partitions whose offline replicas changed since brokers were last told (UpdateMetadata). */
  readonly offlineChanged: Set<string>;
  readonly rebalanceTimer: ReturnType<typeof setInterval> | null;
}

/** Pause before a failed election or reconciliation is tried again. */
const RETRY_DELAY_MS = 500;
/** How long a stopping controller lets its running task finish (see close). */
export const CLOSE_WAIT_MS = 5_000;
/** State writes in flight at once while reconciling. */
const WRITE_CONCURRENCY = 64;
/** How often the controller probes each broker's port, and refusals in a row that count. */
export const LIVENESS_PROBE_INTERVAL_MS = 100;
export const LIVENESS_REFUSALS_TO_SUSPECT = 2;

export class KafkaController {
  private active: ActiveState | null = null;
  private current = { id: -1, epoch: -1 };
  private queue: Promise<void> = Promise.resolve();
  private readonly queued = new Set<string>();
  private readonly armed = new Set<string>();
  private closed = false;
  /** Live brokers at the last reconciliation, to notice a broker leaving. */
  private lastBrokerCount = 0;
  private readonly unsubscribe: () => void;
  /**
   * While another broker is the controller: a probe of its port, so that a controller killed
   * with kill -9 is replaced before its session ends (see watchController).
   */
  private controllerProbe: { id: number; owner: bigint; liveness: BrokerLiveness } | null = null;

  private constructor(
    private readonly zk: ZooKeeperClient,
    private readonly options: ControllerOptions,
  ) {
    this.unsubscribe = zk.onSessionEvent((event) => {
      // An expired session lost `/controller` already: stop acting at once, not after the queue.
      if (event === "expired") this.resign("session expired");
      if (event !== "session-recreated") return;
      this.armed.clear();
      this.schedule("elect", () => this.elect());
    });
  }

  /**
   * Takes part in elections. Resolves once the first attempt is over, so that a starting broker
   * knows the controller (this broker or another) before it reports itself started; when
   * ZooKeeper fails that attempt, it resolves anyway and the election is retried.
   */
  static async start(zk: ZooKeeperClient, options: ControllerOptions): Promise<KafkaController> {
    const controller = new KafkaController(zk, options);
    controller.schedule("elect", () => controller.elect());
    await controller.queue;
    return controller;
  }

  get isActive(): boolean {
    return this.active !== null;
  }

  /** Stops; an active controller resigns (the session's end removes `/controller`). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    // Brokers stopping at the same time would have their requests retried for as long as they
    // stay down, and a task may wait on a ZooKeeper that is gone: abandon the requests, and
    // give the running task a bounded time before resigning under it.
    this.active?.channels.close();
    this.stopControllerProbe();
    const waited = await Promise.race([
      this.queue.then(() => true),
      Bun.sleep(CLOSE_WAIT_MS).then(() => false),
    ]);
    if (!waited) this.options.log.warn(`controller task still running after ${CLOSE_WAIT_MS} ms`);
    this.resign("broker stopping");
  }

  // ---- requests from brokers -----------------------------------------------------------------

  /** Moves `brokerId`'s leaderships to other ISR members and takes it out of ISRs. */
  controlledShutdown(brokerId: number, brokerEpoch = -1n): Promise<ShutdownOutcome> {
    return this.exclusive(async () => {
      const active = this.active;
      if (active === null) return { errorCode: ErrorCode.NOT_CONTROLLER, remaining: [] };
      // KIP-380: an earlier incarnation's request must not move the current one's leaders.
      const current = active.brokers.get(brokerId)?.epoch;
      if (brokerEpoch !== -1n && current !== undefined && brokerEpoch < current) {
        this.options.log.info(
          `controller refuses a controlled shutdown of broker ${brokerId} for broker epoch ` +
            `${brokerEpoch} (the current one is ${current})`,
        );
        return { errorCode: ErrorCode.STALE_BROKER_EPOCH, remaining: [] };
      }
      active.shuttingDown.add(brokerId);
      this.options.log.info(
        `controller moves leaderships away from broker ${brokerId} ` +
          "for its controlled shutdown",
      );
      const live = new Set(active.brokers.keys());
      const changed: StatedPartition[] = [];
      const remaining: { topic: string; partition: number }[] = [];
      for (const p of [...active.partitions.values()]) {
        if (!p.replicas.includes(brokerId)) continue;
        const fresh = await this.freshPartition(p);
        if (fresh === null) continue;
        const next = electForShutdown(fresh.state, fresh.replicas, brokerId, live, active.epoch);
        const written = next === null ? fresh : await this.writeState(active, fresh, next);
        if (written === null) continue;
        active.partitions.set(topicPartitionKey(p.topic, p.partition), written);
        if (written !== fresh) changed.push(written);
        if (written.state.leader === brokerId && written.replicas.length > 1) {
          remaining.push({ topic: p.topic, partition: p.partition });
        }
      }
      await this.announce(active, changed, false);
      this.stopFollowing(active, brokerId);
      return { errorCode: ErrorCode.NONE, remaining };
    });
  }

  /**
   * A shutting-down broker stops fetching for the partitions it now only follows (Kafka's
   * OfflineReplica transition, StopReplica without deletion): otherwise it would catch up and
   * its leaders would keep proposing it for the ISR again.
   */
  private stopFollowing(active: ActiveState, brokerId: number): void {
    const followed = [...active.partitions.values()].filter(
      (p) => p.replicas.includes(brokerId) && p.state.leader >= 0 && p.state.leader !== brokerId,
    );
    if (followed.length === 0) return;
    void active.channels.send(
      brokerId,
      ApiKey.StopReplica,
      STOP_REPLICA_VERSION,
      stopReplicaRequest(this.identity(active), followed, false),
    );
  }

  /**
   * Whether an AlterPartition from `brokerId` at `brokerEpoch` comes from an incarnation the
   * controller does not know as live (KIP-380): an unregistered broker, or an earlier or later
   * registration than the one the controller read. Kafka's controller refuses both with
   * STALE_BROKER_EPOCH; -1 (no epoch sent) is let through, as Quill's other epoch checks do.
   */
  isStaleBrokerEpoch(brokerId: number, brokerEpoch: bigint): boolean {
    const active = this.active;
    if (active === null) return false;
    const current = active.brokers.get(brokerId)?.epoch;
    const stale = current === undefined || (brokerEpoch !== -1n && brokerEpoch !== current);
    if (stale) {
      this.options.log.info(
        `controller refuses an AlterPartition from broker ${brokerId} at broker epoch ` +
          `${brokerEpoch} (the registration it knows: ${current ?? "none"})`,
      );
    }
    return stale;
  }

  /** A leader's ISR change, accepted only against the current leader epoch and state version. */
  alterPartition(
    brokerId: number,
    topic: string,
    partition: number,
    leaderEpoch: number,
    partitionEpoch: number,
    newIsr: readonly number[],
  ): Promise<AlterPartitionOutcome> {
    return this.exclusive(async () => {
      const active = this.active;
      const failed = (errorCode: number) => ({
        errorCode,
        leader: -1,
        leaderEpoch: -1,
        partitionEpoch: -1,
        isr: [],
      });
      if (active === null) return failed(ErrorCode.NOT_CONTROLLER);
      const known = active.partitions.get(topicPartitionKey(topic, partition));
      const fresh = known === undefined ? null : await this.freshPartition(known);
      if (fresh === null) return failed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
      const outcome = (p: StatedPartition) => ({
        errorCode: ErrorCode.NONE,
        leader: p.state.leader,
        leaderEpoch: p.state.leaderEpoch,
        partitionEpoch: p.version,
        isr: p.state.isr,
      });
      const { state } = fresh;
      if (state.leader !== brokerId) return failed(ErrorCode.NOT_LEADER_OR_FOLLOWER);
      if (leaderEpoch !== state.leaderEpoch) return failed(ErrorCode.FENCED_LEADER_EPOCH);
      // Already so: the answer to an earlier attempt was lost and the leader sends it again
      // with the partition epoch it had then (Kafka checks this before the epoch, too).
      if (sameMembers(newIsr, state.isr)) return outcome(fresh);
      if (partitionEpoch !== fresh.version) return failed(ErrorCode.INVALID_UPDATE_VERSION);
      if (!newIsr.includes(brokerId)) return failed(ErrorCode.INVALID_REQUEST);
      // KIP-841: a member must be a replica on a live broker that is not shutting down.
      const ineligible = newIsr.filter(
        (r) => !fresh.replicas.includes(r) || !active.brokers.has(r) || active.shuttingDown.has(r),
      );
      if (ineligible.length > 0) {
        this.options.log.info(
          `controller refuses the ISR [${newIsr.join(",")}] of ${topic}-${partition} from ` +
            `broker ${brokerId}: ineligible replicas [${ineligible.join(",")}]`,
        );
        return failed(ErrorCode.INELIGIBLE_REPLICA);
      }
      const next = { ...state, isr: [...newIsr], controllerEpoch: active.epoch };
      const written = await this.writeState(active, fresh, next);
      if (written === null) return failed(ErrorCode.INVALID_UPDATE_VERSION);
      active.partitions.set(topicPartitionKey(topic, partition), written);
      this.options.log.info(
        `controller changed the ISR of ${topic}-${partition} from ` +
          `[${state.isr.join(",")}] to [${newIsr.join(",")}] as its leader ${brokerId} asked`,
      );
      if (isReassignmentComplete(written, written.state.isr)) {
        this.schedule("reassign", () => this.completeReassignments());
      }
      for (const id of active.brokers.keys()) {
        void active.channels.send(
          id,
          ApiKey.UpdateMetadata,
          UPDATE_METADATA_VERSION,
          this.updateMetadata(active, [written]),
        );
      }
      return outcome(written);
    });
  }

  // ---- leader elections ----------------------------------------------------------------------

  /**
   * ElectLeaders: a preferred or unclean election for each partition (every partition when
   * `partitions` is null), with Kafka's per-partition errors. Null when not the controller.
   */
  electLeaders(
    electionType: number,
    partitions: readonly { topic: string; partition: number }[] | null,
  ): Promise<ElectionResult[] | null> {
    return this.exclusive(async () => {
      const active = this.active;
      if (active === null) return null;
      const wanted = partitions ?? [...active.partitions.values()];
      const results: ElectionResult[] = [];
      const changed: StatedPartition[] = [];
      for (const { topic, partition } of wanted) {
        const written = await this.electOne(active, electionType, topic, partition);
        if (typeof written === "number") {
          results.push({ topic, partition, errorCode: written });
          continue;
        }
        changed.push(written);
        results.push({ topic, partition, errorCode: ErrorCode.NONE });
      }
      if (changed.length > 0) {
        this.options.log.info(
          `controller elected ${changed.length} leaders ` +
            `(${electionType === ElectionType.UNCLEAN ? "unclean" : "preferred"} election)`,
        );
      }
      await this.announce(active, changed, false);
      return results;
    });
  }

  /** One partition's election: its new state, or the error code to answer. */
  private async electOne(
    active: ActiveState,
    electionType: number,
    topic: string,
    partition: number,
  ): Promise<StatedPartition | number> {
    const known = active.partitions.get(topicPartitionKey(topic, partition));
    const fresh = known === undefined ? null : await this.freshPartition(known);
    if (fresh === null) return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
    const live = new Set(active.brokers.keys());
    const outcome: ElectionOutcome =
      electionType === ElectionType.UNCLEAN
        ? uncleanElection(fresh.state, fresh.replicas, live, active.epoch)
        : preferredElection(fresh.state, fresh.replicas, live, active.epoch);
    if ("errorCode" in outcome) return outcome.errorCode;
    const written = await this.writeState(active, fresh, outcome);
    if (written === null) {
      return this.active === active ? ErrorCode.UNKNOWN_SERVER_ERROR : ErrorCode.NOT_CONTROLLER;
    }
    active.partitions.set(topicPartitionKey(topic, partition), written);
    return written;
  }

  /** The topic's unclean.leader.election.enable, else the broker's. */
  private async uncleanAllowed(topic: string): Promise<boolean> {
    try {
      const { data } = await this.zk.getData(topicConfigPath(topic));
      const value = decodeTopicConfig(topic, data)["unclean.leader.election.enable"];
      if (value !== undefined) return value.trim().toLowerCase() === "true";
    } catch (error) {
      if (!(error instanceof NoNodeError) && !(error instanceof MalformedZnodeError)) throw error;
    }
    return this.options.uncleanLeaderElectionEnable();
  }

  // ---- partition reassignment ----------------------------------------------------------------

  /**
   * AlterPartitionReassignments: starts (or replaces, or with null replicas cancels) each
   * partition's move; answers once the moves started, as Kafka's controller does. Null when this
   * broker is not the active controller.
   */
  alterPartitionReassignments(
    requests: readonly ReassignmentRequest[],
  ): Promise<ReassignmentOutcome[] | null> {
    return this.exclusive(async () => {
      const active = this.active;
      if (active === null) return null;
      const outcomes: ReassignmentOutcome[] = [];
      for (const r of requests) outcomes.push(await this.reassignOne(active, r));
      this.schedule("reassign", () => this.completeReassignments());
      return outcomes;
    });
  }

  private async reassignOne(
    active: ActiveState,
    r: ReassignmentRequest,
  ): Promise<ReassignmentOutcome> {
    const known = active.partitions.get(topicPartitionKey(r.topic, r.partition));
    const fresh = known === undefined ? null : await this.freshPartition(known);
    if (fresh === null) {
      return { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, message: null };
    }
    const plan = planReassignment(fresh, r.replicas, new Set(active.brokers.keys()));
    if (plan === null) return { errorCode: ErrorCode.NONE, message: null };
    if ("errorCode" in plan) return { errorCode: plan.errorCode, message: plan.message || null };
    const applied = await this.applyAssignment(active, fresh, plan);
    if (applied === null) {
      return {
        errorCode: ErrorCode.REASSIGNMENT_IN_PROGRESS,
        message: `${r.topic}-${r.partition} changed while it was being reassigned; retry.`,
      };
    }
    return { errorCode: ErrorCode.NONE, message: null };
  }

  /** ListPartitionReassignments: the moves in progress (of `wanted` only, when given). */
  listPartitionReassignments(
    wanted: ReadonlyMap<string, readonly number[]> | null,
  ): Promise<OngoingReassignment[] | null> {
    return this.exclusive(async () => {
      const active = this.active;
      if (active === null) return null;
      return [...active.partitions.values()]
        .filter((p) => isReassigning(p))
        .filter((p) => wanted === null || wanted.get(p.topic)?.includes(p.partition) === true)
        .map((p) => ({
          topic: p.topic,
          partition: p.partition,
          replicas: p.replicas,
          addingReplicas: p.addingReplicas,
          removingReplicas: p.removingReplicas,
        }));
    });
  }

  /**
   * Gives a partition the assignment `next`: its state first (ISR within `next`, the leader
   * moved into the target if needed, a new leader epoch), then the topic znode, so that a
   * controller failing between the two leaves a state a new controller finishes from. Replicas
   * that leave are stopped and deleted. Null when the state changed meanwhile or no replica of
   * `next` could lead.
   */
  private async applyAssignment(
    active: ActiveState,
    fresh: StatedPartition,
    next: ReplicaAssignment,
  ): Promise<StatedPartition | null> {
    const live = new Set(active.brokers.keys());
    const nextState = stateForAssignment(fresh.state, next, live, active.epoch);
    if (nextState === null) return null;
    const written = await this.writeState(active, fresh, nextState);
    if (written === null) return null;
    const { topic, partition } = fresh;
    const exists = await writePartitionAssignment(
      this.zk,
      active.epochZkVersion,
      topic,
      partition,
      next,
    ).catch((error: unknown) => this.resignIfDeposed(error));
    if (!exists) return null;
    const updated: StatedPartition = { ...written, ...next };
    active.partitions.set(topicPartitionKey(topic, partition), updated);
    this.options.log.info(
      `controller assigned ${topic}-${partition} to [${next.replicas}] ` +
        `(adding [${next.addingReplicas}], removing [${next.removingReplicas}], ` +
        `leader ${nextState.leader}, ISR [${nextState.isr}])`,
    );
    const leaving = fresh.replicas.filter((r) => !next.replicas.includes(r));
    const stop = [{ topic, partition, leaderEpoch: nextState.leaderEpoch }];
    for (const id of leaving) {
      void active.channels.send(
        id,
        ApiKey.StopReplica,
        STOP_REPLICA_VERSION,
        stopReplicaRequest(this.identity(active), stop, true),
      );
    }
    await this.announce(active, [updated], false);
    return updated;
  }

  /** A write refused on `/controller_epoch` means another controller took over. */
  private resignIfDeposed(error: unknown): false {
    if (error instanceof BadVersionError && error.path === CONTROLLER_EPOCH_PATH) {
      this.resign("another controller has a newer epoch");
      this.schedule("elect", () => this.elect());
      return false;
    }
    throw error;
  }

  /** Completes every move whose target replicas are all in the ISR. */
  private async completeReassignments(): Promise<void> {
    const active = this.active;
    if (active === null) return;
    for (const p of [...active.partitions.values()]) {
      if (this.active !== active) return;
      if (!isReassigning(p)) continue;
      const fresh = await this.freshPartition(p);
      if (fresh === null || !isReassignmentComplete(fresh, fresh.state.isr)) continue;
      const target = targetReplicas(fresh);
      await this.applyAssignment(active, fresh, {
        replicas: target,
        addingReplicas: [],
        removingReplicas: [],
      });
    }
    this.schedule("legacy-reassign", () => this.legacyReassignments());
  }

  /**
   * `/admin/reassign_partitions` (written by older tools or by hand): each entry starts a move
   * unless one to those replicas runs already; entries whose move completed are removed, and the
   * znode with them once none is left.
   */
  private async legacyReassignments(): Promise<void> {
    const active = this.active;
    if (active === null) return;
    const watch = this.arm("reassign_partitions", () => {
      this.schedule("legacy-reassign", () => this.legacyReassignments());
    });
    let read: Awaited<ReturnType<typeof readLegacyReassignments>>;
    try {
      read = await readLegacyReassignments(this.zk, watch);
    } catch (error) {
      if (!(error instanceof MalformedZnodeError)) throw error;
      this.options.log.warn(`controller ignores ${error.message}`);
      return;
    }
    if (read.version < 0) return;
    const remaining = [];
    for (const entry of read.entries) {
      const p = active.partitions.get(topicPartitionKey(entry.topic, entry.partition));
      if (p === undefined) continue;
      const done = !isReassigning(p) && sameList(p.replicas, entry.replicas);
      if (done) continue;
      remaining.push(entry);
      if (isReassigning(p) && sameList(targetReplicas(p), entry.replicas)) continue;
      await this.reassignOne(active, { ...entry, replicas: entry.replicas });
    }
    if (remaining.length === read.entries.length) return;
    await rewriteLegacyReassignments(this.zk, active.epochZkVersion, remaining, read.version).catch(
      (error: unknown) => {
        if (error instanceof BadVersionError || error instanceof NoNodeError) return;
        this.resignIfDeposed(error);
      },
    );
  }

  // ---- election ------------------------------------------------------------------------------

  private async elect(): Promise<void> {
    if (this.closed || this.active !== null) return;
    const watch = this.arm("controller", () => this.schedule("elect", () => this.elect()));
    const stat = await this.zk.exists(CONTROLLER_PATH, { watch }).catch((error: unknown) => {
      // A failed read registered no watch: the retry must set it again.
      if (watch !== undefined) this.armed.delete("controller");
      throw error;
    });
    if (stat !== null && stat.ephemeralOwner === this.zk.sessionId) {
      // This broker resigned (its epoch was overtaken) but still holds /controller: release it
      // so that the election starts afresh; the watch brings this broker back here.
      await this.zk.delete(CONTROLLER_PATH, { version: stat.version }).catch(() => {});
      return;
    }
    if (stat !== null) {
      await this.learnController();
      return;
    }
    const { epoch, version } = await this.readControllerEpoch();
    const ops: ZooKeeperOp[] = [
      {
        type: "create",
        path: CONTROLLER_PATH,
        mode: "ephemeral",
        data: encodeController(this.options.brokerId, Date.now()),
      },
      {
        type: "setData",
        path: CONTROLLER_EPOCH_PATH,
        data: encodeControllerEpoch(epoch + 1),
        version,
      },
    ];
    try {
      const results = await this.zk.multi(ops);
      const epochResult = results[1];
      const epochZkVersion = epochResult?.type === "setData" ? epochResult.stat.version : -1;
      this.becomeActive(epoch + 1, epochZkVersion);
    } catch (error) {
      if (!(error instanceof NodeExistsError) && !(error instanceof BadVersionError)) throw error;
      // Another broker won this round; the watch set above reports it.
      await this.learnController();
    }
  }

  /** Reads `/controller_epoch`, creating it with Kafka's initial epoch 0 when missing. */
  private async readControllerEpoch(): Promise<{ epoch: number; version: number }> {
    for (;;) {
      try {
        const { data, stat } = await this.zk.getData(CONTROLLER_EPOCH_PATH);
        return { epoch: decodeControllerEpoch(data), version: stat.version };
      } catch (error) {
        if (!(error instanceof NoNodeError)) throw error;
      }
      await this.zk.create(CONTROLLER_EPOCH_PATH, encodeControllerEpoch(0)).catch((error) => {
        if (!(error instanceof NodeExistsError)) throw error;
      });
    }
  }

  private async learnController(): Promise<void> {
    try {
      const [{ data, stat }, epoch] = await Promise.all([
        this.zk.getData(CONTROLLER_PATH),
        this.readControllerEpoch(),
      ]);
      const id = decodeController(data);
      this.setCurrent(id, epoch.epoch);
      if (id !== this.options.brokerId) await this.watchController(id, stat.ephemeralOwner);
    } catch (error) {
      // Gone again already: the watch brings the next election.
      if (!(error instanceof NoNodeError)) throw error;
    }
  }

  /**
   * Probes the controller's port. When it refuses connections the controller's process is
   * gone, but `/controller` stays until its session ends: this broker deletes it (only if it is
   * still that session's) so that the live brokers elect a new controller now. Safe even if the
   * controller were alive: every controller write checks `/controller_epoch`'s version, which the
   * next controller's election moves, so the old one is fenced (Kafka's controller epoch).
   */
  private async watchController(id: number, owner: bigint): Promise<void> {
    const probe = this.controllerProbe;
    if (probe !== null && probe.id === id && probe.owner === owner) return;
    this.stopControllerProbe();
    const registration = await this.zk.getData(brokerIdPath(id)).catch(() => null);
    if (registration === null || this.closed || this.active !== null) return;
    const { brokerId, requestTimeoutMs, log, interBrokerListenerName } = this.options;
    const { host, port } = decodeBrokerRegistration(id, registration.data, interBrokerListenerName);
    const liveness = new BrokerLiveness({
      security: this.options.interBrokerSecurity ?? PLAINTEXT_SECURITY,
      clientId: `quill-broker-${brokerId}`,
      probeIntervalMs: LIVENESS_PROBE_INTERVAL_MS,
      refusalsToSuspect: LIVENESS_REFUSALS_TO_SUSPECT,
      probeTimeoutMs: requestTimeoutMs,
      log: log.child("ControllerLiveness"),
      onSuspect: () => this.schedule("depose", () => this.deposeDeadController(id, owner)),
      onReturn: () => {},
    });
    this.controllerProbe = { id, owner, liveness };
    liveness.watch(id, host, port);
  }

  private stopControllerProbe(): void {
    this.controllerProbe?.liveness.close();
    this.controllerProbe = null;
  }

  /** Deletes `/controller` if the suspected controller's session still holds it. */
  private async deposeDeadController(id: number, owner: bigint): Promise<void> {
    const stat = await this.zk.exists(CONTROLLER_PATH);
    if (stat === null || stat.ephemeralOwner !== owner) return;
    this.options.log.warn(
      `controller ${id} refuses connections: removing its /controller so a live broker takes over`,
    );
    await this.zk.delete(CONTROLLER_PATH, { version: stat.version }).catch((error: unknown) => {
      if (!(error instanceof NoNodeError) && !(error instanceof BadVersionError)) throw error;
    });
  }

  private becomeActive(epoch: number, epochZkVersion: number): void {
    this.stopControllerProbe();
    const { brokerId, requestTimeoutMs, log } = this.options;
    const security = this.options.interBrokerSecurity ?? PLAINTEXT_SECURITY;
    log.info(`broker ${brokerId} is the controller (epoch ${epoch})`);
    const rebalance = this.options.leaderRebalance;
    const rebalanceTimer =
      rebalance === null
        ? null
        : setInterval(() => {
            this.schedule("rebalance", () => this.rebalanceLeaders());
          }, rebalance.intervalMs);
    rebalanceTimer?.unref();
    this.active = {
      epoch,
      epochZkVersion,
      channels: new ControllerChannelManager(
        brokerId,
        requestTimeoutMs,
        log.child("ControllerChannelManager"),
        security,
      ),
      liveness: new BrokerLiveness({
        security,
        clientId: `quill-controller-${brokerId}`,
        probeIntervalMs: LIVENESS_PROBE_INTERVAL_MS,
        refusalsToSuspect: LIVENESS_REFUSALS_TO_SUSPECT,
        probeTimeoutMs: requestTimeoutMs,
        log: log.child("BrokerLiveness"),
        onSuspect: () => this.schedule("reconcile", () => this.reconcile()),
        onReturn: (id) => this.schedule(`return:${id}`, () => this.brokerReturned(id)),
      }),
      partitions: new Map(),
      brokers: new Map(),
      shuttingDown: new Set(),
      deleting: new Set(),
      offlineReplicas: new Map(),
      offlineChanged: new Set(),
      rebalanceTimer,
    };
    this.setCurrent(brokerId, epoch);
    this.schedule("reconcile", () => this.reconcile());
  }

  private resign(why: string): void {
    if (this.active === null) return;
    this.options.log.info(
      `broker ${this.options.brokerId} stops being the controller ` + `(${why})`,
    );
    this.active.channels.close();
    this.active.liveness.close();
    if (this.active.rebalanceTimer !== null) clearInterval(this.active.rebalanceTimer);
    this.active = null;
    this.armed.delete("brokers");
    this.armed.delete("topics");
    this.armed.delete("reassign_partitions");
    this.armed.delete("delete_topics");
    this.armed.delete("log_dir_events");
    for (const key of [...this.armed]) if (key.startsWith("topic:")) this.armed.delete(key);
  }

  private setCurrent(id: number, epoch: number): void {
    if (this.current.id === id && this.current.epoch === epoch) return;
    this.current = { id, epoch };
    this.options.onControllerChange(id, epoch);
  }

  // ---- reconciliation ------------------------------------------------------------------------

  /** Reads the cluster, elects and writes what needs it, and tells the brokers. */
  private async reconcile(): Promise<void> {
    const active = this.active;
    if (active === null) return;
    const again = () => this.schedule("reconcile", () => this.reconcile());
    const armedNow: string[] = [];
    const arm = (key: string) => {
      const watch = this.arm(key, again);
      if (watch !== undefined) armedNow.push(key);
      return watch;
    };
    const snapshot = await readClusterSnapshot(
      this.zk,
      this.options.log,
      {
        brokers: arm("brokers"),
        topics: arm("topics"),
        topic: (topic) => arm(`topic:${topic}`),
      },
      this.options.interBrokerListenerName,
    ).catch((error: unknown) => {
      // Some reads failed and set no watch; arming again on the retry at worst doubles one.
      for (const key of armedNow) this.armed.delete(key);
      throw error;
    });
    this.disarmVanishedTopics(snapshot);
    if (this.active !== active) return;
    const joined = this.updateBrokers(active, snapshot);
    // A registered broker whose port refuses connections is dead already: its session has not
    // ended yet. Electing around it now is safe for the reasons docs/faults.md gives.
    const live = new Set(
      [...snapshot.brokers.keys()].filter((id) => !active.liveness.isSuspected(id)),
    );
    const changed: StatedPartition[] = [];
    const added: StatedPartition[] = [];
    const results = await mapLimit([...snapshot.partitions.values()], WRITE_CONCURRENCY, (p) =>
      this.reconcilePartition(active, p, live),
    );
    if (this.active !== active) return;
    for (const stated of results) {
      if (stated === null) {
        again();
        continue;
      }
      const key = topicPartitionKey(stated.topic, stated.partition);
      const before = active.partitions.get(key);
      if (before === undefined) added.push(stated);
      else if (before.version !== stated.version || before.topicIdHex !== stated.topicIdHex) {
        changed.push(stated);
      }
      active.partitions.set(key, stated);
    }
    this.forgetDeleted(active, snapshot);
    const offlineOnly = this.takeOfflineChanged(active, changed, added);
    const created = new Set(added.map((p) => topicPartitionKey(p.topic, p.partition)));
    for (const id of joined) this.sendFullState(active, id, created);
    const brokersChanged = joined.length > 0 || this.lastBrokerCount !== snapshot.brokers.size;
    this.lastBrokerCount = snapshot.brokers.size;
    // Not awaited: a broker that died but is still registered must not hold up the next event.
    const announced = [...changed, ...added];
    void this.announce(active, announced, brokersChanged, new Set(joined), created, offlineOnly);
    this.resumePendingWork();
  }

  /** UpdateMetadata for `partitions` as this controller knows them now. */
  private updateMetadata(active: ActiveState, partitions: readonly StatedPartition[]) {
    const identity = this.identity(active);
    return updateMetadataRequest(identity, partitions, active.brokers, active.offlineReplicas);
  }

  /**
   * Partitions whose offline replicas changed while their state did not (a follower out of the
   * ISR whose dir failed, a broker registering again): brokers must still hear of it.
   */
  private takeOfflineChanged(
    active: ActiveState,
    changed: readonly StatedPartition[],
    added: readonly StatedPartition[],
  ): StatedPartition[] {
    const told = new Set<string>(
      [...changed, ...added].map((p) => topicPartitionKey(p.topic, p.partition)),
    );
    const extra: StatedPartition[] = [];
    for (const key of active.offlineChanged) {
      const p = active.partitions.get(key);
      if (p !== undefined && !told.has(key)) extra.push(p);
      if (active.offlineReplicas.get(key)?.size === 0) active.offlineReplicas.delete(key);
    }
    active.offlineChanged.clear();
    return extra;
  }

  /** One partition's election with these brokers alive: its state, written if it changed. */
  private async reconcilePartition(
    active: ActiveState,
    p: ControllerPartition,
    live: ReadonlySet<number>,
  ): Promise<StatedPartition | null> {
    const alive = liveReplicasOf(active, p, live);
    const unclean =
      needsUncleanElection(p.state, alive) &&
      p.replicas.some((r) => alive.has(r)) &&
      (await this.uncleanAllowed(p.topic));
    const next = electLeader(p.state, p.replicas, alive, active.epoch, unclean);
    if (next === null) return p as StatedPartition;
    return await this.writeState(active, p, next);
  }

  /**
   * Moves found in ZooKeeper (a new controller's, or the legacy znode's) and deletions left
   * pending (a replica's broker was offline) continue after each reconciliation.
   */
  private resumePendingWork(): void {
    this.schedule("reassign", () => this.completeReassignments());
    this.schedule("delete-topics", () => this.processTopicDeletions());
    this.schedule("log-dir-events", () => this.processLogDirEvents());
  }

  // ---- failed log dirs (KIP-112) -------------------------------------------------------------

  /**
   * Acts on `/log_dir_event_notification` (Kafka's LogDirEventNotificationHandler): each
   * notification's broker is sent LeaderAndIsr for every replica it hosts; those it answers
   * KAFKA_STORAGE_ERROR are in its failed dir, and the next reconciliation elects around them.
   * The notifications are deleted once read.
   */
  private async processLogDirEvents(): Promise<void> {
    const active = this.active;
    if (active === null) return;
    const watch = this.arm("log_dir_events", () => {
      this.schedule("log-dir-events", () => this.processLogDirEvents());
    });
    const children = await this.zk
      .getChildren(LOG_DIR_EVENT_NOTIFICATION_PATH, { watch })
      .catch((error: unknown) => {
        if (watch !== undefined) this.armed.delete("log_dir_events");
        if (error instanceof NoNodeError) return [];
        throw error;
      });
    const brokers = new Set<number>();
    for (const child of children.sort()) {
      const path = `${LOG_DIR_EVENT_NOTIFICATION_PATH}/${child}`;
      try {
        brokers.add(decodeLogDirEvent(path, (await this.zk.getData(path)).data));
      } catch (error) {
        if (!(error instanceof NoNodeError) && !(error instanceof MalformedZnodeError)) throw error;
        if (error instanceof MalformedZnodeError) this.options.log.warn(error.message);
      }
      await this.zk.delete(path).catch((error: unknown) => {
        if (!(error instanceof NoNodeError)) throw error;
      });
    }
    if (this.active !== active) return;
    for (const id of brokers) {
      if (!active.brokers.has(id)) continue;
      this.options.log.info(`controller asks broker ${id} for its replicas: a log dir failed`);
      const hosted = [...active.partitions.values()].filter((p) => p.replicas.includes(id));
      void this.sendLeaderAndIsr(active, id, hosted, false);
    }
  }

  /**
   * LeaderAndIsr to one broker; partitions it answers KAFKA_STORAGE_ERROR for are recorded as
   * offline replicas there and a reconciliation moves their leadership and ISR.
   */
  private sendLeaderAndIsr(
    active: ActiveState,
    brokerId: number,
    partitions: readonly StatedPartition[],
    isNew: boolean | ((p: StatedPartition) => boolean),
    type: number = LeaderAndIsrType.UNSPECIFIED,
  ): Promise<void> {
    const request = leaderAndIsrRequest(
      this.identity(active),
      partitions,
      active.brokers,
      isNew,
      type,
    );
    return active.channels.send(
      brokerId,
      ApiKey.LeaderAndIsr,
      LEADER_AND_ISR_VERSION,
      request,
      (response) => {
        let added = 0;
        for (const p of storageErrorPartitions(partitions, response)) {
          const key = topicPartitionKey(p.topic, p.partition);
          const offline = active.offlineReplicas.get(key) ?? new Set<number>();
          if (offline.has(brokerId)) continue;
          added++;
          active.offlineReplicas.set(key, offline.add(brokerId));
          active.offlineChanged.add(key);
        }
        if (added === 0 || this.active !== active) return;
        this.options.log.warn(
          `controller marks ${added} replicas on broker ${brokerId} offline: their log dir failed`,
        );
        this.schedule("reconcile", () => this.reconcile());
      },
    );
  }

  // ---- topic deletion ------------------------------------------------------------------------

  /**
   * Acts on `/admin/delete_topics/<topic>` markers (Kafka's TopicDeletionManager): every replica
   * gets StopReplica with deletion; once all answered, the topic's znodes, its config and the
   * marker are removed. A topic with a replica on an offline broker, or being reassigned, waits.
   */
  private async processTopicDeletions(): Promise<void> {
    const active = this.active;
    if (active === null) return;
    const again = () => this.schedule("delete-topics", () => this.processTopicDeletions());
    const watch = this.arm("delete_topics", again);
    const markers = await this.zk
      .getChildren(DELETE_TOPICS_PATH, { watch })
      .catch((error: unknown) => {
        if (watch !== undefined) this.armed.delete("delete_topics");
        if (error instanceof NoNodeError) return [];
        throw error;
      });
    for (const topic of markers.filter(isLegalTopicName)) {
      if (this.active !== active) return;
      if (active.deleting.has(topic)) continue;
      if (!this.options.deleteTopicEnable) {
        this.options.log.warn(`controller keeps topic ${topic}: delete.topic.enable is false`);
        await this.zk.delete(deleteTopicPath(topic)).catch((error: unknown) => {
          if (!(error instanceof NoNodeError)) throw error;
        });
        continue;
      }
      await this.startTopicDeletion(active, topic, again);
    }
  }

  private async startTopicDeletion(
    active: ActiveState,
    topic: string,
    again: () => void,
  ): Promise<void> {
    const partitions = [...active.partitions.values()].filter((p) => p.topic === topic);
    if (partitions.length === 0) {
      // Not a topic this controller knows: gone already (leftovers removed), or too new.
      if ((await this.zk.exists(topicPath(topic))) === null) {
        await deleteTopicZnodes(this.zk, topic, Date.now() + this.options.requestTimeoutMs);
      }
      return;
    }
    const replicas = [...new Set(partitions.flatMap((p) => p.replicas))];
    const offline = replicas.filter((id) => !active.brokers.has(id));
    if (offline.length > 0 || partitions.some((p) => isReassigning(p))) {
      this.options.log.info(
        `controller defers deleting topic ${topic}: ` +
          (offline.length > 0 ? `replicas on offline brokers [${offline}]` : "being reassigned"),
      );
      return;
    }
    this.options.log.info(`controller deletes topic ${topic} from brokers [${replicas}]`);
    active.deleting.add(topic);
    const answered = new Set<number>();
    const sends = replicas.map((id) =>
      active.channels.send(
        id,
        ApiKey.StopReplica,
        STOP_REPLICA_VERSION,
        stopReplicaRequest(
          this.identity(active),
          partitions.filter((p) => p.replicas.includes(id)),
          true,
        ),
        (response) => {
          const failed = response.partitionErrors.some((e) => e.errorCode !== ErrorCode.NONE);
          if (response.errorCode === ErrorCode.NONE && !failed) answered.add(id);
        },
      ),
    );
    // Not awaited here: a broker that stops answering must not hold up the controller's queue.
    void Promise.all(sends).then(() => {
      active.deleting.delete(topic);
      if (answered.size !== replicas.length) return again();
      this.schedule(`delete-topic:${topic}`, () => this.finishTopicDeletion(active, topic));
    });
  }

  /** Every replica deleted its log: the topic's znodes go, the marker last. */
  private async finishTopicDeletion(active: ActiveState, topic: string): Promise<void> {
    if (this.active !== active) return;
    await deleteTopicZnodes(this.zk, topic, Date.now() + this.options.requestTimeoutMs);
    for (const [key, p] of active.partitions) if (p.topic === topic) active.partitions.delete(key);
    this.options.log.info(`controller deleted topic ${topic}`);
  }

  /** A topic read as missing set no data watch; a topic created later under its name needs one. */
  private disarmVanishedTopics(snapshot: ClusterSnapshot): void {
    const present = new Set([...snapshot.partitions.values()].map((p) => p.topic));
    for (const key of [...this.armed]) {
      if (key.startsWith("topic:") && !present.has(key.slice("topic:".length))) {
        this.armed.delete(key);
      }
    }
  }

  /** Registers brokers with the channel manager; returns those that (re)joined. */
  private updateBrokers(active: ActiveState, snapshot: ClusterSnapshot): number[] {
    const joined: number[] = [];
    for (const [id, info] of snapshot.brokers) {
      const before = active.brokers.get(id);
      if (
        before === undefined ||
        before.epoch !== info.epoch ||
        before.timestampMs !== info.timestampMs ||
        before.port !== info.port ||
        before.host !== info.host
      ) {
        active.channels.removeBroker(id);
        active.channels.addBroker(id, info.host, info.port, info.epoch);
        // A new registration is a new incarnation, not the one that was shutting down, and its
        // log dirs are checked afresh (Kafka's onBrokerStartup forgets its offline replicas).
        if (before?.epoch !== info.epoch) {
          active.shuttingDown.delete(id);
          for (const [key, offline] of active.offlineReplicas) {
            if (offline.delete(id)) active.offlineChanged.add(key);
          }
        }
        if (id !== this.options.brokerId) active.liveness.watch(id, info.host, info.port);
        joined.push(id);
      }
    }
    for (const id of active.brokers.keys()) {
      if (!snapshot.brokers.has(id)) {
        this.options.log.info(`controller saw broker ${id} leave the cluster`);
        active.shuttingDown.delete(id);
        active.channels.removeBroker(id);
        active.liveness.unwatch(id);
      }
    }
    if (joined.length > 0) {
      this.options.log.info(
        `controller sees brokers [${joined.join(",")}] join ` +
          `(live: [${[...snapshot.brokers.keys()].join(",")}])`,
      );
    }
    active.brokers = snapshot.brokers;
    return joined;
  }

  /**
   * A suspected broker answers again (restarted on its port before its old session ended, or
   * its port was closed for a moment): it may have missed decisions, so it gets the full state,
   * as a broker that registers again does, and the cluster is reconciled with it alive.
   */
  private async brokerReturned(brokerId: number): Promise<void> {
    const active = this.active;
    if (active === null || !active.brokers.has(brokerId)) return;
    this.sendFullState(active, brokerId);
    await this.reconcile();
  }

  /** Topics gone from ZooKeeper: their replicas stop and delete them. */
  private forgetDeleted(active: ActiveState, snapshot: ClusterSnapshot): void {
    const gone = [...active.partitions.values()].filter(
      (p) => !snapshot.partitions.has(topicPartitionKey(p.topic, p.partition)),
    );
    for (const p of gone) active.partitions.delete(topicPartitionKey(p.topic, p.partition));
    for (const id of active.brokers.keys()) {
      const hosted = gone.filter((p) => p.replicas.includes(id));
      if (hosted.length === 0) continue;
      void active.channels.send(
        id,
        ApiKey.StopReplica,
        STOP_REPLICA_VERSION,
        stopReplicaRequest(this.identity(active), hosted, true),
      );
    }
  }

  /**
   * A broker that (re)joined learns everything: all partitions and, in a FULL LeaderAndIsr, its
   * own replicas' states.
   */
  private sendFullState(
    active: ActiveState,
    brokerId: number,
    created: ReadonlySet<string> = new Set(),
  ): void {
    const all = [...active.partitions.values()];
    void active.channels.send(
      brokerId,
      ApiKey.UpdateMetadata,
      UPDATE_METADATA_VERSION,
      this.updateMetadata(active, all),
    );
    // FULL even when it names nothing: the broker deletes every log it is not told of (strays
    // whose StopReplica it missed while it was away).
    const hosted = all.filter((p) => p.replicas.includes(brokerId));
    const isNew = (p: StatedPartition) => isNewReplica(p, brokerId, created);
    void this.sendLeaderAndIsr(active, brokerId, hosted, isNew, LeaderAndIsrType.FULL);
  }

  /**
   * LeaderAndIsr to the live replicas of changed partitions, UpdateMetadata to every live broker
   * (skipping brokers in `told`, which got the full state already), which also hears of
   * `offlineOnly` (partitions whose state stayed but whose offline replicas changed). Resolves
   * once the replicas answered the LeaderAndIsr or gave up.
   */
  private async announce(
    active: ActiveState,
    changed: readonly StatedPartition[],
    brokersChanged: boolean,
    told: ReadonlySet<number> = new Set(),
    created: ReadonlySet<string> = new Set(),
    offlineOnly: readonly StatedPartition[] = [],
  ): Promise<void> {
    if (changed.length === 0 && !brokersChanged && offlineOnly.length === 0) return;
    const stated = [...changed, ...offlineOnly];
    const sends: Promise<void>[] = [];
    for (const id of active.brokers.keys()) {
      if (told.has(id)) continue;
      const hosted = changed.filter((p) => p.replicas.includes(id));
      if (hosted.length > 0) {
        const isNew = (p: StatedPartition) => isNewReplica(p, id, created);
        sends.push(this.sendLeaderAndIsr(active, id, hosted, isNew));
      }
      sends.push(
        active.channels.send(
          id,
          ApiKey.UpdateMetadata,
          UPDATE_METADATA_VERSION,
          this.updateMetadata(active, stated),
        ),
      );
    }
    await withTimeout(Promise.all(sends), this.options.requestTimeoutMs);
  }

  /** Moves leadership back to preferred replicas where a broker's share is out of balance. */
  private async rebalanceLeaders(): Promise<void> {
    const active = this.active;
    const rebalance = this.options.leaderRebalance;
    if (active === null || rebalance === null) return;
    const live = new Set(active.brokers.keys());
    const moves = partitionsToRebalance(
      [...active.partitions.values()],
      live,
      rebalance.imbalancePercentage,
    );
    const changed: StatedPartition[] = [];
    for (const p of moves) {
      const fresh = await this.freshPartition(p);
      if (fresh === null || fresh.state.leader === fresh.replicas[0]) continue;
      if (!fresh.state.isr.includes(fresh.replicas[0]!)) continue;
      const written = await this.writeState(
        active,
        fresh,
        electPreferred(fresh.state, fresh.replicas, active.epoch),
      );
      if (written === null) continue;
      active.partitions.set(topicPartitionKey(p.topic, p.partition), written);
      changed.push(written);
    }
    if (changed.length > 0) {
      this.options.log.info(
        `controller moved ${changed.length} leaderships back to ` + "their preferred replicas",
      );
    }
    await this.announce(active, changed, false);
  }

  // ---- state znodes --------------------------------------------------------------------------

  /** The partition's state as ZooKeeper has it now; null when the partition is gone. */
  private async freshPartition(
    p: ControllerPartition | StatedPartition,
  ): Promise<StatedPartition | null> {
    const { state, version } = await readPartitionState(
      this.zk,
      this.options.log,
      p.topic,
      p.partition,
    );
    return state === null ? null : { ...p, state, version };
  }

  /**
   * Writes a partition's new state if this is still the controller and nobody changed the
   * state since it was read. Returns the written state, or null when another writer won.
   */
  private async writeState(
    active: ActiveState,
    p: ControllerPartition | StatedPartition,
    next: PartitionStateZnode,
  ): Promise<StatedPartition | null> {
    const path = partitionStatePath(p.topic, p.partition);
    const data = encodePartitionState(next);
    const epochCheck: ZooKeeperOp = {
      type: "check",
      path: CONTROLLER_EPOCH_PATH,
      version: active.epochZkVersion,
    };
    try {
      if (p.version < 0) {
        await this.zk.mkdirp(partitionPath(p.topic, p.partition));
        await this.zk.multi([epochCheck, { type: "create", path, data }]);
        return { ...p, state: next, version: 0 };
      }
      const results = await this.zk.multi([
        epochCheck,
        { type: "setData", path, data, version: p.version },
      ]);
      const result = results[1];
      const version = result?.type === "setData" ? result.stat.version : p.version + 1;
      this.logChange(p, next);
      return { ...p, state: next, version };
    } catch (error) {
      if (!(error instanceof ZooKeeperError)) throw error;
      if (error instanceof BadVersionError && error.path === CONTROLLER_EPOCH_PATH) {
        this.resign("another controller has a newer epoch");
        this.schedule("elect", () => this.elect());
        return null;
      }
      const raced =
        error instanceof BadVersionError ||
        error instanceof NoNodeError ||
        error instanceof NodeExistsError;
      if (!raced) throw error;
      return null;
    }
  }

  private logChange(p: ControllerPartition | StatedPartition, next: PartitionStateZnode): void {
    const before = p.state;
    if (before === null || before.leader === next.leader) return;
    this.options.log.info(
      `controller moved the leader of ${p.topic}-${p.partition} ` +
        `from ${before.leader} to ${next.leader} (leader epoch ${next.leaderEpoch}, ISR ` +
        `[${next.isr.join(",")}])`,
    );
  }

  private identity(active: ActiveState) {
    return { controllerId: this.options.brokerId, controllerEpoch: active.epoch };
  }

  // ---- the task queue and watches ------------------------------------------------------------

  private exclusive<T>(task: () => Promise<T>): Promise<T> {
    const result = this.queue.then(task);
    this.queue = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  /** Queues a task unless one with the same key waits already; failures retry after a pause. */
  private schedule(key: string, task: () => Promise<void>): void {
    if (this.closed || this.queued.has(key)) return;
    this.queued.add(key);
    this.exclusive(() => {
      this.queued.delete(key);
      return this.closed ? Promise.resolve() : task();
    }).catch((error: unknown) => {
      this.options.log.warn(`controller task ${key} failed, retrying: ${String(error)}`);
      setTimeout(() => this.schedule(key, task), RETRY_DELAY_MS).unref();
    });
  }

  /** A one-shot watcher for `key`, or undefined while one is registered already. */
  private arm(key: string, onFire: () => void): (() => void) | undefined {
    if (this.armed.has(key)) return undefined;
    this.armed.add(key);
    return () => {
      this.armed.delete(key);
      if (!this.closed) onFire();
    };
  }
}

/**
 * The brokers whose replica of `p` may lead or stay in its ISR: the live ones, less those whose
 * replica is in a failed log dir.
 */
function liveReplicasOf(
  active: ActiveState,
  p: ControllerPartition,
  live: ReadonlySet<number>,
): ReadonlySet<number> {
  const offline = active.offlineReplicas.get(topicPartitionKey(p.topic, p.partition));
  if (offline === undefined) return live;
  return new Set([...live].filter((id) => !offline.has(id)));
}

/**
 * Kafka's isNew: the replica is created now (a new partition, or a replica a reassignment adds),
 * so a broker with a failed log dir may create its log rather than answer KAFKA_STORAGE_ERROR.
 */
function isNewReplica(p: StatedPartition, brokerId: number, created: ReadonlySet<string>) {
  return (
    created.has(topicPartitionKey(p.topic, p.partition)) || p.addingReplicas.includes(brokerId)
  );
}

function sameList(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function sameMembers(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x) => b.includes(x));
}

async function withTimeout(promise: Promise<unknown>, timeoutMs: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, timeoutMs);
  });
  await Promise.race([promise, timeout]);
  clearTimeout(timer);
}
