/**
 * Partition reassignment as Kafka's ZooKeeper-mode controller does it (KIP-455), kept pure so it
 * can be checked without ZooKeeper. A partition's assignment is its replicas plus, while it is
 * being moved, the replicas being added and those being removed:
 *
 * - Starting a move from origin replicas ORS to target TRS writes replicas TRS ++ ORS (distinct,
 *   target first), adding TRS - ORS, removing ORS - TRS into the topic znode, exactly as Kafka's
 *   `ReplicaAssignment.fromOriginAndTarget`; every replica gets a LeaderAndIsr and the new ones
 *   start fetching.
 * - Once every target replica is in the ISR the move completes: the leader moves into TRS if it
 *   is not there, the removed replicas leave the ISR, the assignment becomes TRS alone and the
 *   removed replicas are stopped and deleted.
 * - A new target while one move runs keeps the original replicas as its origin (Kafka's rule);
 *   replicas that were being added and are not in the new target are stopped and deleted.
 * - Cancelling reverts to the origin replicas, which completes at once since they never left.
 *
 * The assignment znode holds all of this, so a new controller finds every move in progress and
 * finishes it.
 */
import type { BrokerId } from "../common/branded.ts";
import type { PartitionStateZnode } from "../metadata/kafka-znodes.ts";
import { ErrorCode } from "../protocol/errors.ts";

export interface ReplicaAssignment {
  readonly replicas: readonly number[];
  readonly addingReplicas: readonly number[];
  readonly removingReplicas: readonly number[];
}

export interface ReassignmentRefusal {
  readonly errorCode: number;
  readonly message: string;
}

export function isReassigning(a: ReplicaAssignment): boolean {
  return a.addingReplicas.length > 0 || a.removingReplicas.length > 0;
}

/** Where the partition is going: the replicas not being removed. */
export function targetReplicas(a: ReplicaAssignment): number[] {
  return a.replicas.filter((r) => !a.removingReplicas.includes(r));
}

/** Where the partition came from: the replicas not being added. */
export function originReplicas(a: ReplicaAssignment): number[] {
  return a.replicas.filter((r) => !a.addingReplicas.includes(r));
}

/** Kafka's `ReplicaAssignment.fromOriginAndTarget`. */
export function fromOriginAndTarget(
  origin: readonly number[],
  target: readonly number[],
): ReplicaAssignment {
  return {
    replicas: [...new Set([...target, ...origin])],
    addingReplicas: target.filter((r) => !origin.includes(r)),
    removingReplicas: origin.filter((r) => !target.includes(r)),
  };
}

/**
 * The assignment an AlterPartitionReassignments entry asks for (`target` null cancels), or the
 * partition's error as Kafka's controller answers it. Null: nothing to do (the partition is
 * already where it should be).
 */
export function planReassignment(
  current: ReplicaAssignment,
  target: readonly number[] | null,
  registered: ReadonlySet<number>,
): ReplicaAssignment | ReassignmentRefusal | null {
  if (target === null) {
    if (!isReassigning(current)) {
      return { errorCode: ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, message: "" };
    }
    const origin = originReplicas(current);
    return fromOriginAndTarget(origin, origin);
  }
  const invalid = (message: string) => ({
    errorCode: ErrorCode.INVALID_REPLICA_ASSIGNMENT,
    message,
  });
  if (target.length === 0)
    return invalid("Empty replica list specified in partition reassignment.");
  if (new Set(target).size !== target.length) {
    return invalid(`Duplicate replica ids in partition reassignment replica list: [${target}]`);
  }
  if (target.some((r) => r < 0)) return invalid(`Invalid broker id in replica list: [${target}]`);
  if (!target.every((r) => registered.has(r))) {
    return invalid(
      `Replica assignment has brokers that are not alive. Replica list: [${target}], ` +
        `live broker list: [${[...registered].sort((a, b) => a - b)}]`,
    );
  }
  if (!isReassigning(current) && sameList(current.replicas, target)) return null;
  return fromOriginAndTarget(originReplicas(current), target);
}

/** True when every target replica is in the ISR: the move can complete. */
export function isReassignmentComplete(a: ReplicaAssignment, isr: readonly number[]): boolean {
  return isReassigning(a) && targetReplicas(a).every((r) => isr.includes(r));
}

/**
 * The partition state once its assignment is `next`: the ISR keeps only replicas of `next`, the
 * leader stays if it is still an ISR member and alive, else the first live target replica in
 * the ISR leads (Kafka's ReassignPartitionLeaderElectionStrategy); the leader epoch goes up so
 * every replica accepts the new replica set. Null: no replica could lead.
 */
export function stateForAssignment(
  state: PartitionStateZnode,
  next: ReplicaAssignment,
  live: ReadonlySet<BrokerId>,
  controllerEpoch: number,
): PartitionStateZnode | null {
  const isr = state.isr.filter((r) => next.replicas.includes(r));
  const keeps = isr.includes(state.leader) && live.has(state.leader);
  const leader = keeps
    ? state.leader
    : targetReplicas(next).find((r) => isr.includes(r) && live.has(r));
  if (leader === undefined) return null;
  return { leader, leaderEpoch: state.leaderEpoch + 1, isr, controllerEpoch };
}

function sameList(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
