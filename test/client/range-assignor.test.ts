/** Kafka's RangeAssignor cases: uneven counts, members without a topic, round trips. */
import { describe, expect, test } from "bun:test";
import {
  decodeAssignment,
  decodeSubscription,
  encodeAssignment,
  encodeSubscription,
  rangeAssign,
} from "../../src/client/range-assignor.ts";

describe("rangeAssign", () => {
  test("the first count % members members in id order take one partition more", () => {
    const subscriptions = new Map([
      ["m2", ["t"]],
      ["m1", ["t", "u"]],
      ["m3", ["t"]],
    ]);
    const out = rangeAssign(
      subscriptions,
      new Map([
        ["t", 7],
        ["u", 2],
      ]),
    );
    expect(out.get("m1")).toEqual(
      new Map([
        ["t", [0, 1, 2]],
        ["u", [0, 1]],
      ]),
    );
    expect(out.get("m2")).toEqual(new Map([["t", [3, 4]]]));
    expect(out.get("m3")).toEqual(new Map([["t", [5, 6]]]));
  });

  test("more members than partitions leaves some empty; unknown topics are skipped", () => {
    const subscriptions = new Map([
      ["a", ["t", "gone"]],
      ["b", ["t"]],
      ["c", ["t"]],
    ]);
    const out = rangeAssign(subscriptions, new Map([["t", 2]]));
    expect([...out].map(([m, a]) => [m, a.get("t") ?? []])).toEqual([
      ["a", [0]],
      ["b", [1]],
      ["c", []],
    ]);
  });

  test("subscription and assignment bytes round-trip", () => {
    expect(decodeSubscription(encodeSubscription(["x", "y"]))).toEqual(["x", "y"]);
    const assignment = new Map([["x", [0, 2]]]);
    expect(decodeAssignment(encodeAssignment(assignment))).toEqual(assignment);
    expect(decodeSubscription(new Uint8Array([1]))).toEqual([]);
  });
});
