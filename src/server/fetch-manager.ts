/**
 * Kafka's FetchManager: what one Fetch request means for the session cache (KIP-227).
 *
 * - session 0, epoch -1: a full fetch without a session (Kafka's SessionlessFetchContext);
 * - any session, epoch 0: a full fetch; the session named (if any) is closed, and a new one is
 *   opened if a slot is free;
 * - session id, epoch -1: closes session `id`; a full fetch without a session;
 * - session id, epoch > 0: an incremental fetch: the listed partitions are added or updated, the
 *   forgotten ones removed, and every partition of the session is read.
 *
 * An incremental fetch naming a session the cache lacks is FETCH_SESSION_ID_NOT_FOUND, one with
 * another epoch than expected INVALID_FETCH_SESSION_EPOCH, one using topic ids where the session
 * used names (or back) FETCH_SESSION_TOPIC_ID_ERROR; each is the response's top-level error,
 * and the client starts over with a full fetch. An incremental response lists only partitions
 * with news: records, an error, or a high watermark or log start offset other than last answered;
 * a partition that returned records moves to the end of the session's order, so each fetch's byte
 * budget goes round the partitions as in Kafka.
 */
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import {
  type CachedPartition,
  type FetchSession,
  type FetchSessionCache,
  FINAL_EPOCH,
  INITIAL_EPOCH,
  INVALID_SESSION_ID,
  UNKNOWN_TOPIC_NAME,
} from "./fetch-session-cache.ts";

/** What a fetch of one partition answered, as far as the session cares. */
export interface PartitionAnswer {
  readonly errorCode: number;
  readonly highWatermark: bigint;
  readonly logStartOffset: bigint;
  readonly recordsBytes: number;
  /** KIP-392's preferred read replica, -1 when none. */
  readonly preferredReadReplica: number;
}

export interface FetchRequestMetadata {
  readonly sessionId: number;
  readonly epoch: number;
  /** A follower's fetch (its sessions outrank consumers' in eviction). */
  readonly privileged: boolean;
  readonly usesTopicIds: boolean;
  /** The name of a topic id this broker knows now (the metadata cache's). */
  readonly topicNameById: (topicId: Uint8Array) => string | undefined;
}

/** The partitions to read, and what to answer once read. */
export interface FetchContext {
  readonly partitions: readonly CachedPartition[];
  /** The session id to answer and which of `partitions` the response lists (by index). */
  respond(answers: readonly PartitionAnswer[]): { sessionId: number; listed: readonly number[] };
}

export class FetchManager {
  /** Incremental fetches answered (Kafka's IncrementalFetchSessionsPerSec, as a count). */
  incrementalFetches = 0;

  constructor(readonly cache: FetchSessionCache) {}

  /**
   * The context of one request; throws a KafkaError (a top-level error for the response) for a
   * session that is unknown, at another epoch, or keyed differently.
   */
  newContext(
    meta: FetchRequestMetadata,
    requested: readonly CachedPartition[],
    forgotten: readonly string[],
  ): FetchContext {
    if (meta.epoch === INITIAL_EPOCH || meta.epoch === FINAL_EPOCH) {
      if (meta.sessionId !== INVALID_SESSION_ID) this.cache.remove(meta.sessionId);
      return meta.epoch === FINAL_EPOCH ? sessionless(requested) : this.full(meta, requested);
    }
    const session = this.cache.get(meta.sessionId);
    if (session === undefined) {
      throw new KafkaError(
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
        "The fetch session ID was not found.",
      );
    }
    if (session.epoch !== meta.epoch) {
      throw new KafkaError(
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        `Expected epoch ${session.epoch}, but got ${meta.epoch}`,
      );
    }
    if (session.usesTopicIds !== meta.usesTopicIds) {
      throw new KafkaError(
        ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
        "The fetch session uses topic ids and the request does not, or the other way round",
      );
    }
    return this.incremental(session, meta, requested, forgotten);
  }

  private full(meta: FetchRequestMetadata, requested: readonly CachedPartition[]): FetchContext {
    return {
      partitions: requested,
      respond: (answers) => {
        requested.forEach((p, i) => {
          remember(p, answers[i]!);
        });
        const session = this.cache.maybeCreate(meta.privileged, meta.usesTopicIds, requested);
        return {
          sessionId: session?.id ?? INVALID_SESSION_ID,
          listed: requested.map((_, i) => i),
        };
      },
    };
  }

  private incremental(
    session: FetchSession,
    meta: FetchRequestMetadata,
    requested: readonly CachedPartition[],
    forgotten: readonly string[],
  ): FetchContext {
    for (const key of forgotten) session.partitions.delete(key);
    for (const p of requested) {
      const cached = session.partitions.get(p.key);
      if (cached === undefined) {
        session.partitions.set(p.key, p);
        continue;
      }
      cached.topic = p.topic;
      cached.fetchOffset = p.fetchOffset;
      cached.partitionMaxBytes = p.partitionMaxBytes;
      cached.currentLeaderEpoch = p.currentLeaderEpoch;
      cached.logStartOffset = p.logStartOffset;
    }
    // A follower can fetch a new partition before this broker has read its topic from
    // ZooKeeper; without this the session kept answering UNKNOWN_TOPIC_ID for that partition
    // until it was closed, and the follower never caught up.
    if (session.usesTopicIds) resolveUnknownNames(session, meta.topicNameById);
    session.advanceEpoch();
    this.cache.touch(session);
    this.incrementalFetches++;
    const partitions = [...session.partitions.values()];
    return {
      partitions,
      respond: (answers) => {
        const listed: number[] = [];
        partitions.forEach((p, i) => {
          const answer = answers[i]!;
          if (!hasNews(p, answer)) return;
          listed.push(i);
          remember(p, answer);
          if (answer.recordsBytes > 0 && session.partitions.delete(p.key)) {
            session.partitions.set(p.key, p);
          }
        });
        return { sessionId: session.id, listed };
      },
    };
  }
}

function resolveUnknownNames(
  session: FetchSession,
  topicNameById: FetchRequestMetadata["topicNameById"],
): void {
  for (const p of session.partitions.values()) {
    if (p.topic === UNKNOWN_TOPIC_NAME) p.topic = topicNameById(p.topicId) ?? UNKNOWN_TOPIC_NAME;
  }
}

function sessionless(requested: readonly CachedPartition[]): FetchContext {
  return {
    partitions: requested,
    respond: () => ({ sessionId: INVALID_SESSION_ID, listed: requested.map((_, i) => i) }),
  };
}

/** Kafka's CachedPartition.maybeUpdateResponseData, without the update. */
function hasNews(p: CachedPartition, a: PartitionAnswer): boolean {
  return (
    a.recordsBytes > 0 ||
    a.preferredReadReplica >= 0 ||
    a.errorCode !== ErrorCode.NONE ||
    a.highWatermark !== p.highWatermark ||
    a.logStartOffset !== p.leaderLogStartOffset
  );
}

function remember(p: CachedPartition, a: PartitionAnswer): void {
  // After an error the next answer must be sent whatever it says.
  p.highWatermark = a.errorCode === ErrorCode.NONE ? a.highWatermark : -1n;
  p.leaderLogStartOffset = a.logStartOffset;
}
