/**
 * The fetching side of an incremental fetch session (Kafka's FetchSessionHandler), as the
 * replica fetcher uses it: the first fetch lists every partition at epoch 0 and the leader
 * answers with a session id; later fetches name the session with the next epoch, list only the
 * partitions whose fetch offset, log start offset or leader epoch moved (or that are new), and
 * forget those no longer fetched. After a session error, a failed request or a switch between
 * topic names and ids, the next fetch is full again and closes the old session (epoch 0 with its
 * id), as Kafka's handler does.
 */
import { ErrorCode } from "../protocol/errors.ts";
import { FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID } from "./fetch-session-cache.ts";

/** What the leader's session remembers of one partition. */
export interface SessionPartitionData {
  readonly fetchOffset: bigint;
  readonly logStartOffset: bigint;
  readonly currentLeaderEpoch: number;
}

export interface SessionFetch<K, D> {
  readonly sessionId: number;
  readonly epoch: number;
  /** The partitions to list in the request (all of them for a full fetch). */
  readonly toSend: readonly K[];
  /** Partitions the session holds that this fetch no longer wants, as last sent. */
  readonly toForget: readonly D[];
}

export class FetchSessionHandler<K, D extends SessionPartitionData> {
  private sessionId = INVALID_SESSION_ID;
  private nextEpoch = INITIAL_EPOCH;
  private keying: unknown = null;
  /** What the session holds now, as last sent (valid only while nextEpoch > 0). */
  private sent = new Map<K, D>();
  private pending: Map<K, D> | null = null;

  /**
   * The next request for `wanted` (every partition to fetch, with its data now). `keying` names
   * how partitions are keyed on the wire (topic ids or names): a change starts a new session.
   */
  build(wanted: ReadonlyMap<K, D>, keying: unknown): SessionFetch<K, D> {
    if (keying !== this.keying && this.nextEpoch !== INITIAL_EPOCH) this.restart();
    this.keying = keying;
    this.pending = new Map(wanted);
    if (this.nextEpoch === INITIAL_EPOCH || this.nextEpoch === FINAL_EPOCH) {
      const toSend = [...wanted.keys()];
      return { sessionId: this.sessionId, epoch: INITIAL_EPOCH, toSend, toForget: [] };
    }
    const toSend: K[] = [];
    for (const [key, data] of wanted) {
      const before = this.sent.get(key);
      if (before === undefined || !sameData(before, data)) toSend.push(key);
    }
    const toForget = [...this.sent].filter(([key]) => !wanted.has(key)).map(([, d]) => d);
    return { sessionId: this.sessionId, epoch: this.nextEpoch, toSend, toForget };
  }

  /**
   * Takes the response's top-level error and session id. Returns false when the fetch must be
   * repeated as a full one (a session error), true when its partitions are to be handled.
   */
  handleResponse(errorCode: number, sessionId: number): boolean {
    if (errorCode !== ErrorCode.NONE) {
      if (errorCode === ErrorCode.FETCH_SESSION_ID_NOT_FOUND) this.sessionId = INVALID_SESSION_ID;
      this.restart();
      return false;
    }
    const wasFull = this.nextEpoch === INITIAL_EPOCH;
    if (sessionId === INVALID_SESSION_ID) {
      // No session (the leader's cache is full): keep sending full fetches.
      this.sessionId = INVALID_SESSION_ID;
      this.nextEpoch = INITIAL_EPOCH;
      return true;
    }
    this.sent = this.pending ?? new Map();
    this.sessionId = sessionId;
    this.nextEpoch = wasFull ? 1 : this.nextEpoch === 0x7fffffff ? 1 : this.nextEpoch + 1;
    return true;
  }

  /** A failed request: the next fetch is full and closes the session it had. */
  handleError(): void {
    this.restart();
  }

  private restart(): void {
    this.nextEpoch = INITIAL_EPOCH;
    this.sent = new Map();
    this.pending = null;
  }
}

function sameData(a: SessionPartitionData, b: SessionPartitionData): boolean {
  return (
    a.fetchOffset === b.fetchOffset &&
    a.logStartOffset === b.logStartOffset &&
    a.currentLeaderEpoch === b.currentLeaderEpoch
  );
}
