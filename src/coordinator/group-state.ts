import { assert } from "../util/assert.ts";

/**
 * The states of a classic consumer group, named as Kafka names them (these strings are what
 * DescribeGroups and ListGroups report, and what the ListGroups state filter matches).
 *
 * - Empty: no members; the group may still own committed offsets (simple consumers, or a
 *   group whose members all left). A JoinGroup moves it to PreparingRebalance.
 * - PreparingRebalance: waiting for every known member to (re)send JoinGroup, or for the
 *   rebalance timeout. Heartbeats answer REBALANCE_IN_PROGRESS; offset commits of the previous
 *   generation are still allowed.
 * - CompletingRebalance: the JoinGroup responses went out; waiting for the leader's SyncGroup
 *   with the assignment. Offset commits answer REBALANCE_IN_PROGRESS.
 * - Stable: everyone has an assignment; heartbeats are answered normally.
 * - Dead: the group was deleted; nothing may use this object any more.
 */
export const GroupState = {
  Empty: "Empty",
  PreparingRebalance: "PreparingRebalance",
  CompletingRebalance: "CompletingRebalance",
  Stable: "Stable",
  Dead: "Dead",
} as const;

export type GroupState = (typeof GroupState)[keyof typeof GroupState];

/** For each target state, the states a group may move to it from (Kafka's validPreviousStates). */
const VALID_PREVIOUS_STATES: Readonly<Record<GroupState, readonly GroupState[]>> = {
  Dead: ["Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead"],
  CompletingRebalance: ["PreparingRebalance"],
  Stable: ["CompletingRebalance"],
  PreparingRebalance: ["Stable", "CompletingRebalance", "Empty"],
  Empty: ["PreparingRebalance"],
};

export function canTransition(from: GroupState, to: GroupState): boolean {
  return VALID_PREVIOUS_STATES[to].includes(from);
}

export function assertTransition(groupId: string, from: GroupState, to: GroupState): void {
  assert(
    canTransition(from, to),
    `group ${groupId} cannot move from ${from} to ${to}; ${to} is reached only from ` +
      VALID_PREVIOUS_STATES[to].join(", "),
  );
}

/** Parses a ListGroups state filter entry the way Kafka does: case-insensitively. */
export function parseGroupState(name: string): GroupState | undefined {
  const lower = name.toLowerCase();
  return Object.values(GroupState).find((s) => s.toLowerCase() === lower);
}
