/**
 * Writes a finished transaction's COMMIT or ABORT markers to every partition it touched
 * (Kafka's TransactionMarkerChannelManager). Partitions this broker leads are appended to
 * directly with acks=all, as Kafka's WriteTxnMarkers handler does; `__consumer_offsets`
 * partitions (added by AddOffsetsToTxn) go to the group coordinator, which commits or drops
 * the transaction's pending offsets. A partition whose topic was deleted is skipped; other
 * failures are retried after a backoff until the marker is written or the coordinator stops.
 *
 * In a cluster, markers for partitions another broker leads go to that leader as a
 * WriteTxnMarkers request (one connection per broker, reopened after a failure), and the
 * `__consumer_offsets` marker goes to every live broker: pending offsets are held by whichever
 * broker coordinated the group when TxnOffsetCommit arrived, and completing is a no-op where
 * nothing is pending.
 */

import * as fs from "node:fs";
import { InterBrokerClient } from "../network/inter-broker-client.ts";
import { buildEndTxnMarkerBatch } from "../protocol/control-record.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import type { MetadataCache } from "../server/metadata-cache.ts";
import type { ReplicaManager } from "../server/replica-manager.ts";
import type { Logger } from "../util/logger.ts";
import type { GroupCoordinator } from "./group-coordinator.ts";
import { splitTxnPartitionKey, type TxnPartitionKey } from "./transaction-metadata.ts";

export const CONSUMER_OFFSETS_TOPIC = "__consumer_offsets";
const RETRY_BACKOFF_MS = 100;
/**
 * Test hook: while the file this names exists, no marker is written, so a test can kill the
 * coordinator between a transaction's prepare and its completion and watch the next one finish
 * it (test/e2e/transactions-crash.test.ts, test/broker/transactions-cluster.test.ts). Unset, it
 * costs nothing; set, it costs one stat per marker attempt.
 */
const HOLD_MARKERS_FILE = process.env.TEST_QUILL_HOLD_TXN_MARKERS;
/**
 * Test hook: while the file this names exists, a transaction whose markers are all written is
 * not completed (no CompleteCommit/CompleteAbort record), so a test can kill the coordinator
 * between the markers and the completion (test/e2e/transactions-crash.test.ts).
 */
const HOLD_COMPLETION_FILE = process.env.TEST_QUILL_HOLD_TXN_COMPLETION;

export interface TxnMarkers {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly coordinatorEpoch: number;
  readonly commit: boolean;
  readonly partitions: ReadonlySet<TxnPartitionKey>;
}

export class TransactionMarkerChannelManager {
  private stopped = false;
  /** One connection per remote broker, bounded by the live brokers. */
  private readonly clients = new Map<number, Promise<InterBrokerClient>>();

  constructor(
    private readonly replicaManager: ReplicaManager,
    private readonly groupCoordinator: GroupCoordinator,
    private readonly cache: MetadataCache,
    private readonly timeoutMs: number,
    private readonly logger: Logger,
  ) {
    if (HOLD_MARKERS_FILE !== undefined) {
      logger.warn(
        `TEST_QUILL_HOLD_TXN_MARKERS is set: markers wait while ${HOLD_MARKERS_FILE} exists`,
      );
    }
    if (HOLD_COMPLETION_FILE !== undefined) {
      logger.warn(
        `TEST_QUILL_HOLD_TXN_COMPLETION is set: completions wait while ${HOLD_COMPLETION_FILE}` +
          " exists",
      );
    }
  }

  stop(): void {
    this.stopped = true;
    for (const client of this.clients.values())
      void client.then(
        (c) => c.close(),
        () => {},
      );
    this.clients.clear();
  }

  private get localBrokerId(): number {
    return this.cache.brokerConfig["broker.id"];
  }

  /** Resolves once every marker is written (or its partition is gone); false if stopped. */
  async send(markers: TxnMarkers): Promise<boolean> {
    const results = await Promise.all(
      [...markers.partitions].map((key) => this.sendOne(markers, key)),
    );
    return (await this.completionReleased()) && results.every((ok) => ok);
  }

  /** False if the broker stopped while TEST_QUILL_HOLD_TXN_COMPLETION held the completion. */
  private async completionReleased(): Promise<boolean> {
    if (HOLD_COMPLETION_FILE === undefined) return true;
    while (fs.existsSync(HOLD_COMPLETION_FILE)) {
      if (this.stopped) return false;
      await Bun.sleep(RETRY_BACKOFF_MS);
    }
    return true;
  }

