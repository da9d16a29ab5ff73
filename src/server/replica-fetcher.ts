/**
 * A follower's copy loop for every partition it follows from one leader broker (Kafka's
 * ReplicaFetcherThread): one connection to the leader, one Fetch at a time carrying this
 * broker's id (ReplicaState in v15+), each partition asking from its own log end offset. The
 * leader records that offset as the follower's LEO, which is how the high watermark moves; the
 * answer's batches are appended with the leader's offsets and the leader's HW is adopted.
 *
 * A partition answering an error (a leader epoch mismatch while the controller's news travels,
 * an offset out of range) is paused for replica.fetch.backoff.ms and retried; a connection
 * failure pauses the whole fetcher as long and reconnects.
 */
import { type TopicPartitionKey, topicPartitionKey } from "../common/topic-partition.ts";
import { InterBrokerClient, type InterBrokerSecurity } from "../network/inter-broker-client.ts";
import { ErrorCode, errorName } from "../protocol/errors.ts";
import type {
  FetchRequest,
  FetchResponse,
  FetchResponsePartitionData,
} from "../protocol/generated/fetch.ts";
import { ApiKey, type Init } from "../protocol/generated/index.ts";
import { assert } from "../util/assert.ts";
import type { Logger } from "../util/logger.ts";
import {
  FetchSessionHandler,
  type SessionFetch,
  type SessionPartitionData,
} from "./fetch-session-handler.ts";
import type { BrokerEndpoint } from "./metadata-cache.ts";
import type { Partition } from "./partition.ts";

/** Fetch with topic ids and ReplicaState (KIP-903); v12 when a topic id is unknown (all zeros). */
const FETCH_VERSION_WITH_IDS = 15;
const FETCH_VERSION_WITH_NAMES = 12;
/** Partitions one fetcher follows; a broker's share of a cluster's partitions stays far below. */
export const FETCHER_PARTITIONS_MAX = 100_000;

export interface ReplicaFetcherSettings {
  readonly localBrokerId: number;
  readonly maxWaitMs: number;
  readonly minBytes: number;
  readonly maxBytes: number;
  readonly partitionMaxBytes: number;
  readonly backoffMs: number;
  readonly socketTimeoutMs: number;
  readonly security: InterBrokerSecurity;
}

/** What the fetcher asks of the replica manager. */
export interface ReplicaFetcherHost {
  /** Appends batches fetched from the leader; adopts the leader's HW and log start offset. */
  appendAsFollower(partition: Partition, records: Uint8Array, leader: LeaderOffsets): void;
  /**
   * Called once per partition before its first fetch in a leader epoch: truncates whatever this
   * replica holds beyond the leader's log (leader epochs). Resolves when the partition may fetch.
   */
  truncateBeforeFetching(partition: Partition, client: InterBrokerClient): Promise<void>;
  /** The leader no longer has what this replica lacks: empty the log, start at `offset`. */
  startOverAt(partition: Partition, offset: bigint): void;
  endpoint(brokerId: number): BrokerEndpoint | undefined;
  /** The follower-side replication throttle (follower.replication.throttled.*). */
  readonly followerQuota?: FollowerQuota;
  readonly log: Logger;
}

/** What the fetcher needs of the follower-side ReplicationQuota. */
export interface FollowerQuota {
  isThrottled(topic: string, partition: number): boolean;
  isExceeded(nowMs: number): boolean;
  record(bytes: number, nowMs: number): void;
}

/** What a leader's fetch response says of its log besides the records. */
export interface LeaderOffsets {
  readonly highWatermark: bigint;
  readonly logStartOffset: bigint;
}

interface FetchTarget {
  readonly partition: Partition;
  readonly leaderEpoch: number;
  truncated: boolean;
  delayedUntilMs: number;
  /**
   * The last answer left this replica at the leader's high watermark (Kafka's
   * isReplicaInSync): only replicas that lag are throttled. False until the first answer.
   */
  caughtUp: boolean;
}

/** A partition as a Fetch lists it, with what the fetch session compares. */
interface WirePartition extends SessionPartitionData {
  readonly topic: string;
  readonly topicId: Uint8Array;
  readonly partition: number;
}

function wireData(t: FetchTarget): WirePartition {
  return {
    topic: t.partition.topic,
    topicId: t.partition.topicId,
    partition: t.partition.partition,
    fetchOffset: t.partition.log.logEndOffset,
    logStartOffset: t.partition.log.logStartOffset,
    currentLeaderEpoch: t.leaderEpoch,
  };
}

/** Partitions grouped by topic, in first-seen order. */
function byTopic(partitions: readonly WirePartition[]): WirePartition[][] {
  const groups = new Map<string, WirePartition[]>();
  for (const p of partitions) {
    const list = groups.get(p.topic) ?? [];
    list.push(p);
    groups.set(p.topic, list);
  }
  return [...groups.values()];
}

