/** Kafka's AdminUtils placement, checked against the expectations of Kafka's own tests. */
import { describe, expect, test } from "bun:test";
import {
  assignReplicasToBrokers,
  rackAlternatedBrokers,
} from "../../src/metadata/replica-assignment.ts";
import { ErrorCode, KafkaError } from "../../src/protocol/errors.ts";

const racks: Record<number, string> = {
  0: "rack1",
  1: "rack3",
  2: "rack3",
  3: "rack2",
  4: "rack2",
  5: "rack1",
};
const rackBrokers = Object.entries(racks).map(([id, rack]) => ({ id: Number(id), rack }));
const plain = (ids: number[]) => ids.map((id) => ({ id, rack: null }));

function codeOf(fn: () => unknown): number {
  try {
    fn();
  } catch (error) {
    if (error instanceof KafkaError) return error.code;
    throw error;
  }
  return ErrorCode.NONE;
}

describe("rack-unaware", () => {
  test("AssignmentTest.testReplicaAssignment: 5 brokers, 10 partitions, RF 3, start 0", () => {
    expect(assignReplicasToBrokers(plain([0, 1, 2, 3, 4]), 10, 3, { fixedStartIndex: 0 })).toEqual([
      [0, 1, 2],
      [1, 2, 3],
      [2, 3, 4],
      [3, 4, 0],
      [4, 0, 1],
      [0, 2, 3],
      [1, 3, 4],
      [2, 4, 0],
      [3, 0, 1],
      [4, 1, 2],
    ]);
  });

  test("a random start still gives each broker an equal share of leaders and replicas", () => {
    const assignment = assignReplicasToBrokers(plain([7, 3, 5]), 6, 2);
    for (const id of [3, 5, 7]) {
      expect(assignment.filter((r) => r[0] === id)).toHaveLength(2);
      expect(assignment.flat().filter((r) => r === id)).toHaveLength(4);
    }
    for (const replicas of assignment) expect(new Set(replicas).size).toBe(2);
  });

  test("leaders continue the round robin from startPartition, as in CreatePartitions", () => {
    const all = assignReplicasToBrokers(plain([0, 1, 2]), 6, 2, { fixedStartIndex: 1 });
    const tail = assignReplicasToBrokers(plain([0, 1, 2]), 2, 2, {
      fixedStartIndex: 1,
      startPartition: 4,
    });
    // Kafka's follower shift restarts with the call, so only the leaders line up.
    expect(tail.map((r) => r[0])).toEqual(all.slice(4).map((r) => r[0]));
    for (const replicas of tail) expect(new Set(replicas).size).toBe(2);
  });

  test("a replication factor above the broker count or below 1 is refused", () => {
    expect(codeOf(() => assignReplicasToBrokers(plain([0, 1]), 1, 3))).toBe(
      ErrorCode.INVALID_REPLICATION_FACTOR,
    );
    expect(codeOf(() => assignReplicasToBrokers(plain([0, 1]), 1, 0))).toBe(
      ErrorCode.INVALID_REPLICATION_FACTOR,
    );
  });
});

describe("rack-aware", () => {
  test("brokers alternate racks (AdminRackAwareTest.testGetRackAlternatedBrokerList)", () => {
    expect(rackAlternatedBrokers(rackBrokers)).toEqual([0, 3, 1, 5, 4, 2]);
    expect(rackAlternatedBrokers(rackBrokers.filter((b) => b.id !== 5))).toEqual([0, 3, 1, 4, 2]);
  });

  test("Kafka's expected assignment of 7 partitions, RF 3, start 0", () => {
    expect(assignReplicasToBrokers(rackBrokers, 7, 3, { fixedStartIndex: 0 })).toEqual([
      [0, 3, 1],
      [3, 1, 5],
      [1, 5, 4],
      [5, 4, 2],
      [4, 2, 0],
      [2, 0, 3],
      [0, 4, 2],
    ]);
  });

  test("every partition spans as many racks as it has replicas, leaders spread evenly", () => {
    const assignment = assignReplicasToBrokers(rackBrokers, 12, 3);
    for (const replicas of assignment) {
      expect(new Set(replicas.map((id) => racks[id])).size).toBe(3);
    }
    for (const id of [0, 1, 2, 3, 4, 5]) {
      expect(assignment.filter((r) => r[0] === id)).toHaveLength(2);
    }
  });

  test("racks on some brokers only is refused", () => {
    const mixed = [
      { id: 0, rack: "a" },
      { id: 1, rack: null },
    ];
    expect(codeOf(() => assignReplicasToBrokers(mixed, 1, 1))).toBe(
      ErrorCode.INVALID_REPLICA_ASSIGNMENT,
    );
  });
});
