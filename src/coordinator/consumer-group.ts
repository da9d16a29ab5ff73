import type { TopicNames } from "../common/internal-topics.ts";
import { type TopicPartitionKey, topicPartitionKey } from "../common/topic-partition.ts";
import { assert } from "../util/assert.ts";
import { compileRe2Pattern } from "../util/safe-pattern.ts";
import { ASSIGNORS, type Assignment, type Assignor } from "./consumer-group-assignors.ts";
import { CONSUMER_PROTOCOL_TYPE } from "./consumer-protocol.ts";

/**
 * A KIP-848 consumer group (Kafka's `ConsumerGroup` with `CurrentAssignmentBuilder`): members
 * with epochs, the group epoch (bumped by every membership, subscription or topic change), the
 * target assignment computed by the server-side assignor for that epoch, and each member's
 * reconciliation towards its target. A member gives up partitions before anyone else gets them:
 * it first keeps only what stays its own, and moves to the new epoch once its heartbeat shows
 * the rest released; a partition another member still holds is handed out when it is free.
 */

export type MemberState = "stable" | "unrevoked_partitions" | "unreleased_partitions";

/**
 * What a member using the classic protocol (JoinGroup, SyncGroup, Heartbeat) inside a consumer
 * group keeps from its JoinGroup: its session timeout and its protocols with their metadata
 * (Kafka's ClassicMemberMetadata).
 */
export interface ClassicMemberInfo {
  readonly sessionTimeoutMs: number;
  readonly protocols: readonly { readonly name: string; readonly metadata: Uint8Array }[];
}

export interface ConsumerMember {
  readonly memberId: string;
  instanceId: string | null;
  rackId: string | null;
  readonly clientId: string;
  readonly clientHost: string;
  subscribedTopicNames: readonly string[];
  /** A KIP-848 regex subscription (RE2 syntax), resolved by the group against its topics. */
  subscribedTopicRegex: string | null;
  serverAssignor: string | null;
  rebalanceTimeoutMs: number;
  memberEpoch: number;
  previousMemberEpoch: number;
  state: MemberState;
  /** What the member owns now, as the coordinator told it. */
  assigned: Assignment;
  /** What it must give up before moving to the target epoch. */
  revoking: Assignment;
  sessionTimer: ReturnType<typeof setTimeout> | null;
  rebalanceTimer: ReturnType<typeof setTimeout> | null;
  /** Set for a classic-protocol member, null for a ConsumerGroupHeartbeat one. */
  classic: ClassicMemberInfo | null;
  /** A classic member's deadline to rejoin once told REBALANCE_IN_PROGRESS, and to sync. */
  joinTimer: ReturnType<typeof setTimeout> | null;
  syncTimer: ReturnType<typeof setTimeout> | null;
}

export const EMPTY_ASSIGNMENT: Assignment = new Map();

/** The epoch of a static member that left for now and whose partitions wait for it. */
export const STATIC_LEFT_EPOCH = -2;

export function assignmentSize(a: Assignment): number {
  let n = 0;
  for (const partitions of a.values()) n += partitions.size;
  return n;
}

function keys(a: Assignment): TopicPartitionKey[] {
  return [...a].flatMap(([topic, ps]) => [...ps].map((p) => topicPartitionKey(topic, p)));
}

function filter(a: Assignment, keep: (topic: string, p: number) => boolean): Assignment {
  const out = new Map<string, Set<number>>();
  for (const [topic, partitions] of a) {
    const kept = [...partitions].filter((p) => keep(topic, p));
    if (kept.length > 0) out.set(topic, new Set(kept));
  }
  return out;
}

const has = (a: Assignment, topic: string, p: number) => a.get(topic)?.has(p) === true;

export function sameAssignment(a: Assignment, b: Assignment): boolean {
  return assignmentSize(a) === assignmentSize(b) && keys(a).every((k) => keysSet(b).has(k));
}

function keysSet(a: Assignment): Set<TopicPartitionKey> {
  return new Set(keys(a));
}

