import { describe, expect, test } from "bun:test";
import {
  electLeader,
  preferredElection,
  uncleanElection,
} from "../../src/controller/controller-leader-election.ts";
import {
  fromOriginAndTarget,
  isReassignmentComplete,
  planReassignment,
  stateForAssignment,
  targetReplicas,
} from "../../src/controller/partition-reassignment.ts";
import { decodeTopicAssignment, encodeTopicAssignment } from "../../src/metadata/kafka-znodes.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";

const settled = { replicas: [1, 2], addingReplicas: [], removingReplicas: [] };
const brokers = new Set([1, 2, 3, 4]);

describe("planReassignment", () => {
  test("a move writes target first, then origin, with Kafka's adding and removing sets", () => {
    expect(planReassignment(settled, [3, 2], brokers)).toEqual({
      replicas: [3, 2, 1],
      addingReplicas: [3],
      removingReplicas: [1],
    });
  });

  test("a new target while moving keeps the first origin; cancel reverts to it", () => {
    const moving = fromOriginAndTarget([1, 2], [3, 4]);
    expect(planReassignment(moving, [2, 4], brokers)).toEqual({
      replicas: [2, 4, 1],
      addingReplicas: [4],
      removingReplicas: [1],
    });
    expect(planReassignment(moving, null, brokers)).toEqual(settled);
  });

  test("Kafka's errors: nothing to cancel, empty, duplicate or unregistered replicas", () => {
    const code = (target: number[] | null) => {
      const plan = planReassignment(settled, target, brokers);
      return plan !== null && "errorCode" in plan ? plan.errorCode : ErrorCode.NONE;
    };
    expect(code(null)).toBe(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS);
    expect(code([])).toBe(ErrorCode.INVALID_REPLICA_ASSIGNMENT);
    expect(code([2, 2])).toBe(ErrorCode.INVALID_REPLICA_ASSIGNMENT);
    expect(code([2, 9])).toBe(ErrorCode.INVALID_REPLICA_ASSIGNMENT);
    expect(planReassignment(settled, [1, 2], brokers)).toBeNull();
  });
});

describe("completion", () => {
  const moving = fromOriginAndTarget([1, 2], [3, 2]);
  const state = { leader: 1, leaderEpoch: 4, isr: [1, 2], controllerEpoch: 1 };

  test("completes only once every target replica is in the ISR", () => {
    expect(isReassignmentComplete(moving, [1, 2])).toBe(false);
    expect(isReassignmentComplete(moving, [1, 2, 3])).toBe(true);
    expect(isReassignmentComplete(settled, [1, 2])).toBe(false);
  });

  test("a leader being removed hands over to the first live target replica in the ISR", () => {
    const done = { replicas: targetReplicas(moving), addingReplicas: [], removingReplicas: [] };
    const next = stateForAssignment({ ...state, isr: [1, 2, 3] }, done, brokers, 2);
    expect(next).toEqual({ leader: 3, leaderEpoch: 5, isr: [2, 3], controllerEpoch: 2 });
    const without3 = stateForAssignment({ ...state, isr: [1, 2, 3] }, done, new Set([1, 2]), 2);
    expect(without3?.leader).toBe(2);
  });

  test("starting a move keeps the leader and bumps the epoch so replicas take the new set", () => {
    expect(stateForAssignment(state, moving, brokers, 2)).toEqual({
      leader: 1,
      leaderEpoch: 5,
      isr: [1, 2],
      controllerEpoch: 2,
    });
  });
});

test("the topic znode carries adding_replicas and removing_replicas as Kafka writes them", () => {
  const data = encodeTopicAssignment({
    topicIdBase64: null,
    assignment: [[3, 2, 1], [2]],
    addingReplicas: new Map([[0, [3]]]),
    removingReplicas: new Map([
      [0, [1]],
      [1, []],
    ]),
  });
  const json = JSON.parse(new TextDecoder().decode(data));
  expect(json.adding_replicas).toEqual({ "0": [3] });
  expect(json.removing_replicas).toEqual({ "0": [1] });
  const decoded = decodeTopicAssignment("t", data);
  expect(decoded.addingReplicas?.get(0)).toEqual([3]);
  expect(decoded.removingReplicas?.get(0)).toEqual([1]);
  const settledZnode = decodeTopicAssignment(
    "t",
    encodeTopicAssignment({ topicIdBase64: null, assignment: [[1]] }),
  );
  expect(settledZnode.addingReplicas).toBeUndefined();
});

describe("ElectLeaders decisions", () => {
  const live = new Set([1, 2]);
  const led = { leader: 2, leaderEpoch: 3, isr: [1, 2], controllerEpoch: 1 };

  test("preferred: elected when alive and in sync, else Kafka's errors", () => {
    expect(preferredElection(led, [1, 2], live, 4)).toEqual({
      ...led,
      leader: 1,
      leaderEpoch: 4,
      controllerEpoch: 4,
    });
    expect(preferredElection(led, [2, 1], live, 4)).toEqual({
      errorCode: ErrorCode.ELECTION_NOT_NEEDED,
    });
    expect(preferredElection({ ...led, isr: [2] }, [1, 2], live, 4)).toEqual({
      errorCode: ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
    });
  });

  test("unclean: only without a live leader; an out-of-sync live replica leads alone", () => {
    expect(uncleanElection(led, [1, 2], live, 4)).toEqual({
      errorCode: ErrorCode.ELECTION_NOT_NEEDED,
    });
    const offline = { leader: -1, leaderEpoch: 5, isr: [3], controllerEpoch: 1 };
    expect(uncleanElection(offline, [3, 2], live, 4)).toEqual({
      leader: 2,
      leaderEpoch: 6,
      isr: [2],
      controllerEpoch: 4,
    });
    expect(uncleanElection(offline, [3], live, 4)).toEqual({
      errorCode: ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
    });
  });

  test("unclean.leader.election.enable decides an offline partition's fate", () => {
    const dead = { leader: 3, leaderEpoch: 5, isr: [3], controllerEpoch: 1 };
    expect(electLeader(dead, [3, 2], live, 4)).toEqual({
      leader: -1,
      leaderEpoch: 6,
      isr: [3],
      controllerEpoch: 4,
    });
    expect(electLeader(dead, [3, 2], live, 4, true)).toEqual({
      leader: 2,
      leaderEpoch: 6,
      isr: [2],
      controllerEpoch: 4,
    });
  });
});
