import { randomUUID } from "node:crypto";
import type { TopicPartitionKey } from "../common/topic-partition.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { assert } from "../util/assert.ts";
import { CONSUMER_PROTOCOL_TYPE, subscribedTopics } from "./consumer-protocol.ts";
import type {
  JoinGroupMember,
  JoinGroupProtocol,
  JoinGroupResult,
  SyncGroupResult,
} from "./group-operations.ts";
import { assertTransition, canTransition, GroupState } from "./group-state.ts";
import { EMPTY_BYTES, type MemberMetadata } from "./member-metadata.ts";
import type { CommittedOffset } from "./offset-store.ts";

/** What the delayed join is waiting for: the initial delay of a new group, or all members. */
export type JoinWait = "initial" | "members";

/**
 * One classic consumer group (Kafka's GroupMetadata / ClassicGroup): members, generation,
 * leader, chosen protocol, and the committed offsets cached from the offset store. It keeps its
 * own bookkeeping consistent (protocol counts, static-member index, awaiting-join count);
 * the rebalance decisions and timers live in GroupCoordinator.
 */
export class ClassicGroup {
  state: GroupState = GroupState.Empty;
  generationId = 0;
  protocolType: string | null = null;
  protocolName: string | null = null;
  leaderId: string | null = null;
  /** Set when a member joins during the initial delay, so the delay is extended once more. */
  newMemberAdded = false;
  /**
   * Members told MEMBER_ID_REQUIRED that have not rejoined yet, with the timer that drops them
   * after their session timeout; they hold up the rebalance until then.
   */
  readonly pendingMembers = new Map<string, ReturnType<typeof setTimeout>>();
  /** Members of the current generation that have not sent SyncGroup yet. */
  readonly pendingSyncMembers = new Set<string>();
  joinTimer: ReturnType<typeof setTimeout> | null = null;
  joinWait: JoinWait = "members";
  syncTimer: ReturnType<typeof setTimeout> | null = null;
  /** Committed offsets by partition; null until loaded from the store. */
  offsets: Map<TopicPartitionKey, CommittedOffset> | null = null;
  /** The store read in flight, so concurrent requests share one load. */
  offsetsLoading: Promise<void> | null = null;
  /** The protocol type the offset store holds for this group; undefined until known. */
  storedProtocolType: string | null | undefined = undefined;

  private readonly members = new Map<string, MemberMetadata>();
  private readonly staticMembers = new Map<string, string>();
  /** How many members offer each protocol name, so supportsProtocols is O(protocols). */
  private readonly protocolCounts = new Map<string, number>();
  private awaitingJoinCount = 0;
  /** Topics the members subscribe to, decoded at each generation; null means "unknown". */
  private subscribedTopicSet: Set<string> | null = null;

  constructor(readonly groupId: string) {}

  is(state: GroupState): boolean {
    return this.state === state;
  }

  transitionTo(target: GroupState): void {
    assertTransition(this.groupId, this.state, target);
    this.state = target;
  }

  get canRebalance(): boolean {
    return canTransition(this.state, GroupState.PreparingRebalance);
  }

  get size(): number {
    return this.members.size;
  }

  get awaitingJoinMembers(): number {
    return this.awaitingJoinCount;
  }

  has(memberId: string): boolean {
    return this.members.has(memberId);
  }

  get(memberId: string): MemberMetadata {
    const member = this.members.get(memberId);
    assert(member !== undefined, `group ${this.groupId} has no member ${memberId}`);
    return member;
  }

  allMembers(): MemberMetadata[] {
    return [...this.members.values()];
  }

  isLeader(memberId: string): boolean {
    return this.leaderId === memberId;
  }

  staticMemberId(groupInstanceId: string): string | undefined {
    return this.staticMembers.get(groupInstanceId);
  }

  generateMemberId(clientId: string, groupInstanceId: string | null): string {
    return `${groupInstanceId ?? clientId}-${randomUUID()}`;
  }

  add(member: MemberMetadata, callback: ((result: JoinGroupResult) => void) | null): void {
    assert(!this.members.has(member.memberId), `${member.memberId} is already in ${this.groupId}`);
    if (this.members.size === 0) this.protocolType = member.protocolType;
    assert(this.protocolType === member.protocolType, `protocol type mismatch in ${this.groupId}`);
    if (this.leaderId === null) this.leaderId = member.memberId;
    this.members.set(member.memberId, member);
    if (member.groupInstanceId !== null) {
      this.staticMembers.set(member.groupInstanceId, member.memberId);
    }
    this.countProtocols(member.supportedProtocols, 1);
    this.removePendingMember(member.memberId);
    this.setAwaitingJoin(member, callback);
  }

