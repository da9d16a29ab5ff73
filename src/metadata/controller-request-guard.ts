/**
 * Checks of controller requests against ZooKeeper, beyond Kafka (which relies on ACLs alone).
 * Without an authorizer anyone who reaches a port can send LeaderAndIsr, UpdateMetadata and
 * StopReplica; before this guard a forged StopReplica with a huge controller epoch deleted a
 * partition's data and made the broker refuse the real controller until it restarted. So:
 *
 * - a controller request is believed only from the controller and epoch that `/controller` and
 *   `/controller_epoch` name now: an older epoch is a deposed controller, a newer one a forgery;
 * - a StopReplica that deletes a partition is refused while `/brokers/topics/<topic>` still
 *   assigns that partition to this broker and the topic is not marked for deletion
 *   (`/admin/delete_topics/<topic>`): the controller rewrites the assignment, or marks the
 *   topic, before it asks a replica to delete itself.
 *
 * The controller writes ZooKeeper before it sends, but this broker's ZooKeeper server may lag
 * behind the one the controller wrote through; so a request that looks ahead of ZooKeeper is
 * re-read a few times before it is refused. Each check costs one or two reads per controller
 * request (not per partition), which only come with metadata changes.
 */
import type { Logger } from "../util/logger.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import { NoNodeError } from "../zookeeper/zookeeper-errors.ts";
import {
  CONTROLLER_EPOCH_PATH,
  CONTROLLER_PATH,
  decodeController,
  decodeControllerEpoch,
  decodeTopicAssignment,
  deleteTopicPath,
  topicPath,
} from "./kafka-znodes.ts";

/** Reads of a request that looks ahead of ZooKeeper, and the pause between them. */
const LAG_READS = 5;
const LAG_PAUSE_MS = 100;

export class ControllerRequestGuard {
  constructor(
    private readonly zk: ZooKeeperClient,
    private readonly brokerId: number,
    private readonly log: Logger,
  ) {}

  /** Whether (`controllerId`, `epoch`) is the controller ZooKeeper names now. */
  async isCurrentController(controllerId: number, epoch: number): Promise<boolean> {
    for (let read = 1; ; read++) {
      const current = await this.currentController();
      if (current !== null && current.epoch === epoch && current.id === controllerId) return true;
      const ahead = current === null || epoch > current.epoch || current.epoch === epoch;
      if (!ahead || read === LAG_READS) {
        const named = current === null ? "none" : `broker ${current.id}, epoch ${current.epoch}`;
        this.log.warn(
          `Refused a controller request from broker ${controllerId} with controller epoch ` +
            `${epoch}: ZooKeeper names ${named}`,
        );
        return false;
      }
      await Bun.sleep(LAG_PAUSE_MS);
    }
  }

  /**
   * The partitions of `deletions` that ZooKeeper still assigns to this broker (their topic
   * exists and is not marked for deletion): they must not be deleted.
   */
  async stillAssigned(
    deletions: readonly { readonly topic: string; readonly partition: number }[],
  ): Promise<Set<string>> {
    let assigned = new Set<string>();
    if (deletions.length === 0) return assigned;
    for (let read = 1; read <= LAG_READS; read++) {
      assigned = new Set<string>();
      const topics = [...new Set(deletions.map((d) => d.topic))];
      const replicasByTopic = new Map(
        await Promise.all(topics.map(async (t) => [t, await this.assignment(t)] as const)),
      );
      for (const { topic, partition } of deletions) {
        const replicas = replicasByTopic.get(topic)?.[partition];
        if (replicas?.includes(this.brokerId)) assigned.add(`${topic}-${partition}`);
      }
      if (assigned.size === 0) return assigned;
      if (read < LAG_READS) await Bun.sleep(LAG_PAUSE_MS);
    }
    this.log.warn(
      `Refused StopReplica deleting partitions ZooKeeper still assigns to broker ` +
        `${this.brokerId}: ${[...assigned].slice(0, 10).join(", ")}`,
    );
    return assigned;
  }

  private async currentController(): Promise<{ id: number; epoch: number } | null> {
    try {
      const [controller, epoch] = await Promise.all([
        this.zk.getData(CONTROLLER_PATH),
        this.zk.getData(CONTROLLER_EPOCH_PATH),
      ]);
      return { id: decodeController(controller.data), epoch: decodeControllerEpoch(epoch.data) };
    } catch (error) {
      if (error instanceof NoNodeError) return null;
      throw error;
    }
  }

  /** The topic's replicas by partition; none when it is gone or marked for deletion. */
  private async assignment(topic: string): Promise<readonly (readonly number[])[]> {
    try {
      const [{ data }, marked] = await Promise.all([
        this.zk.getData(topicPath(topic)),
        this.zk.exists(deleteTopicPath(topic)),
      ]);
      return marked === null ? decodeTopicAssignment(topic, data).assignment : [];
    } catch (error) {
      if (error instanceof NoNodeError) return [];
      throw error;
    }
  }
}