  private async sendOne(markers: TxnMarkers, key: TxnPartitionKey): Promise<boolean> {
    const { topic, partition } = splitTxnPartitionKey(key);
    // Bounded by stop(): each failed pass waits RETRY_BACKOFF_MS.
    while (!this.stopped) {
      if (HOLD_MARKERS_FILE !== undefined && fs.existsSync(HOLD_MARKERS_FILE)) {
        await Bun.sleep(RETRY_BACKOFF_MS);
        continue;
      }
      const code =
        topic === CONSUMER_OFFSETS_TOPIC
          ? await this.completeGroupsEverywhere(markers, partition)
          : await this.sendToLeader(markers, topic, partition);
      if (code === ErrorCode.NONE || code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) return true;
      this.logger.warn(
        `marker for producer ${markers.producerId} on ${topic}-` +
          `${partition} failed with error ${code}; retrying`,
      );
      await Bun.sleep(RETRY_BACKOFF_MS);
    }
    return false;
  }

  private async append(markers: TxnMarkers, topic: string, partition: number): Promise<number> {
    const records = buildEndTxnMarkerBatch(markers, Date.now());
    const [outcome] = await this.replicaManager.produceRecords(-1, this.timeoutMs, [
      { topic, partition, records, origin: "coordinator" },
    ]);
    return outcome!.errorCode;
  }

  private async sendToLeader(markers: TxnMarkers, topic: string, partition: number) {
    const state = this.cache.topic(topic)?.partitions[partition];
    if (state === undefined) return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
    const leader = state.leaderId < 0 ? this.localBrokerId : state.leaderId;
    if (leader === this.localBrokerId) return await this.append(markers, topic, partition);
    return await this.sendRemote(leader, markers, topic, partition);
  }

  private async completeGroupsEverywhere(markers: TxnMarkers, partition: number) {
    const codes = await Promise.all([
      this.completeGroups(markers),
      ...this.cache.brokers
        .filter((b) => b.nodeId !== this.localBrokerId)
        .map((b) => this.sendRemote(b.nodeId, markers, CONSUMER_OFFSETS_TOPIC, partition)),
    ]);
    return codes.find((c) => c !== ErrorCode.NONE) ?? ErrorCode.NONE;
  }

  private async sendRemote(
    brokerId: number,
    markers: TxnMarkers,
    topic: string,
    partition: number,
  ): Promise<number> {
    try {
      const client = await this.clientFor(brokerId);
      const response = await client.request(
        ApiKey.WriteTxnMarkers,
        1,
        {
          markers: [
            {
              producerId: markers.producerId,
              producerEpoch: markers.producerEpoch,
              transactionResult: markers.commit,
              coordinatorEpoch: markers.coordinatorEpoch,
              topics: [{ name: topic, partitionIndexes: [partition] }],
            },
          ],
        },
        this.timeoutMs,
      );
      return (
        response.markers[0]?.topics[0]?.partitions[0]?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR
      );
    } catch (error) {
      this.clients.delete(brokerId);
      this.logger.warn(`WriteTxnMarkers to broker ${brokerId}: ${String(error)}`);
      return ErrorCode.NETWORK_EXCEPTION;
    }
  }

  /** Forgets a connection that failed, so the next request opens a new one. */
  dropClient(brokerId: number): void {
    this.clients.delete(brokerId);
  }

  /** The connection to a live broker, opened once and reopened after a failure. */
  clientFor(brokerId: number): Promise<InterBrokerClient> {
    const existing = this.clients.get(brokerId);
    if (existing !== undefined) {
      return existing.then((c) => {
        if (!c.isClosed) return c;
        this.clients.delete(brokerId);
        return this.clientFor(brokerId);
      });
    }
    const endpoint = this.cache.broker(brokerId);
    if (endpoint === undefined) {
      return Promise.reject(new Error(`broker ${brokerId} is not live`));
    }
    const connecting = InterBrokerClient.connect(endpoint.host, endpoint.port, {
      ...this.replicaManager.interBrokerSecurity,
      clientId: `quill-txn-markers-${this.localBrokerId}`,
      connectTimeoutMs: this.timeoutMs,
    });
    this.clients.set(brokerId, connecting);
    connecting.catch(() => this.clients.delete(brokerId));
    return connecting;
  }

  private async completeGroups(markers: TxnMarkers): Promise<number> {
    try {
      await this.groupCoordinator.completeTransaction(markers.producerId, markers.commit);
      return ErrorCode.NONE;
    } catch (error) {
      this.logger.warn(`completing offsets of producer ${markers.producerId}: ${error}`);
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    }
  }
}
