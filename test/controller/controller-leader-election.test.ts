/** The controller's leader and ISR decisions, as Kafka's ZooKeeper-mode state machines make them. */
import { describe, expect, test } from "bun:test";
import {
  electForShutdown,
  electLeader,
  electPreferred,
  NO_LEADER,
  partitionsToRebalance,
} from "../../src/controller/controller-leader-election.ts";

const state = (leader: number, isr: number[], leaderEpoch = 3) => ({
  leader,
  leaderEpoch,
  isr,
  controllerEpoch: 1,
});
const live = (...ids: number[]) => new Set(ids);

describe("electLeader", () => {
  test("a new partition is led by its first live replica, with the live replicas as ISR", () => {
    expect(electLeader(null, [2, 1, 3], live(1, 3), 5)).toEqual({
      leader: 1,
      leaderEpoch: 0,
      isr: [1, 3],
      controllerEpoch: 5,
    });
  });

  test("nothing changes while the leader and the whole ISR live", () => {
    expect(electLeader(state(1, [1, 2, 3]), [1, 2, 3], live(1, 2, 3), 5)).toBeNull();
  });

  test("a dead follower leaves the ISR and the leader epoch is bumped", () => {
    expect(electLeader(state(1, [1, 2, 3]), [1, 2, 3], live(1, 3), 5)).toEqual({
      leader: 1,
      leaderEpoch: 4,
      isr: [1, 3],
      controllerEpoch: 5,
    });
  });

  test("a dead leader is replaced by the first live ISR member in assignment order", () => {
    expect(electLeader(state(1, [1, 3, 2]), [1, 2, 3], live(2, 3), 5)).toEqual({
      leader: 2,
      leaderEpoch: 4,
      isr: [3, 2],
      controllerEpoch: 5,
    });
  });

  test("a live replica outside the ISR is never elected (no unclean election)", () => {
    expect(electLeader(state(1, [1]), [1, 2, 3], live(2, 3), 5)).toEqual({
      leader: NO_LEADER,
      leaderEpoch: 4,
      isr: [1],
      controllerEpoch: 5,
    });
  });

  test("an offline partition stays offline until its last ISR member returns, then it leads", () => {
    const offline = state(NO_LEADER, [1], 4);
    expect(electLeader(offline, [1, 2, 3], live(2, 3), 5)).toBeNull();
    expect(electLeader(offline, [1, 2, 3], live(1, 2, 3), 6)).toEqual({
      leader: 1,
      leaderEpoch: 5,
      isr: [1],
      controllerEpoch: 6,
    });
  });
});

describe("electForShutdown", () => {
  test("leadership moves to another live ISR member; the leaving broker leaves the ISR", () => {
    expect(electForShutdown(state(1, [1, 2, 3]), [1, 2, 3], 1, live(1, 2, 3), 5)).toEqual({
      leader: 2,
      leaderEpoch: 4,
      isr: [2, 3],
      controllerEpoch: 5,
    });
  });

  test("a follower that leaves drops out of the ISR; the leader stays", () => {
    expect(electForShutdown(state(2, [1, 2]), [1, 2], 1, live(1, 2), 5)).toEqual({
      leader: 2,
      leaderEpoch: 4,
      isr: [2],
      controllerEpoch: 5,
    });
  });

  test("a sole ISR member keeps its leadership (nowhere to move it)", () => {
    expect(electForShutdown(state(1, [1]), [1, 2], 1, live(1, 2), 5)).toBeNull();
  });

  test("a broker outside the ISR changes nothing", () => {
    expect(electForShutdown(state(2, [2, 3]), [1, 2, 3], 1, live(1, 2, 3), 5)).toBeNull();
  });
});

describe("partitionsToRebalance", () => {
  const p = (replicas: number[], leader: number, isr = replicas) => ({
    replicas,
    state: state(leader, isr),
  });

  test("a broker leading none of its preferred partitions gets those whose ISR has it", () => {
    const moved = p([1, 2], 2);
    const notInIsr = p([1, 3], 3, [3]);
    const partitions = [moved, notInIsr, p([2, 1], 2), p([3, 1], 3)];
    expect(partitionsToRebalance(partitions, live(1, 2, 3), 10)).toEqual([moved]);
  });

  test("an imbalance at or under the threshold is left alone; a dead preferred replica too", () => {
    const eleven = Array.from({ length: 10 }, () => p([1, 2], 1));
    expect(partitionsToRebalance([...eleven, p([1, 2], 2)], live(1, 2), 10)).toEqual([]);
    expect(partitionsToRebalance([p([1, 2], 2)], live(2), 10)).toEqual([]);
  });

  test("electPreferred hands leadership back with a new leader epoch, ISR unchanged", () => {
    expect(electPreferred(state(2, [2, 1]), [1, 2], 7)).toEqual({
      leader: 1,
      leaderEpoch: 4,
      isr: [2, 1],
      controllerEpoch: 7,
    });
  });
});