/** Top-level errors that only mean "start the session over" (answered at once, no backoff). */
const SESSION_ERRORS: ReadonlySet<number> = new Set([
  ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
  ErrorCode.INVALID_FETCH_SESSION_EPOCH,
  ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
]);

export class ReplicaFetcher {
  private readonly targets = new Map<TopicPartitionKey, FetchTarget>();
  private readonly session = new FetchSessionHandler<TopicPartitionKey, WirePartition>();
  private client: InterBrokerClient | null = null;
  private stopped = false;
  private wake: (() => void) | null = null;
  private readonly loop: Promise<void>;

  constructor(
    readonly sourceBrokerId: number,
    private readonly settings: ReplicaFetcherSettings,
    private readonly host: ReplicaFetcherHost,
  ) {
    assert(sourceBrokerId !== settings.localBrokerId, "a broker never fetches from itself");
    this.loop = this.run();
  }

  get partitionCount(): number {
    return this.targets.size;
  }

  /** Starts (or restarts, for a new epoch) following `partition` from this fetcher's leader. */
  addPartition(partition: Partition): void {
    assert(partition.leaderId === this.sourceBrokerId, `${partition.topic} led by another broker`);
    assert(this.targets.size < FETCHER_PARTITIONS_MAX, `fetcher holds ${this.targets.size}`);
    this.targets.set(topicPartitionKey(partition.topic, partition.partition), {
      partition,
      leaderEpoch: partition.leaderEpoch,
      truncated: false,
      delayedUntilMs: 0,
      caughtUp: false,
    });
    this.wakeUp();
  }

  removePartition(topic: string, partition: number): void {
    this.targets.delete(topicPartitionKey(topic, partition));
  }

  /** Stops the loop and closes the connection; a fetch in flight is abandoned. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.client?.close();
    this.wakeUp();
    await this.loop;
  }

  private wakeUp(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = null;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const ready = this.readyTargets();
      if (ready.length === 0) {
        await this.sleep(this.targets.size === 0 ? 60_000 : this.untilNextReadyMs());
        continue;
      }
      try {
        const client = await this.connection();
        for (const t of ready.filter((t) => !t.truncated)) await this.truncate(t, client);
        await this.fetchOnce(client);
      } catch (error) {
        if (this.stopped) break;
        this.host.log.warn(
          `fetching from broker ${this.sourceBrokerId} failed: ` +
            `${String(error)}; retrying in ${this.settings.backoffMs} ms`,
        );
        this.client?.close();
        this.client = null;
        await this.sleep(this.settings.backoffMs);
      }
    }
    this.client?.close();
  }

  private readyTargets(): FetchTarget[] {
    const nowMs = Date.now();
    return [...this.targets.values()].filter((t) => t.delayedUntilMs <= nowMs);
  }

  private untilNextReadyMs(): number {
    let soonest = Infinity;
    for (const t of this.targets.values()) soonest = Math.min(soonest, t.delayedUntilMs);
    return Math.max(1, soonest - Date.now());
  }

  private async connection(): Promise<InterBrokerClient> {
    if (this.client !== null && !this.client.isClosed) return this.client;
    const endpoint = this.host.endpoint(this.sourceBrokerId);
    if (endpoint === undefined) {
      throw new Error(`broker ${this.sourceBrokerId} is not known to be alive`);
    }
    this.client = await InterBrokerClient.connect(endpoint.host, endpoint.port, {
      ...this.settings.security,
      clientId: `quill-replica-fetcher-${this.settings.localBrokerId}`,
      connectTimeoutMs: this.settings.socketTimeoutMs,
    });
    return this.client;
  }

  private async truncate(target: FetchTarget, client: InterBrokerClient): Promise<void> {
    await this.host.truncateBeforeFetching(target.partition, client);
    // The partition may have been removed or re-added for a newer epoch meanwhile.
    const { topic, partition } = target.partition;
    const current = this.targets.get(topicPartitionKey(topic, partition));
    if (current === target) target.truncated = true;
  }

  /**
   * One Fetch through the fetch session (KIP-227): only partitions whose offsets moved are
   * listed, and the leader answers only partitions with news. A session error makes the next
   * fetch a full one at once, without the backoff of a failed fetch.
   */
  private async fetchOnce(client: InterBrokerClient): Promise<void> {
    const truncated = this.readyTargets().filter((t) => t.truncated);
    const targets = this.unthrottled(truncated);
    if (targets.length === 0) {
      // Everything left is throttled: wait a backoff for the rate to fall, as Kafka's fetcher
      // waits on an empty fetch.
      if (truncated.length > 0) await this.sleep(this.settings.backoffMs);
      return;
    }
    const usesIds = targets.every((t) => t.partition.topicId.some((b) => b !== 0));
    const version = usesIds ? FETCH_VERSION_WITH_IDS : FETCH_VERSION_WITH_NAMES;
    const wanted = new Map(targets.map((t) => [this.responseKey(t, usesIds), wireData(t)]));
    const session = this.session.build(wanted, version);
    let response: FetchResponse;
    try {
      response = await client.request(
        ApiKey.Fetch,
        version,
        this.buildRequest(session, wanted, version),
        this.settings.maxWaitMs + this.settings.socketTimeoutMs,
      );
    } catch (error) {
      this.session.handleError();
      throw error;
    }
    if (!this.session.handleResponse(response.errorCode, response.sessionId)) {
      if (SESSION_ERRORS.has(response.errorCode)) return;
      throw new Error(`Fetch answered ${errorName(response.errorCode)}`);
    }
    this.handleResponse(targets, response, usesIds);
  }