export class ConsumerGroup {
  groupEpoch = 0;
  targetEpoch = 0;
  /** Something changed that the next group epoch covers (one bump however many changes). */
  private changed = false;
  assignorName: string;
  readonly members = new Map<string, ConsumerMember>();
  /** The target assignment of `targetEpoch`, by member id. */
  private target = new Map<string, Assignment>();
  /** Which member holds each partition (assigned or being revoked). */
  private readonly owners = new Map<TopicPartitionKey, string>();
  /** Partition counts of the subscribed topics the target was computed from. */
  private partitionCounts = new Map<string, number>();
  /** The topics each member regex matched, and the version of the topic names they saw. */
  private resolvedRegexes = new Map<string, readonly string[]>();
  private resolvedVersion = -1;

  constructor(
    readonly groupId: string,
    private readonly assignors: readonly string[],
  ) {
    assert(assignors.length > 0, "group.consumer.assignors is empty");
    this.assignorName = assignors[0]!;
  }

  get isEmpty(): boolean {
    return this.members.size === 0;
  }

  /** Kafka's consumer group states: Empty, Assigning, Reconciling, Stable. */
  get state(): string {
    if (this.members.size === 0) return "Empty";
    if (this.changed || this.groupEpoch > this.targetEpoch) return "Assigning";
    for (const m of this.members.values()) {
      if (m.memberEpoch === STATIC_LEFT_EPOCH) continue; // away, its partitions kept for it
      if (m.memberEpoch !== this.targetEpoch || m.state !== "stable") return "Reconciling";
    }
    return "Stable";
  }

  /** The group epoch once a pending change is counted (Kafka bumps it at the change). */
  get latestEpoch(): number {
    return this.changed ? this.groupEpoch + 1 : this.groupEpoch;
  }

  /** Whether every member uses the classic protocol, but for `except`. */
  allClassicExcept(except: string | null): boolean {
    for (const m of this.members.values()) {
      if (m.memberId !== except && m.classic === null) return false;
    }
    return true;
  }

  /**
   * Kafka's supportsClassicProtocols: a classic member may join when its protocol type is
   * `consumer` and it shares a protocol name with every other classic member.
   */
  supportsClassicProtocols(memberId: string, protocolType: string, names: string[]): boolean {
    if (protocolType !== CONSUMER_PROTOCOL_TYPE || names.length === 0) return false;
    const others = [...this.members.values()].filter(
      (m) => m.classic !== null && m.memberId !== memberId,
    );
    return names.some((n) => others.every((m) => m.classic!.protocols.some((p) => p.name === n)));
  }

  /** Whether a partition of the member's target is still held by another member. */
  waitingOnUnreleased(member: ConsumerMember): boolean {
    for (const [topic, partitions] of this.targetOf(member.memberId)) {
      for (const p of partitions) {
        const holder = this.owners.get(topicPartitionKey(topic, p));
        if (holder !== undefined && holder !== member.memberId) return true;
      }
    }
    return false;
  }

  targetOf(memberId: string): Assignment {
    return this.target.get(memberId) ?? EMPTY_ASSIGNMENT;
  }

  /** Every topic some member subscribes to, by name or regex. */
  subscribedTopics(): Set<string> {
    const out = new Set<string>();
    for (const m of this.members.values()) for (const t of this.topicsOf(m)) out.add(t);
    return out;
  }

  /** The topics a member subscribes to: its names and what its regex matched when resolved. */
  topicsOf(member: ConsumerMember): readonly string[] {
    if (member.subscribedTopicRegex === null) return member.subscribedTopicNames;
    const matched = this.resolvedRegexes.get(member.subscribedTopicRegex) ?? [];
    if (member.subscribedTopicNames.length === 0) return matched;
    return [...new Set([...member.subscribedTopicNames, ...matched])].sort();
  }

  /**
   * Resolves the members' regexes against the cluster's topics when a regex is new or the set
   * of topics changed since the last resolution (Kafka refreshes on metadata changes too). A
   * regex that now matches other topics bumps the group epoch: its members are reassigned.
   */
  resolveRegexes(topics: TopicNames): void {
    const regexes = new Set<string>();
    for (const m of this.members.values()) {
      if (m.subscribedTopicRegex !== null) regexes.add(m.subscribedTopicRegex);
    }
    const known = [...regexes].every((r) => this.resolvedRegexes.has(r));
    if (topics.version === this.resolvedVersion && known) return;
    const next = new Map<string, readonly string[]>();
    for (const regex of regexes) {
      const pattern = compileRe2Pattern(regex);
      // Heartbeats refuse a regex that does not compile; a stored one from elsewhere matches none.
      const matched =
        typeof pattern === "string" ? [] : topics.names.filter((n) => pattern.test(n));
      const before = this.resolvedRegexes.get(regex);
      if (before !== undefined && !sameList(before, matched)) this.bumpEpoch();
      next.set(regex, matched);
    }
    this.resolvedRegexes = next;
    this.resolvedVersion = topics.version;
  }

