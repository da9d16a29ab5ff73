/**
 * Writes a finished transaction's COMMIT or ABORT markers to every partition it touched
 * (Kafka's TransactionMarkerChannelManager). Partitions this broker leads are appended to
 * directly with acks=all, as Kafka's WriteTxnMarkers handler does; `__consumer_offsets`
 * partitions (added by AddOffsetsToTxn) go to the group coordinator, which commits or drops
 * the transaction's pending offsets. A partition whose topic was deleted is skipped; other
 * failures are retried after a backoff until the marker is written or the coordinator stops.
 *
 * Markers for partitions led by other brokers are not sent yet (cluster mode is missing): they
 * are retried here until this broker leads the partition.
 */
import { buildEndTxnMarkerBatch } from "../protocol/control-record.ts";
import { ErrorCode } from "../protocol/errors.ts";
import type { ReplicaManager } from "../server/replica-manager.ts";
import type { GroupCoordinator } from "./group-coordinator.ts";
import { splitTxnPartitionKey, type TxnPartitionKey } from "./transaction-metadata.ts";

export const CONSUMER_OFFSETS_TOPIC = "__consumer_offsets";
const RETRY_BACKOFF_MS = 100;
const APPEND_API_VERSION = 9;

export interface TxnMarkers {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly coordinatorEpoch: number;
  readonly commit: boolean;
  readonly partitions: ReadonlySet<TxnPartitionKey>;
}

export class TransactionMarkerChannelManager {
  private stopped = false;

  constructor(
    private readonly replicaManager: ReplicaManager,
    private readonly groupCoordinator: GroupCoordinator,
    private readonly timeoutMs: number,
    private readonly logger: (line: string) => void,
  ) {}

  stop(): void {
    this.stopped = true;
  }

  /** Resolves once every marker is written (or its partition is gone); false if stopped. */
  async send(markers: TxnMarkers): Promise<boolean> {
    const results = await Promise.all(
      [...markers.partitions].map((key) => this.sendOne(markers, key)),
    );
    return results.every((ok) => ok);
  }

  private async sendOne(markers: TxnMarkers, key: TxnPartitionKey): Promise<boolean> {
    const { topic, partition } = splitTxnPartitionKey(key);
    // Bounded by stop(): each failed pass waits RETRY_BACKOFF_MS.
    while (!this.stopped) {
      const code =
        topic === CONSUMER_OFFSETS_TOPIC
          ? await this.completeGroups(markers)
          : await this.append(markers, topic, partition);
      if (code === ErrorCode.NONE || code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) return true;
      this.logger(
        `[transaction] marker for producer ${markers.producerId} on ${topic}-` +
          `${partition} failed with error ${code}; retrying`,
      );
      await Bun.sleep(RETRY_BACKOFF_MS);
    }
    return false;
  }

  private async append(markers: TxnMarkers, topic: string, partition: number): Promise<number> {
    const records = buildEndTxnMarkerBatch(markers, Date.now());
    const [outcome] = await this.replicaManager.produceRecords(
      -1,
      this.timeoutMs,
      [{ topic, partition, records, origin: "coordinator" }],
      APPEND_API_VERSION,
    );
    return outcome!.errorCode;
  }

  private async completeGroups(markers: TxnMarkers): Promise<number> {
    try {
      await this.groupCoordinator.completeTransaction(markers.producerId, markers.commit);
      return ErrorCode.NONE;
    } catch (error) {
      this.logger(`[transaction] completing offsets of producer ${markers.producerId}: ${error}`);
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    }
  }
}