  /** Removes a member or a pending member; the caller has answered its parked requests. */
  remove(memberId: string): void {
    this.removePendingMember(memberId);
    this.pendingSyncMembers.delete(memberId);
    const member = this.members.get(memberId);
    if (member === undefined) return;
    this.members.delete(memberId);
    this.countProtocols(member.supportedProtocols, -1);
    if (member.isAwaitingJoin) this.awaitingJoinCount--;
    const instanceId = member.groupInstanceId;
    if (instanceId !== null && this.staticMembers.get(instanceId) === memberId) {
      this.staticMembers.delete(instanceId);
    }
    if (this.leaderId === memberId) {
      this.leaderId = this.members.keys().next().value ?? null;
    }
  }

  /** Replaces a member's protocols and timeouts, and parks (or clears) its JoinGroup. */
  updateMember(
    member: MemberMetadata,
    protocols: readonly JoinGroupProtocol[],
    rebalanceTimeoutMs: number,
    sessionTimeoutMs: number,
    callback: ((result: JoinGroupResult) => void) | null,
  ): void {
    this.countProtocols(member.supportedProtocols, -1);
    this.countProtocols(protocols, 1);
    member.supportedProtocols = protocols;
    member.rebalanceTimeoutMs = rebalanceTimeoutMs;
    member.sessionTimeoutMs = sessionTimeoutMs;
    this.setAwaitingJoin(member, callback);
  }

  /**
   * Gives a static member's entry a new member id (KIP-345). A request still parked under the
   * old id belongs to a duplicate instance, which is fenced.
   */
  replaceStaticMember(
    groupInstanceId: string,
    oldMemberId: string,
    newMemberId: string,
  ): MemberMetadata {
    const member = this.get(oldMemberId);
    assert(member.groupInstanceId === groupInstanceId, `${oldMemberId} is not ${groupInstanceId}`);
    this.answerJoin(member, joinError(oldMemberId, ErrorCode.FENCED_INSTANCE_ID));
    this.answerSync(member, syncError(ErrorCode.FENCED_INSTANCE_ID));
    this.members.delete(oldMemberId);
    member.memberId = newMemberId;
    this.members.set(newMemberId, member);
    this.staticMembers.set(groupInstanceId, newMemberId);
    if (this.leaderId === oldMemberId) this.leaderId = newMemberId;
    if (this.pendingSyncMembers.delete(oldMemberId)) this.pendingSyncMembers.add(newMemberId);
    return member;
  }

  /** Answers a parked JoinGroup, if any. */
  answerJoin(member: MemberMetadata, result: JoinGroupResult): boolean {
    const callback = member.awaitingJoin;
    if (callback === null) return false;
    this.setAwaitingJoin(member, null);
    member.isNew = false;
    callback(result);
    return true;
  }

  /** Answers a parked SyncGroup, if any. */
  answerSync(member: MemberMetadata, result: SyncGroupResult): boolean {
    const callback = member.awaitingSync;
    if (callback === null) return false;
    member.awaitingSync = null;
    callback(result);
    return true;
  }

  removePendingMember(memberId: string): boolean {
    const timer = this.pendingMembers.get(memberId);
    if (timer === undefined) return false;
    clearTimeout(timer);
    this.pendingMembers.delete(memberId);
    return true;
  }

  /** Every known member (and no pending one) has sent its JoinGroup for this rebalance. */
  get hasAllMembersJoined(): boolean {
    return this.members.size === this.awaitingJoinCount && this.pendingMembers.size === 0;
  }

  notYetRejoinedMembers(): MemberMetadata[] {
    return this.allMembers().filter((m) => !m.isAwaitingJoin);
  }

  /** The largest rebalance timeout among members: how long a rebalance may wait for them. */
  get rebalanceTimeoutMs(): number {
    let timeoutMs = 0;
    for (const m of this.members.values()) timeoutMs = Math.max(timeoutMs, m.rebalanceTimeoutMs);
    return timeoutMs;
  }

  /** Keeps a leader that has rejoined, or picks any member that has; false when none has. */
  maybeElectNewJoinedLeader(): boolean {
    if (this.leaderId === null) return false;
    if (this.get(this.leaderId).isAwaitingJoin) return true;
    const joined = this.allMembers().find((m) => m.isAwaitingJoin);
    if (joined === undefined) return false;
    this.leaderId = joined.memberId;
    return true;
  }

  /** Whether a member may join: an Empty group takes any, else a common protocol must exist. */
  supportsProtocols(protocolType: string, protocolNames: readonly string[]): boolean {
    if (this.is(GroupState.Empty)) return protocolType.length > 0 && protocolNames.length > 0;
    if (this.protocolType !== protocolType) return false;
    return protocolNames.some((name) => this.protocolCounts.get(name) === this.members.size);
  }