  /** What the group computed that its members do not show: for the membership record. */
  computedState(): {
    target: ReadonlyMap<string, Assignment>;
    partitionCounts: ReadonlyMap<string, number>;
    epochBumpPending: boolean;
  } {
    const { target, partitionCounts, changed } = this;
    return { target, partitionCounts, epochBumpPending: changed };
  }

  /**
   * Takes over a stored group: its epochs, target and members (their timers unset). Who owns
   * which partition follows from the members' assigned and revoking partitions.
   */
  restore(
    epochs: { groupEpoch: number; targetEpoch: number; assignorName: string; bump: boolean },
    target: Map<string, Assignment>,
    partitionCounts: Map<string, number>,
    members: readonly ConsumerMember[],
  ): void {
    assert(this.members.size === 0, `${this.groupId} is restored with members`);
    this.groupEpoch = epochs.groupEpoch;
    this.targetEpoch = epochs.targetEpoch;
    this.assignorName = epochs.assignorName;
    this.changed = epochs.bump;
    this.target = target;
    this.partitionCounts = partitionCounts;
    for (const m of members) {
      this.members.set(m.memberId, m);
      for (const k of [...keys(m.assigned), ...keys(m.revoking)]) this.owners.set(k, m.memberId);
    }
  }

  /** Marks a change of members, subscriptions or topics: the next target is for a new epoch. */
  bumpEpoch(): void {
    this.changed = true;
  }

  /** Bumps the group epoch when a subscribed topic appeared, vanished or grew. */
  updatePartitionCounts(counts: Map<string, number>): void {
    const same =
      counts.size === this.partitionCounts.size &&
      [...counts].every(([t, n]) => this.partitionCounts.get(t) === n);
    if (same) return;
    this.partitionCounts = counts;
    this.bumpEpoch();
  }

  add(member: ConsumerMember): void {
    this.members.set(member.memberId, member);
    this.bumpEpoch();
  }

  /** Removes a member and frees whatever it held. */
  remove(memberId: string): ConsumerMember | undefined {
    const member = this.members.get(memberId);
    if (member === undefined) return undefined;
    this.members.delete(memberId);
    this.target.delete(memberId);
    for (const k of [...keys(member.assigned), ...keys(member.revoking)]) {
      if (this.owners.get(k) === memberId) this.owners.delete(k);
    }
    this.bumpEpoch();
    return member;
  }

  /** The member holding a static instance id, if any. */
  staticMember(instanceId: string): ConsumerMember | undefined {
    for (const m of this.members.values()) if (m.instanceId === instanceId) return m;
    return undefined;
  }

  /**
   * KIP-848 static membership: a member rejoining under a known instance id takes over the
   * previous member's epoch, partitions and target under its new member id. Nothing is
   * reassigned, so the group epoch stays (Kafka's replaceStaticMember).
   */
  replaceStaticMember(previous: ConsumerMember, memberId: string): ConsumerMember {
    assert(this.members.get(previous.memberId) === previous, `${previous.memberId} is not here`);
    assert(!this.members.has(memberId), `${memberId} is already a member of ${this.groupId}`);
    const member: ConsumerMember = {
      ...previous,
      memberId,
      memberEpoch: previous.previousMemberEpoch,
      sessionTimer: null,
      rebalanceTimer: null,
      joinTimer: null,
      syncTimer: null,
    };
    this.members.delete(previous.memberId);
    this.members.set(memberId, member);
    const target = this.target.get(previous.memberId);
    this.target.delete(previous.memberId);
    if (target !== undefined) this.target.set(memberId, target);
    for (const [k, holder] of this.owners) {
      if (holder === previous.memberId) this.owners.set(k, memberId);
    }
    return member;
  }

