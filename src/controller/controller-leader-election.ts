/**
 * The controller's partition state decisions, as Kafka's ZooKeeper-mode state machines make
 * them, kept pure so they can be checked without ZooKeeper:
 *
 * - A partition without a live leader gets the first replica (in assignment order) that is
 *   alive and in the ISR. With unclean.leader.election.enable=false (Kafka's default) a
 *   partition whose ISR has no live member gets leader -1 and keeps its last ISR member, who
 *   alone is known to hold every committed record; when that broker returns it leads again.
 *   With it true (the topic's key, else the broker's), the first live replica leads at once
 *   with itself as the ISR, accepting the loss of what only the dead ISR held.
 * - Dead followers leave the ISR (Kafka's OfflineReplica transition), so the high watermark
 *   does not wait for them.
 * - Every change of leader or ISR made here bumps the leader epoch, which fences the old
 *   leader's requests and tells followers to truncate.
 */
import type { BrokerId } from "../common/branded.ts";
import type { PartitionStateZnode } from "../metadata/kafka-znodes.ts";
import { ErrorCode } from "../protocol/errors.ts";

/** Kafka's LeaderAndIsr.NoLeader. */
export const NO_LEADER: BrokerId = -1;

/** The first replica that can lead: alive, in the ISR, not excluded. */
function leaderCandidate(
  replicas: readonly BrokerId[],
  isr: readonly BrokerId[],
  canLead: (id: BrokerId) => boolean,
): BrokerId | undefined {
  return replicas.find((r) => isr.includes(r) && canLead(r));
}

/**
 * The state a partition should have with these brokers alive, or null when it needs no change.
 * `state` null means the partition has no state znode yet (a new partition): it starts led by
 * its first live replica with the live replicas as ISR (leader -1 if none lives).
 */
export function electLeader(
  state: PartitionStateZnode | null,
  replicas: readonly BrokerId[],
  live: ReadonlySet<BrokerId>,
  controllerEpoch: number,
  allowUnclean = false,
): PartitionStateZnode | null {
  if (state === null) {
    const isr = replicas.filter((r) => live.has(r));
    return {
      leader: isr[0] ?? NO_LEADER,
      leaderEpoch: 0,
      isr: isr.length > 0 ? isr : [...replicas],
      controllerEpoch,
    };
  }
  const liveIsr = state.isr.filter((r) => live.has(r));
  if (state.leader !== NO_LEADER && live.has(state.leader)) {
    if (liveIsr.length === state.isr.length) return null;
    return {
      leader: state.leader,
      leaderEpoch: state.leaderEpoch + 1,
      isr: liveIsr,
      controllerEpoch,
    };
  }
  const candidate = leaderCandidate(replicas, state.isr, (id) => live.has(id));
  if (candidate !== undefined) {
    return { leader: candidate, leaderEpoch: state.leaderEpoch + 1, isr: liveIsr, controllerEpoch };
  }
  const unclean = allowUnclean ? replicas.find((r) => live.has(r)) : undefined;
  if (unclean !== undefined) {
    return { leader: unclean, leaderEpoch: state.leaderEpoch + 1, isr: [unclean], controllerEpoch };
  }
  if (state.leader === NO_LEADER) return null;
  // Nobody in the ISR lives: keep the last leader as the ISR, waiting for it to return.
  return {
    leader: NO_LEADER,
    leaderEpoch: state.leaderEpoch + 1,
    isr: [state.leader],
    controllerEpoch,
  };
}

/**
 * Controlled shutdown of `brokerId`: leadership moves to another live ISR member, and the broker
 * leaves the ISR of partitions it follows (unless it is the last member). Null: no change.
 */
export function electForShutdown(
  state: PartitionStateZnode,
  replicas: readonly BrokerId[],
  brokerId: number,
  live: ReadonlySet<BrokerId>,
  controllerEpoch: number,
): PartitionStateZnode | null {
  if (!state.isr.includes(brokerId)) return null;
  const others = state.isr.filter((r) => r !== brokerId);
  if (state.leader !== brokerId) {
    if (others.length === 0) return null;
    return {
      leader: state.leader,
      leaderEpoch: state.leaderEpoch + 1,
      isr: others,
      controllerEpoch,
    };
  }
  const candidate = leaderCandidate(replicas, others, (id) => live.has(id) && id !== brokerId);
  if (candidate === undefined) return null;
  return {
    leader: candidate,
    leaderEpoch: state.leaderEpoch + 1,
    isr: others.filter((r) => live.has(r)),
    controllerEpoch,
  };
}

