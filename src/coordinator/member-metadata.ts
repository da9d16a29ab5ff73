import { assert } from "../util/assert.ts";
import type { JoinGroupProtocol, JoinGroupResult, SyncGroupResult } from "./group-operations.ts";

export const EMPTY_BYTES: Uint8Array = new Uint8Array(0);

/**
 * One member of a classic group (Kafka's MemberMetadata): its protocols, timeouts, the
 * JoinGroup or SyncGroup request it has parked with the coordinator, and its session timer.
 * Not shared between groups; only the coordinator mutates it.
 */
export class MemberMetadata {
  /** A static member keeps its instance id across restarts while its member id changes. */
  memberId: string;
  assignment: Uint8Array = EMPTY_BYTES;
  /** The parked JoinGroup, answered when the rebalance completes. */
  awaitingJoin: ((result: JoinGroupResult) => void) | null = null;
  /** The parked SyncGroup, answered when the leader's assignment arrives. */
  awaitingSync: ((result: SyncGroupResult) => void) | null = null;
  /** Joined in the current rebalance and has not seen a JoinGroup response yet. */
  isNew = false;
  /** Set by every heartbeat-like request; cleared when the next session deadline is armed. */
  heartbeatSatisfied = false;
  sessionTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    memberId: string,
    readonly groupInstanceId: string | null,
    readonly clientId: string,
    readonly clientHost: string,
    public rebalanceTimeoutMs: number,
    public sessionTimeoutMs: number,
    readonly protocolType: string,
    public supportedProtocols: readonly JoinGroupProtocol[],
  ) {
    assert(memberId.length > 0, "a member id is never empty");
    assert(supportedProtocols.length > 0, `member ${memberId} must offer at least one protocol`);
    this.memberId = memberId;
  }

  get isStatic(): boolean {
    return this.groupInstanceId !== null;
  }

  get isAwaitingJoin(): boolean {
    return this.awaitingJoin !== null;
  }

  get isAwaitingSync(): boolean {
    return this.awaitingSync !== null;
  }

  /**
   * Whether the member has done what keeps it alive (Kafka's hasSatisfiedHeartbeat): a member
   * parked in a rebalance counts as alive, except a brand-new one, which only the new-member
   * join timeout covers.
   */
  get hasSatisfiedHeartbeat(): boolean {
    if (this.isNew) return this.heartbeatSatisfied;
    if (this.isAwaitingJoin || this.isAwaitingSync) return true;
    return this.heartbeatSatisfied;
  }

  protocolNames(): string[] {
    return this.supportedProtocols.map((p) => p.name);
  }

  /** The metadata this member sent for one protocol; the protocol must be one it offered. */
  metadata(protocolName: string): Uint8Array {
    const protocol = this.supportedProtocols.find((p) => p.name === protocolName);
    assert(protocol !== undefined, `member ${this.memberId} does not support ${protocolName}`);
    return protocol.metadata;
  }

  /** Whether a rejoin carries exactly the protocols (names, order and bytes) already known. */
  matches(protocols: readonly JoinGroupProtocol[]): boolean {
    return sameProtocols(protocols, this.supportedProtocols);
  }

  /** The member's vote: its most preferred protocol among those every member supports. */
  vote(candidates: ReadonlySet<string>): string {
    const choice = this.supportedProtocols.find((p) => candidates.has(p.name));
    assert(choice !== undefined, `member ${this.memberId} supports none of the group's protocols`);
    return choice.name;
  }
}

/** Whether two JoinGroup protocol lists are the same: names, order and metadata bytes. */
export function sameProtocols(
  a: readonly JoinGroupProtocol[],
  b: readonly JoinGroupProtocol[],
): boolean {
  if (a.length !== b.length) return false;
  return a.every((p, i) => p.name === b[i]!.name && bytesEqual(p.metadata, b[i]!.metadata));
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