  /** The assignor the members prefer most (ties: the configured order), else the default. */
  private chooseAssignor(): Assignor {
    const votes = new Map<string, number>();
    for (const m of this.members.values()) {
      if (m.serverAssignor !== null)
        votes.set(m.serverAssignor, (votes.get(m.serverAssignor) ?? 0) + 1);
    }
    let best = this.assignors[0]!;
    for (const name of this.assignors) {
      if ((votes.get(name) ?? 0) > (votes.get(best) ?? 0)) best = name;
    }
    this.assignorName = best;
    return ASSIGNORS.get(best)!;
  }

  /** Computes the target assignment of the current group epoch, if not done yet. */
  maybeComputeTarget(): void {
    if (this.changed) this.groupEpoch++;
    this.changed = false;
    if (this.targetEpoch === this.groupEpoch) return;
    const assignor = this.chooseAssignor();
    const members = [...this.members.values()].map((m) => ({
      memberId: m.memberId,
      topics: this.topicsOf(m),
    }));
    this.target = assignor({
      members,
      partitionCounts: this.partitionCounts,
      previous: this.target,
    });
    this.targetEpoch = this.groupEpoch;
  }

  /**
   * One reconciliation step for a member (Kafka's CurrentAssignmentBuilder), given the
   * partitions its heartbeat says it owns (null: unchanged since its last heartbeat).
   */
  reconcile(member: ConsumerMember, owned: Assignment | null): void {
    if (member.state === "unrevoked_partitions") {
      const stillOwned = owned === null || keys(member.revoking).some((k) => ownedHas(owned, k));
      if (stillOwned) return;
      for (const k of keys(member.revoking)) {
        if (this.owners.get(k) === member.memberId) this.owners.delete(k);
      }
      member.revoking = EMPTY_ASSIGNMENT;
      member.state = "stable";
    }
    if (member.memberEpoch === this.targetEpoch && member.state === "stable") return;
    const target = this.targetOf(member.memberId);
    const kept = filter(member.assigned, (t, p) => has(target, t, p));
    const toRevoke = filter(member.assigned, (t, p) => !has(target, t, p));
    if (assignmentSize(toRevoke) > 0) {
      // A member that says it no longer owns them (an eager classic member rejoins with
      // nothing) skips the revocation step, as Kafka's CurrentAssignmentBuilder does.
      if (owned === null || keys(toRevoke).some((k) => ownedHas(owned, k))) {
        member.assigned = kept;
        member.revoking = toRevoke;
        member.state = "unrevoked_partitions";
        return;
      }
      for (const k of keys(toRevoke)) {
        if (this.owners.get(k) === member.memberId) this.owners.delete(k);
      }
      member.assigned = kept;
    }
    const mine = (t: string, p: number) => {
      const holder = this.owners.get(topicPartitionKey(t, p));
      return holder === undefined || holder === member.memberId;
    };
    const granted = filter(target, mine);
    for (const k of keys(granted)) this.owners.set(k, member.memberId);
    member.assigned = granted;
    if (member.memberEpoch !== this.targetEpoch) {
      member.previousMemberEpoch = member.memberEpoch;
      member.memberEpoch = this.targetEpoch;
    }
    member.state =
      assignmentSize(granted) < assignmentSize(target) ? "unreleased_partitions" : "stable";
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

function ownedHas(owned: Assignment, key: TopicPartitionKey): boolean {
  return keys(owned).includes(key);
}

export function newMember(memberId: string, clientId: string, clientHost: string): ConsumerMember {
  return {
    memberId,
    instanceId: null,
    rackId: null,
    clientId,
    clientHost,
    subscribedTopicNames: [],
    subscribedTopicRegex: null,
    serverAssignor: null,
    rebalanceTimeoutMs: 300_000,
    memberEpoch: 0,
    previousMemberEpoch: -1,
    state: "stable",
    assigned: EMPTY_ASSIGNMENT,
    revoking: EMPTY_ASSIGNMENT,
    sessionTimer: null,
    rebalanceTimer: null,
    classic: null,
    joinTimer: null,
    syncTimer: null,
  };
}