/** A partition as the preferred-replica check sees it. */
export interface LeadershipView {
  readonly replicas: readonly BrokerId[];
  readonly state: PartitionStateZnode;
}

/**
 * Kafka's auto leader rebalance: for each broker, the partitions whose preferred replica (the
 * first in the assignment) it is but which another broker leads; when their share of the
 * broker's preferred partitions exceeds `imbalancePercentage`, those whose preferred replica is
 * alive and in the ISR are returned, to be led by it again.
 */
export function partitionsToRebalance<P extends LeadershipView>(
  partitions: readonly P[],
  live: ReadonlySet<BrokerId>,
  imbalancePercentage: number,
): P[] {
  const byPreferred = new Map<number, P[]>();
  for (const p of partitions) {
    const preferred = p.replicas[0]!;
    byPreferred.set(preferred, [...(byPreferred.get(preferred) ?? []), p]);
  }
  const moves: P[] = [];
  for (const [preferred, list] of byPreferred) {
    const elsewhere = list.filter((p) => p.state.leader !== preferred);
    if (elsewhere.length * 100 <= imbalancePercentage * list.length) continue;
    moves.push(...elsewhere.filter((p) => live.has(preferred) && p.state.isr.includes(preferred)));
  }
  return moves;
}

/** The preferred replica leads again (Kafka's PreferredReplicaPartitionLeaderElection). */
export function electPreferred(
  state: PartitionStateZnode,
  replicas: readonly BrokerId[],
  controllerEpoch: number,
): PartitionStateZnode {
  return { ...state, leader: replicas[0]!, leaderEpoch: state.leaderEpoch + 1, controllerEpoch };
}

/** Whether a partition has no live ISR member to lead it, so only an unclean election could. */
export function needsUncleanElection(
  state: PartitionStateZnode | null,
  live: ReadonlySet<BrokerId>,
): boolean {
  return state !== null && !state.isr.some((r) => live.has(r));
}

/** ElectLeaders' outcome for one partition: the new state, or Kafka's error for it. */
export type ElectionOutcome = PartitionStateZnode | { readonly errorCode: number };

/**
 * ElectLeaders PREFERRED (Kafka's PreferredReplicaPartitionLeaderElectionStrategy): the first
 * assigned replica leads if it is alive and in the ISR. ELECTION_NOT_NEEDED when it leads
 * already, PREFERRED_LEADER_NOT_AVAILABLE when it cannot.
 */
export function preferredElection(
  state: PartitionStateZnode,
  replicas: readonly BrokerId[],
  live: ReadonlySet<BrokerId>,
  controllerEpoch: number,
): ElectionOutcome {
  const preferred = replicas[0]!;
  if (state.leader === preferred) return { errorCode: ErrorCode.ELECTION_NOT_NEEDED };
  if (!live.has(preferred) || !state.isr.includes(preferred)) {
    return { errorCode: ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE };
  }
  return electPreferred(state, replicas, controllerEpoch);
}

/**
 * ElectLeaders UNCLEAN (Kafka's OfflinePartitionLeaderElectionStrategy with unclean allowed):
 * only for a partition without a live leader; a live ISR member is still preferred, else any
 * live replica. ELECTION_NOT_NEEDED with a live leader, ELIGIBLE_LEADERS_NOT_AVAILABLE when no
 * replica lives.
 */
export function uncleanElection(
  state: PartitionStateZnode,
  replicas: readonly BrokerId[],
  live: ReadonlySet<BrokerId>,
  controllerEpoch: number,
): ElectionOutcome {
  if (state.leader !== NO_LEADER && live.has(state.leader)) {
    return { errorCode: ErrorCode.ELECTION_NOT_NEEDED };
  }
  const next = electLeader(state, replicas, live, controllerEpoch, true);
  if (next === null || next.leader === NO_LEADER) {
    return { errorCode: ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE };
  }
  return next;
}
