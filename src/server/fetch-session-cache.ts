/**
 * Incremental fetch sessions (KIP-227), Kafka's FetchSessionCache: a client that fetches the
 * same partitions again and again names a session instead of listing them all; the broker keeps
 * each session's partitions with what the client last asked (fetch offset, byte limit) and what
 * it last answered (high watermark, log start offset), so requests list only what changed and
 * responses only partitions with news.
 *
 * The cache holds at most `max.incremental.fetch.session.cache.slots` sessions. When full, a new
 * session takes the slot of one unused for longer than EVICTION_MS; failing that, of the least
 * valuable evictable one, as Kafka ranks them: sessions of consumers before followers', then
 * fewer partitions first, then the older id. A session is evictable by anyone once it is older
 * than EVICTION_MS; a consumer's session is evictable at once by a follower's new session
 * (followers are "privileged"). Failing both, no session is created: the response's session id 0
 * tells the client to keep sending full fetches.
 */
import type { LeaderEpoch, Offset } from "../common/branded.ts";
import { assert } from "../util/assert.ts";

/** Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS. */
export const EVICTION_MS = 120_000;
/** Session epochs: 0 opens a session, -1 asks for none (or closes the one named). */
export const INITIAL_EPOCH = 0;
export const FINAL_EPOCH = -1;
export const INVALID_SESSION_ID = 0;

/** The topic name of a partition fetched by a topic id this broker does not know (yet). */
export const UNKNOWN_TOPIC_NAME = "";

/** One partition of a session: the client's last request for it and the last answer. */
export interface CachedPartition {
  readonly key: string;
  /**
   * UNKNOWN_TOPIC_NAME while its topic id is unknown here; an incremental fetch looks it up
   * again (Kafka's CachedPartition.maybeResolveUnknownName), since the follower does not list
   * a partition whose offsets did not move.
   */
  topic: string;
  readonly topicId: Uint8Array;
  readonly partition: number;
  fetchOffset: Offset;
  partitionMaxBytes: number;
  currentLeaderEpoch: LeaderEpoch;
  logStartOffset: Offset;
  /** The last high watermark answered; -1 after an error, so the next answer is sent. */
  highWatermark: bigint;
  leaderLogStartOffset: bigint;
}

export class FetchSession {
  /** The epoch the next incremental request must carry. */
  epoch = 1;
  lastUsedMs: number;
  /** Insertion order is fetch order; partitions that returned data move to the end. */
  readonly partitions = new Map<string, CachedPartition>();

  constructor(
    readonly id: number,
    readonly privileged: boolean,
    readonly usesTopicIds: boolean,
    readonly creationMs: number,
  ) {
    this.lastUsedMs = creationMs;
  }

  /** Kafka's nextEpoch: wraps from Integer.MAX_VALUE to 1. */
  advanceEpoch(): void {
    this.epoch = this.epoch === 0x7fffffff ? 1 : this.epoch + 1;
  }

  /**
   * Kafka's EvictableKey order (not privileged first, then fewer partitions, then lower id),
   * negative when this session is worth less than `other`.
   */
  valueOver(other: FetchSession): number {
    if (this.privileged !== other.privileged) return this.privileged ? 1 : -1;
    if (this.partitions.size !== other.partitions.size) {
      return this.partitions.size - other.partitions.size;
    }
    return this.id - other.id;
  }
}

/** A new session displaces `victim` only if worth strictly more (Kafka keys it with id 0). */
const worthMore = (candidate: FetchSession, victim: FetchSession) =>
  candidate.privileged !== victim.privileged
    ? candidate.privileged
    : candidate.partitions.size > victim.partitions.size;

export class FetchSessionCache {
  private readonly sessions = new Map<number, FetchSession>();
  /** Sessions by last use, oldest first (a Map keeps insertion order; a touch re-inserts). */
  private readonly byLastUse = new Map<number, FetchSession>();
  /** Sessions created and evicted, for the bench and tests (Kafka's metrics of the same name). */
  incrementalFetchSessionEvictions = 0;

  constructor(
    readonly maxSessions: number,
    private readonly nowMs: () => number = Date.now,
    private readonly random: () => number = Math.random,
  ) {
    assert(maxSessions >= 0, `max.incremental.fetch.session.cache.slots ${maxSessions}`);
  }

  get size(): number {
    return this.sessions.size;
  }

  get(id: number): FetchSession | undefined {
    return this.sessions.get(id);
  }

  /** Marks the session used now (its place in the stale order). */
  touch(session: FetchSession): void {
    session.lastUsedMs = this.nowMs();
    this.byLastUse.delete(session.id);
    this.byLastUse.set(session.id, session);
  }

  remove(id: number): FetchSession | undefined {
    const session = this.sessions.get(id);
    if (session === undefined) return undefined;
    this.sessions.delete(id);
    this.byLastUse.delete(id);
    return session;
  }

  /**
   * Creates a session holding `partitions` if a slot is free or can be freed; returns null
   * (the client then gets session id 0) otherwise.
   */
  maybeCreate(
    privileged: boolean,
    usesTopicIds: boolean,
    partitions: readonly CachedPartition[],
  ): FetchSession | null {
    const now = this.nowMs();
    const session = new FetchSession(this.newId(), privileged, usesTopicIds, now);
    for (const p of partitions) session.partitions.set(p.key, p);
    if (this.sessions.size >= this.maxSessions && !this.tryEvict(session, now)) return null;
    this.sessions.set(session.id, session);
    this.byLastUse.set(session.id, session);
    return session;
  }

  private tryEvict(candidate: FetchSession, now: number): boolean {
    const stalest = this.byLastUse.values().next().value;
    if (stalest === undefined) return false;
    if (now - stalest.lastUsedMs > EVICTION_MS) return this.evict(stalest);
    let victim: FetchSession | undefined;
    for (const s of this.sessions.values()) {
      const evictable = now - s.creationMs > EVICTION_MS || (candidate.privileged && !s.privileged);
      if (evictable && (victim === undefined || s.valueOver(victim) < 0)) victim = s;
    }
    if (victim === undefined || !worthMore(candidate, victim)) return false;
    return this.evict(victim);
  }

  private evict(session: FetchSession): true {
    this.remove(session.id);
    this.incrementalFetchSessionEvictions++;
    return true;
  }

  /** A random positive id not in use (0 means "no session"). */
  private newId(): number {
    for (;;) {
      const id = 1 + Math.floor(this.random() * 0x7ffffffe);
      if (!this.sessions.has(id)) return id;
    }
  }
}
