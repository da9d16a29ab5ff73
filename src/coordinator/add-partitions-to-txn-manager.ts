/**
 * Transactions v2 (KIP-890 part 2), the partition leader's and group coordinator's side (Kafka's
 * AddPartitionsToTxnManager): a Kafka 4 producer sends no AddPartitionsToTxn and no
 * AddOffsetsToTxn, so the broker that receives its first transactional produce to a partition
 * (Produce v12+), or its TxnOffsetCommit (v5+), adds the partition or the group to the
 * transaction itself before writing. Where this broker coordinates the transactional id the
 * coordinator is called directly; otherwise the coordinator's broker (the leader of the id's
 * `__transaction_state` partition) gets AddPartitionsToTxn v5 (broker batch form, not verify
 * only) or AddOffsetsToTxn v4, over the marker channel's connections.
 */
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import type { MetadataCache } from "../server/metadata-cache.ts";
import type { Logger } from "../util/logger.ts";
import type { TransactionCoordinator, TxnPartition } from "./transaction-coordinator.ts";
import { TRANSACTION_STATE_TOPIC } from "./transaction-log.ts";
import type { TransactionMarkerChannelManager } from "./transaction-marker-channel-manager.ts";
import type { TransactionStateManager } from "./transaction-state-manager.ts";

/** The producer a transactional write comes from. */
export interface TxnProducer {
  readonly transactionalId: string;
  readonly producerId: bigint;
  readonly producerEpoch: number;
}

export class AddPartitionsToTxnManager {
  constructor(
    private readonly coordinator: TransactionCoordinator,
    private readonly state: TransactionStateManager,
    private readonly markers: TransactionMarkerChannelManager,
    private readonly cache: MetadataCache,
    private readonly timeoutMs: number,
    private readonly logger: Logger,
  ) {}

  /** Adds partitions to the producer's transaction; the coordinator's error code. */
  async addPartitions(p: TxnProducer, partitions: readonly TxnPartition[]): Promise<number> {
    const remote = this.remoteCoordinator(p.transactionalId);
    if (remote === null) {
      const { transactionalId: id, producerId, producerEpoch } = p;
      return this.coordinator.addPartitions(id, producerId, producerEpoch, partitions);
    }
    const topics = new Map<string, number[]>();
    for (const { topic, partition } of partitions) {
      topics.set(topic, [...(topics.get(topic) ?? []), partition]);
    }
    const body = {
      transactions: [
        {
          transactionalId: p.transactionalId,
          producerId: p.producerId,
          producerEpoch: p.producerEpoch,
          verifyOnly: false,
          topics: [...topics].map(([name, list]) => ({ name, partitions: list })),
        },
      ],
    };
    return this.ask(remote, async (client) => {
      const res = await client.request(ApiKey.AddPartitionsToTxn, 5, body, this.timeoutMs);
      const codes = res.resultsByTransaction.flatMap((t) =>
        t.topicResults.flatMap((r) => r.resultsByPartition.map((x) => x.partitionErrorCode)),
      );
      if (res.errorCode !== ErrorCode.NONE) return res.errorCode;
      return codes.find((c) => c !== ErrorCode.NONE) ?? ErrorCode.NONE;
    });
  }

  /** Adds the group's offsets to the producer's transaction (TxnOffsetCommit v5+). */
  async addOffsets(p: TxnProducer, groupId: string): Promise<number> {
    const remote = this.remoteCoordinator(p.transactionalId);
    if (remote === null) {
      const { transactionalId: id, producerId, producerEpoch } = p;
      return this.coordinator.addOffsets(id, producerId, producerEpoch, groupId);
    }
    return this.ask(remote, async (client) => {
      const res = await client.request(
        ApiKey.AddOffsetsToTxn,
        4,
        {
          transactionalId: p.transactionalId,
          producerId: p.producerId,
          producerEpoch: p.producerEpoch,
          groupId,
        },
        this.timeoutMs,
      );
      return res.errorCode;
    });
  }

  /** The coordinator's broker when it is another one, else null (this broker, or unknown). */
  private remoteCoordinator(transactionalId: string): number | null {
    const partition = this.state.partitionFor(transactionalId);
    const leader = this.cache.topic(TRANSACTION_STATE_TOPIC)?.partitions[partition]?.leaderId;
    const local = this.cache.brokerConfig["broker.id"];
    return leader === undefined || leader < 0 || leader === local ? null : leader;
  }

  private async ask(
    brokerId: number,
    send: (
      client: Awaited<ReturnType<TransactionMarkerChannelManager["clientFor"]>>,
    ) => Promise<number>,
  ): Promise<number> {
    try {
      return await send(await this.markers.clientFor(brokerId));
    } catch (error) {
      this.markers.dropClient(brokerId);
      this.logger.warn(`adding partitions at transaction coordinator ${brokerId}: ${error}`);
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    }
  }
}
