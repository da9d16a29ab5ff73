import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { assert } from "../util/assert.ts";

/**
 * Share sessions (KIP-932; Kafka's ShareSessionCache): one per share consumer and broker, keyed
 * by group and member id. Like a KIP-227 fetch session it remembers the partitions the consumer
 * fetches, so later requests list only what changed, and an epoch that orders the requests:
 * epoch 0 opens (or replaces) the session, each request must carry the next epoch, -1 closes it.
 * A session ends with the connection that opened it (Kafka's disconnect listener on its
 * ShareSessionCache), and its member's records are released then; a session replaced by the
 * member's next opening (epoch 0, on the same or a new connection) is dropped without releasing
 * them, as in Kafka: the member still holds them and may acknowledge them in its new session,
 * and the old connection closing later no longer touches the new session. A full cache drops its
 * least recently used session, whose consumer then hears SHARE_SESSION_NOT_FOUND and opens a
 * new one.
 */

export const INITIAL_EPOCH = 0;
export const FINAL_EPOCH = -1;

export interface ShareSession {
  readonly groupId: string;
  readonly memberId: string;
  /** The epoch the next request must carry. */
  nextEpoch: number;
  /** Partitions in the session, as "topic\0partition". */
  readonly partitions: Set<string>;
  /** Stops watching the connection that opened the session. */
  unwatch: () => void;
}

/** Registers a listener called once when a connection closes; returns its unsubscribe. */
export type OnDisconnect = (listener: () => void) => () => void;

export function sessionPartitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

export function parseSessionPartitionKey(key: string): { topic: string; partition: number } {
  const cut = key.lastIndexOf("\u0000");
  return { topic: key.slice(0, cut), partition: Number(key.slice(cut + 1)) };
}

export class ShareSessionCache {
  /** Insertion order is recency: a used session is moved to the end. */
  private readonly sessions = new Map<string, ShareSession>();

  constructor(
    private readonly maxSessions: number,
    /**
     * Called with a session that was closed (epoch -1), evicted or whose connection closed:
     * its member's records are released. Not called for a replaced session.
     */
    private readonly onRemoved: (session: ShareSession) => void,
  ) {
    assert(maxSessions > 0, `maxSessions must be positive, got ${maxSessions}`);
  }

  get size(): number {
    return this.sessions.size;
  }

  /**
   * Opens a new session (epoch 0) on the connection `onDisconnect` watches, replacing the
   * member's previous one (whose records stay the member's).
   */
  open(groupId: string, memberId: string, onDisconnect: OnDisconnect): ShareSession {
    const key = sessionKey(groupId, memberId);
    const old = this.sessions.get(key);
    if (old !== undefined) {
      this.sessions.delete(key);
      old.unwatch();
    }
    if (this.sessions.size >= this.maxSessions) {
      const [, oldest] = this.sessions.entries().next().value!;
      this.remove(oldest);
    }
    const session: ShareSession = {
      groupId,
      memberId,
      nextEpoch: 1,
      partitions: new Set(),
      unwatch: () => {},
    };
    this.sessions.set(key, session);
    // Registered last: on a connection already closed the listener runs at once.
    session.unwatch = onDisconnect(() => this.remove(session));
    assert(this.sessions.size <= this.maxSessions, `${this.sessions.size} share sessions`);
    return session;
  }

  /**
   * The session a request with a non-zero epoch continues: SHARE_SESSION_NOT_FOUND or
   * INVALID_SHARE_SESSION_EPOCH otherwise. A matching epoch moves the expected one on.
   */
  continue(groupId: string, memberId: string, epoch: number): ShareSession {
    const key = sessionKey(groupId, memberId);
    const session = this.sessions.get(key);
    if (session === undefined) {
      throw new KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND, `No share session for ${memberId}.`);
    }
    if (epoch !== FINAL_EPOCH && epoch !== session.nextEpoch) {
      throw new KafkaError(
        ErrorCode.INVALID_SHARE_SESSION_EPOCH,
        `Share session epoch ${epoch}, expected ${session.nextEpoch}.`,
      );
    }
    session.nextEpoch = session.nextEpoch === 0x7fffffff ? 1 : session.nextEpoch + 1;
    this.sessions.delete(key);
    this.sessions.set(key, session);
    return session;
  }

  /** Whether the session is still its member's (not replaced, closed or disconnected). */
  isOpen(session: ShareSession): boolean {
    return this.sessions.get(sessionKey(session.groupId, session.memberId)) === session;
  }

  /**
   * Ends a session and releases its member's records; nothing when it is no longer the
   * member's session (replaced or already removed).
   */
  remove(session: ShareSession): void {
    const key = sessionKey(session.groupId, session.memberId);
    if (this.sessions.get(key) !== session) return;
    this.sessions.delete(key);
    session.unwatch();
    this.onRemoved(session);
  }

  /** Drops every session of a group (its share-partition state is being reset or deleted). */
  removeGroup(groupId: string): void {
    for (const s of [...this.sessions.values()]) if (s.groupId === groupId) this.remove(s);
  }
}

function sessionKey(groupId: string, memberId: string): string {
  return `${groupId}\u0000${memberId}`;
}