  /** The protocol every member supports that gets the most votes (Kafka's selectProtocol). */
  selectProtocol(): string {
    assert(this.members.size > 0, `cannot select a protocol for empty group ${this.groupId}`);
    const candidates = new Set<string>();
    for (const [name, count] of this.protocolCounts) {
      if (count === this.members.size) candidates.add(name);
    }
    const votes = new Map<string, number>();
    for (const m of this.members.values()) {
      const choice = m.vote(candidates);
      votes.set(choice, (votes.get(choice) ?? 0) + 1);
    }
    let best: string | null = null;
    let bestVotes = 0;
    for (const [name, count] of votes) if (count > bestVotes) [best, bestVotes] = [name, count];
    assert(best !== null, `no protocol won the vote in ${this.groupId}`);
    return best;
  }

  /** Starts the next generation once the join phase is over. */
  initNextGeneration(): void {
    // Static members that have not rejoined stay (KIP-345), so not every member is awaiting join.
    assert(this.is(GroupState.PreparingRebalance), `group ${this.groupId} is ${this.state}`);
    this.generationId++;
    if (this.members.size > 0) {
      this.protocolName = this.selectProtocol();
      this.subscribedTopicSet = this.computeSubscribedTopics();
      this.transitionTo(GroupState.CompletingRebalance);
    } else {
      this.protocolName = null;
      this.subscribedTopicSet = null;
      this.transitionTo(GroupState.Empty);
    }
  }

  /**
   * Puts a group taken over from the store (members already added) back in the Stable
   * generation it was stored in, bypassing the transitions a live rebalance goes through.
   */
  restoreStableGeneration(generationId: number, protocolName: string, leaderId: string): void {
    assert(this.is(GroupState.Empty), `${this.groupId} is restored in ${this.state}`);
    assert(this.members.size > 0 && this.has(leaderId), `${this.groupId}: no leader to restore`);
    for (const m of this.members.values()) this.setAwaitingJoin(m, null);
    this.generationId = generationId;
    this.protocolName = protocolName;
    this.leaderId = leaderId;
    this.subscribedTopicSet = this.computeSubscribedTopics();
    this.state = GroupState.Stable;
  }

  /**
   * Leaves a group whose members moved to a consumer group (an online upgrade) Empty, as a
   * holder of the group's offsets; the caller has removed the members and stopped the timers.
   */
  resetToEmpty(): void {
    assert(
      this.members.size === 0 && this.pendingMembers.size === 0,
      `${this.groupId} has members`,
    );
    this.state = GroupState.Empty;
    this.protocolName = null;
    this.leaderId = null;
    this.subscribedTopicSet = null;
  }

  /** Member metadata for the chosen protocol, as the leader gets it in its JoinGroup response. */
  currentMemberMetadata(): JoinGroupMember[] {
    assert(this.protocolName !== null, `group ${this.groupId} has no protocol in ${this.state}`);
    const protocolName = this.protocolName;
    return this.allMembers().map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      metadata: m.metadata(protocolName),
    }));
  }

  /**
   * Whether OffsetDelete must refuse a topic because members consume it. Only consumer groups
   * are checked (as in Kafka); undecodable subscriptions count as subscribed to everything.
   */
  isSubscribedToTopic(topic: string): boolean {
    if (this.subscribedTopicSet === null) return true;
    return this.subscribedTopicSet.has(topic);
  }

  get isConsumerGroup(): boolean {
    return this.protocolType === CONSUMER_PROTOCOL_TYPE;
  }

  private computeSubscribedTopics(): Set<string> | null {
    if (!this.isConsumerGroup || this.protocolName === null) return null;
    const topics = new Set<string>();
    for (const m of this.members.values()) {
      const memberTopics = subscribedTopics(m.metadata(this.protocolName));
      if (memberTopics === null) return null;
      for (const t of memberTopics) topics.add(t);
    }
    return topics;
  }

  private setAwaitingJoin(
    member: MemberMetadata,
    callback: ((r: JoinGroupResult) => void) | null,
  ): void {
    if (callback !== null && !member.isAwaitingJoin) this.awaitingJoinCount++;
    if (callback === null && member.isAwaitingJoin) this.awaitingJoinCount--;
    member.awaitingJoin = callback;
    assert(this.awaitingJoinCount >= 0, `negative awaiting-join count in ${this.groupId}`);
    assert(this.awaitingJoinCount <= this.members.size, `awaiting > members in ${this.groupId}`);
  }

  private countProtocols(protocols: readonly JoinGroupProtocol[], delta: 1 | -1): void {
    for (const p of protocols) {
      const count = (this.protocolCounts.get(p.name) ?? 0) + delta;
      assert(count >= 0, `protocol ${p.name} counted below zero in ${this.groupId}`);
      if (count === 0) this.protocolCounts.delete(p.name);
      else this.protocolCounts.set(p.name, count);
    }
  }
}

export function joinError(memberId: string, errorCode: number): JoinGroupResult {
  return {
    errorCode,
    generationId: -1,
    protocolType: null,
    protocolName: null,
    leader: "",
    skipAssignment: false,
    memberId,
    members: [],
  };
}

export function syncError(errorCode: number): SyncGroupResult {
  return { errorCode, protocolType: null, protocolName: null, assignment: EMPTY_BYTES };
}