  /** Kafka's shouldFollowerThrottle: lagging throttled replicas wait while the rate is spent. */
  private unthrottled(targets: readonly FetchTarget[]): FetchTarget[] {
    const quota = this.host.followerQuota;
    if (quota === undefined || !quota.isExceeded(Date.now())) return [...targets];
    return targets.filter(
      (t) => t.caughtUp || !quota.isThrottled(t.partition.topic, t.partition.partition),
    );
  }

  private buildRequest(
    session: SessionFetch<TopicPartitionKey, WirePartition>,
    wanted: ReadonlyMap<TopicPartitionKey, WirePartition>,
    version: number,
  ): Init<FetchRequest> {
    const s = this.settings;
    const replica =
      version >= 15
        ? { replicaState: { replicaId: s.localBrokerId, replicaEpoch: -1n } }
        : { replicaId: s.localBrokerId };
    const topicOf = (list: readonly WirePartition[]) =>
      version >= 13 ? { topicId: list[0]!.topicId } : { topic: list[0]!.topic };
    return {
      ...replica,
      maxWaitMs: s.maxWaitMs,
      minBytes: s.minBytes,
      maxBytes: s.maxBytes,
      sessionId: session.sessionId,
      sessionEpoch: session.epoch,
      topics: byTopic(session.toSend.map((key) => wanted.get(key)!)).map((list) => ({
        ...topicOf(list),
        partitions: list.map((p) => ({
          partition: p.partition,
          currentLeaderEpoch: p.currentLeaderEpoch,
          fetchOffset: p.fetchOffset,
          logStartOffset: p.logStartOffset,
          partitionMaxBytes: s.partitionMaxBytes,
        })),
      })),
      forgottenTopicsData: byTopic(session.toForget).map((list) => ({
        ...topicOf(list),
        partitions: list.map((p) => p.partition),
      })),
    };
  }

  private handleResponse(
    targets: readonly FetchTarget[],
    response: FetchResponse,
    usesIds: boolean,
  ): void {
    const byKey = new Map(targets.map((t) => [this.responseKey(t, usesIds), t]));
    for (const topic of response.responses) {
      const name = usesIds ? Buffer.from(topic.topicId).toString("hex") : topic.topic;
      for (const p of topic.partitions) {
        const target = byKey.get(topicPartitionKey(name, p.partitionIndex));
        if (target === undefined) continue;
        // Dropped or re-added for another epoch while the fetch was in flight: ignore the answer.
        const own = target.partition;
        if (this.targets.get(topicPartitionKey(own.topic, own.partition)) !== target) continue;
        this.handlePartition(target, p);
      }
    }
  }

  private responseKey(t: FetchTarget, usesIds: boolean): TopicPartitionKey {
    const name = usesIds ? Buffer.from(t.partition.topicId).toString("hex") : t.partition.topic;
    return topicPartitionKey(name, t.partition.partition);
  }

  private handlePartition(target: FetchTarget, p: FetchResponsePartitionData): void {
    const partition = target.partition;
    const behindLeaderStart = p.logStartOffset > partition.log.logEndOffset;
    if (p.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE && behindLeaderStart) {
      this.host.log.warn(
        `${partition.topic}-${partition.partition}: the leader ` +
          `starts at ${p.logStartOffset}, past this replica's end; starting over there`,
      );
      this.host.startOverAt(partition, p.logStartOffset);
      return;
    }
    if (p.errorCode !== ErrorCode.NONE) {
      this.host.log.warn(
        `${partition.topic}-${partition.partition} from broker ` +
          `${this.sourceBrokerId}: ${errorName(p.errorCode)}; ` +
          `retrying in ${this.settings.backoffMs} ms`,
      );
      target.delayedUntilMs = Date.now() + this.settings.backoffMs;
      // Past the leader's end: the logs diverged after all, so ask the leader's epochs again.
      if (p.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE) target.truncated = false;
      return;
    }
    const records = p.records instanceof Uint8Array ? p.records : new Uint8Array(0);
    this.host.appendAsFollower(partition, records, p);
    const quota = this.host.followerQuota;
    if (quota?.isThrottled(partition.topic, partition.partition) === true) {
      quota.record(records.length, Date.now());
    }
    target.caughtUp = partition.log.logEndOffset >= p.highWatermark;
  }
}
