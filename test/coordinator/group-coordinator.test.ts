import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GroupState } from "../../src/coordinator/group-state.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import {
  type Fixture, joinRequest, joinWithId, openFixture, sleep, subscription, waitFor, syncAll, text,
} from "./group-test-support.ts";

let fixture: Fixture | null = null;
afterEach(async () => {
  await fixture?.close();
  fixture = null;
});

async function open(config: Parameters<typeof openFixture>[0] = {}) {
  fixture = await openFixture(config);
  return fixture.coordinator;
}

describe("JoinGroup and SyncGroup", () => {
  test("v4+ new member gets MEMBER_ID_REQUIRED, then joins as leader of generation 1", async () => {
    const c = await open();
    const first = await c.joinGroup(joinRequest("g"));
    expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    expect(first.memberId).toStartWith("test-client-");
    expect(c.groupState("g")).toBe(GroupState.Empty);
    const joined = await c.joinGroup(joinRequest("g", { memberId: first.memberId }));
    expect(joined.errorCode).toBe(ErrorCode.NONE);
    expect(joined.generationId).toBe(1);
    expect(joined.leader).toBe(first.memberId);
    expect(joined.protocolName).toBe("range");
    expect(joined.protocolType).toBe("consumer");
    expect(joined.members.map((m) => m.memberId)).toEqual([first.memberId]);
    expect(c.groupState("g")).toBe(GroupState.CompletingRebalance);
    const [sync] = await syncAll(c, "g", [joined]);
    expect(sync!.errorCode).toBe(ErrorCode.NONE);
    expect(text(sync!.assignment)).toBe(`assigned:${first.memberId}`);
    expect(c.groupState("g")).toBe(GroupState.Stable);
  });

  test("v3 and older clients join directly without MEMBER_ID_REQUIRED", async () => {
    const c = await open();
    const joined = await c.joinGroup(joinRequest("g", { apiVersion: 3 }));
    expect(joined.errorCode).toBe(ErrorCode.NONE);
    expect(joined.generationId).toBe(1);
  });

  test("members joining during the initial delay share one generation; the leader assigns to all", async () => {
    const c = await open({ initialRebalanceDelayMs: 150 });
    const started = Date.now();
    const pending = await Promise.all([joinWithId(c, "g"), joinWithId(c, "g"), joinWithId(c, "g")]);
    const joins = await Promise.all(pending);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(new Set(joins.map((j) => j.generationId))).toEqual(new Set([1]));
    const leaders = joins.filter((j) => j.leader === j.memberId);
    expect(leaders).toHaveLength(1);
    expect(leaders[0]!.members).toHaveLength(3);
    expect(joins.filter((j) => j.members.length === 0)).toHaveLength(2);
    const syncs = await syncAll(c, "g", joins);
    expect(syncs.map((s) => text(s.assignment))).toEqual(joins.map((j) => `assigned:${j.memberId}`));
    expect(c.groupState("g")).toBe(GroupState.Stable);
  });

  test("a new member triggers a rebalance: the old member learns it by heartbeat and rejoins", async () => {
    const c = await open();
    const a = await joinWithId(c, "g");
    await syncAll(c, "g", [a]);
    const bPending = joinWithId(c, "g");
    await sleep(1);
    await sleep(5);
    expect(c.groupState("g")).toBe(GroupState.PreparingRebalance);
    expect(c.heartbeat({ groupId: "g", generationId: 1, memberId: a.memberId, groupInstanceId: null }))
      .toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    // Offsets of the previous generation may still be committed while the group prepares.
    const commit = await c.offsetCommit({
      groupId: "g", generationId: 1, memberId: a.memberId, groupInstanceId: null,
      topics: [{ name: "orders", partitions: [{ partitionIndex: 0, committedOffset: 5n, committedLeaderEpoch: -1, committedMetadata: null }] }],
    });
    expect(commit.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    const aRejoin = c.joinGroup(joinRequest("g", { memberId: a.memberId }));
    const [a2, b] = await Promise.all([aRejoin, (await bPending)]);
    expect(a2.generationId).toBe(2);
    expect(b.generationId).toBe(2);
    expect(a2.leader).toBe(a.memberId);
    expect(a2.members).toHaveLength(2);
    expect(c.heartbeat({ groupId: "g", generationId: 1, memberId: a.memberId, groupInstanceId: null }))
      .toBe(ErrorCode.ILLEGAL_GENERATION);
  });

  test("a member that does not rejoin in time is dropped when the rebalance timeout ends", async () => {
    const c = await open();
    const a = await joinWithId(c, "g", { rebalanceTimeoutMs: 100 });
    await syncAll(c, "g", [a]);
    const b = await (await joinWithId(c, "g", { rebalanceTimeoutMs: 100 }));
    expect(b.generationId).toBe(2);
    expect(b.leader).toBe(b.memberId);
    expect(b.members.map((m) => m.memberId)).toEqual([b.memberId]);
    expect(c.heartbeat({ groupId: "g", generationId: 2, memberId: a.memberId, groupInstanceId: null }))
      .toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test("a follower rejoining in Stable with the same metadata gets the current generation, no rebalance", async () => {
    const c = await open({ initialRebalanceDelayMs: 50 });
    const joins = await Promise.all([joinWithId(c, "g"), joinWithId(c, "g")]);
    await syncAll(c, "g", joins);
    const follower = joins.find((j) => j.leader !== j.memberId)!;
    const again = await c.joinGroup(joinRequest("g", { memberId: follower.memberId }));
    expect(again.errorCode).toBe(ErrorCode.NONE);
    expect(again.generationId).toBe(1);
    expect(c.groupState("g")).toBe(GroupState.Stable);
  });

  test("cooperative rebalance: a follower's new metadata in Stable starts a rebalance that keeps everyone", async () => {
    const c = await open({ initialRebalanceDelayMs: 50 });
    const protocols = (topics: string[]) => [{ name: "cooperative-sticky", metadata: subscription(topics) }];
    const joins = await Promise.all([
      joinWithId(c, "g", { protocols: protocols(["a"]) }), joinWithId(c, "g", { protocols: protocols(["a"]) }),
    ]);
    await syncAll(c, "g", joins);
    const leader = joins.find((j) => j.leader === j.memberId)!;
    const follower = joins.find((j) => j.leader !== j.memberId)!;
    const followerRejoin = c.joinGroup(joinRequest("g", { memberId: follower.memberId, protocols: protocols(["a", "b"]) }));
    expect(c.groupState("g")).toBe(GroupState.PreparingRebalance);
    const leaderRejoin = c.joinGroup(joinRequest("g", { memberId: leader.memberId, protocols: protocols(["a"]) }));
    const [f2, l2] = await Promise.all([followerRejoin, leaderRejoin]);
    expect(f2.generationId).toBe(2);
    expect(l2.members.map((m) => m.memberId).sort()).toEqual([leader.memberId, follower.memberId].sort());
    const syncs = await syncAll(c, "g", [f2, l2]);
    expect(syncs.every((s) => s.errorCode === ErrorCode.NONE)).toBe(true);
    // A second, immediate rebalance (cooperative clients revoke, then rejoin) keeps both too.
    // The leader's JoinGroup starts it; the follower's, arriving next, joins the same rebalance.
    const [l3, f3] = await Promise.all([
      c.joinGroup(joinRequest("g", { memberId: leader.memberId, protocols: protocols(["a"]) })),
      c.joinGroup(joinRequest("g", { memberId: follower.memberId, protocols: protocols(["a", "b"]) })),
    ]);
    expect(f3.generationId).toBe(3);
    expect(l3.members).toHaveLength(2);
  });

  test("SyncGroup from followers waits for the leader; REBALANCE_IN_PROGRESS if a rebalance starts first", async () => {
    const c = await open({ initialRebalanceDelayMs: 50 });
    const joins = await Promise.all([joinWithId(c, "g"), joinWithId(c, "g")]);
    const follower = joins.find((j) => j.leader !== j.memberId)!;
    const parked = c.syncGroup({
      groupId: "g", generationId: 1, memberId: follower.memberId, groupInstanceId: null,
      protocolType: "consumer", protocolName: "range", assignments: [],
    });
    const newcomer = joinWithId(c, "g");
    const answer = await parked;
    expect(answer.errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    expect(c.groupState("g")).toBe(GroupState.PreparingRebalance);
    void newcomer;
  });

  test("SyncGroup errors: unknown member, wrong generation, inconsistent protocol", async () => {
    const c = await open();
    const a = await joinWithId(c, "g");
    const base = {
      groupId: "g", generationId: 1, memberId: a.memberId, groupInstanceId: null,
      protocolType: "consumer", protocolName: "range", assignments: [],
    };
    expect((await c.syncGroup({ ...base, memberId: "nobody" })).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect((await c.syncGroup({ ...base, generationId: 7 })).errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect((await c.syncGroup({ ...base, protocolName: "roundrobin" })).errorCode)
      .toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    expect((await c.syncGroup({ ...base, groupId: "other" })).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test("a follower that never sends SyncGroup is removed after the rebalance timeout", async () => {
    const c = await open({ initialRebalanceDelayMs: 30 });
    const joins = await Promise.all([
      joinWithId(c, "g", { rebalanceTimeoutMs: 150 }), joinWithId(c, "g", { rebalanceTimeoutMs: 150 }),
    ]);
    const leader = joins.find((j) => j.leader === j.memberId)!;
    await syncAll(c, "g", [leader]);
    expect(c.groupState("g")).toBe(GroupState.Stable);
    await waitFor("the sync timeout", () => c.groupState("g") !== GroupState.Stable);
    const described = c.describeGroups(["g"], 5)[0]!;
    expect(described.members.map((m) => m.memberId)).toEqual([leader.memberId]);
  });
});

describe("validation and limits", () => {
  test("session timeouts outside the configured range get INVALID_SESSION_TIMEOUT", async () => {
    const c = await open({ minSessionTimeoutMs: 1_000, maxSessionTimeoutMs: 5_000 });
    expect((await c.joinGroup(joinRequest("g", { sessionTimeoutMs: 999 }))).errorCode)
      .toBe(ErrorCode.INVALID_SESSION_TIMEOUT);
    expect((await c.joinGroup(joinRequest("g", { sessionTimeoutMs: 5_001 }))).errorCode)
      .toBe(ErrorCode.INVALID_SESSION_TIMEOUT);
    expect((await c.joinGroup(joinRequest("g", { sessionTimeoutMs: 5_000 }))).errorCode)
      .toBe(ErrorCode.MEMBER_ID_REQUIRED);
  });

  test("INCONSISTENT_GROUP_PROTOCOL for another protocol type or no common protocol", async () => {
    const c = await open();
    const a = await joinWithId(c, "g");
    expect(a.errorCode).toBe(ErrorCode.NONE);
    const otherType = await c.joinGroup(joinRequest("g", { protocolType: "connect" }));
    expect(otherType.errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    const noCommon = await c.joinGroup(joinRequest("g", { protocols: [{ name: "roundrobin", metadata: new Uint8Array() }] }));
    expect(noCommon.errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    const emptyType = await c.joinGroup(joinRequest("fresh", { protocolType: "" }));
    expect(emptyType.errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
  });

  test("the most voted common protocol is chosen", async () => {
    const c = await open({ initialRebalanceDelayMs: 50 });
    const p = (names: string[]) => names.map((name) => ({ name, metadata: subscription(["t"]) }));
    const joins = await Promise.all([
      joinWithId(c, "g", { protocols: p(["roundrobin", "range"]) }),
      joinWithId(c, "g", { protocols: p(["range", "roundrobin"]) }),
      joinWithId(c, "g", { protocols: p(["range", "roundrobin", "sticky"]) }),
    ]);
    expect(joins.map((j) => j.protocolName)).toEqual(["range", "range", "range"]);
  });

  test("group.max.size: a member beyond it gets GROUP_MAX_SIZE_REACHED", async () => {
    const c = await open({ maxSize: 2, initialRebalanceDelayMs: 50 });
    const joins = await Promise.all([joinWithId(c, "g"), joinWithId(c, "g")]);
    await syncAll(c, "g", joins);
    const third = await joinWithId(c, "g");
    expect(third.errorCode).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
    expect(c.groupState("g")).toBe(GroupState.Stable);
  });

  test("member metadata larger than the limit is refused with INVALID_REQUEST", async () => {
    const c = await open({ memberMetadataBytesMax: 100 });
    const big = await c.joinGroup(joinRequest("g", { protocols: [{ name: "range", metadata: new Uint8Array(101) }] }));
    expect(big.errorCode).toBe(ErrorCode.INVALID_REQUEST);
  });

  test("groupsMax refuses a new group but keeps serving existing ones", async () => {
    const c = await open({ groupsMax: 1 });
    expect((await joinWithId(c, "one")).errorCode).toBe(ErrorCode.NONE);
    expect((await c.joinGroup(joinRequest("two"))).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(c.groupCount).toBe(1);
  });

  test("empty group id is INVALID_GROUP_ID for membership APIs", async () => {
    const c = await open();
    expect((await c.joinGroup(joinRequest(""))).errorCode).toBe(ErrorCode.INVALID_GROUP_ID);
    expect(c.heartbeat({ groupId: "", generationId: 1, memberId: "m", groupInstanceId: null }))
      .toBe(ErrorCode.INVALID_GROUP_ID);
  });

  test("a closed coordinator answers COORDINATOR_NOT_AVAILABLE and parked joins NOT_COORDINATOR", async () => {
    const c = await open({ initialRebalanceDelayMs: 10_000 });
    const first = await c.joinGroup(joinRequest("g"));
    const parked = c.joinGroup(joinRequest("g", { memberId: first.memberId }));
    c.close();
    expect((await parked).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    expect((await c.joinGroup(joinRequest("g"))).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });
});

describe("sessions and leaving", () => {
  test("a member that stops heartbeating is removed after its session timeout", async () => {
    const c = await open();
    const a = await joinWithId(c, "g", { sessionTimeoutMs: 400 });
    await syncAll(c, "g", [a]);
    const heartbeat = { groupId: "g", generationId: 1, memberId: a.memberId, groupInstanceId: null };
    // Heartbeats every 50 ms keep the member for well past its 400 ms session.
    for (let i = 0; i < 12; i++) {
      await sleep(50);
      expect(c.heartbeat(heartbeat)).toBe(ErrorCode.NONE);
    }
    // Polling with describe, not heartbeat, which would keep the member alive.
    await waitFor("the group to empty", () => c.groupState("g") === GroupState.Empty);
    expect(c.heartbeat(heartbeat)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test("a pending member that never rejoins expires and does not hold up the rebalance", async () => {
    const c = await open();
    const a = await joinWithId(c, "g", { sessionTimeoutMs: 100 });
    await syncAll(c, "g", [a]);
    const ghost = await c.joinGroup(joinRequest("g", { sessionTimeoutMs: 100 }));
    expect(ghost.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    const rejoin = await c.joinGroup(joinRequest("g", { memberId: a.memberId, sessionTimeoutMs: 100 }));
    expect(rejoin.generationId).toBe(2);
    expect(rejoin.members.map((m) => m.memberId)).toEqual([a.memberId]);
  });

  test("LeaveGroup removes members, answers per member, and rebalances the rest", async () => {
    const c = await open({ initialRebalanceDelayMs: 50 });
    const joins = await Promise.all([joinWithId(c, "g"), joinWithId(c, "g")]);
    await syncAll(c, "g", joins);
    const [x, y] = joins as [typeof joins[0], typeof joins[0]];
    const left = c.leaveGroup({ groupId: "g", members: [
      { memberId: x.memberId, groupInstanceId: null, reason: "shutting down" },
      { memberId: "stranger", groupInstanceId: null, reason: null },
    ] });
    expect(left.errorCode).toBe(ErrorCode.NONE);
    expect(left.members.map((m) => m.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]);
    expect(c.groupState("g")).toBe(GroupState.PreparingRebalance);
    const y2 = await c.joinGroup(joinRequest("g", { memberId: y.memberId }));
    expect(y2.generationId).toBe(2);
    expect(y2.members.map((m) => m.memberId)).toEqual([y.memberId]);
    expect(c.leaveGroup({ groupId: "nope", members: [{ memberId: "m", groupInstanceId: null, reason: null }] })
      .members[0]!.errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test("the last member leaving makes the group Empty", async () => {
    const c = await open();
    const a = await joinWithId(c, "g");
    await syncAll(c, "g", [a]);
    c.leaveGroup({ groupId: "g", members: [{ memberId: a.memberId, groupInstanceId: null, reason: null }] });
    await waitFor("the group to empty", () => c.groupState("g") === GroupState.Empty);
  });
});

describe("leaders and duplicate requests", () => {
  test("when the leader leaves, a remaining member leads the next generation", async () => {
    const c = await open({ initialRebalanceDelayMs: 50 });
    const joins = await Promise.all([joinWithId(c, "g"), joinWithId(c, "g")]);
    await syncAll(c, "g", joins);
    const leader = joins.find((j) => j.leader === j.memberId)!;
    const follower = joins.find((j) => j.leader !== j.memberId)!;
    c.leaveGroup({ groupId: "g", members: [{ memberId: leader.memberId, groupInstanceId: null, reason: null }] });
    const rejoined = await c.joinGroup(joinRequest("g", { memberId: follower.memberId }));
    expect(rejoined.generationId).toBe(2);
    expect(rejoined.leader).toBe(follower.memberId);
    expect(rejoined.members.map((m) => m.memberId)).toEqual([follower.memberId]);
  });

  test("a second JoinGroup from a parked member answers the first, so no request is left hanging", async () => {
    const c = await open({ initialRebalanceDelayMs: 50 });
    const [x, y] = await Promise.all([joinWithId(c, "g"), joinWithId(c, "g")]);
    await syncAll(c, "g", [x!, y!]);
    const newcomer = joinWithId(c, "g");
    await sleep(5);
    // x rejoins twice while y has not rejoined yet: the first JoinGroup is superseded.
    const first = c.joinGroup(joinRequest("g", { memberId: x!.memberId }));
    const second = c.joinGroup(joinRequest("g", { memberId: x!.memberId }));
    expect((await first).errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    const yRejoin = c.joinGroup(joinRequest("g", { memberId: y!.memberId }));
    const [x2, y2, n] = await Promise.all([second, yRejoin, newcomer]);
    expect([x2.errorCode, y2.errorCode, n.errorCode]).toEqual([0, 0, 0]);
    expect(new Set([x2.generationId, y2.generationId, n.generationId])).toEqual(new Set([2]));
  });

  test("a lowered group.max.size sheds the members that rejoin last", async () => {
    const c = await open({ maxSize: 1, initialRebalanceDelayMs: 0 });
    const a = await joinWithId(c, "g");
    await syncAll(c, "g", [a]);
    // A second member cannot get in while the group is full.
    expect((await joinWithId(c, "g")).errorCode).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
    expect(c.describeGroups(["g"], 5)[0]!.members).toHaveLength(1);
  });
});

describe("static membership (KIP-345)", () => {
  test("a static member restarting within its session keeps its assignment without a rebalance", async () => {
    const c = await open({ initialRebalanceDelayMs: 50 });
    const joins = await Promise.all([
      joinWithId(c, "g", { groupInstanceId: "pod-1" }), joinWithId(c, "g", { groupInstanceId: "pod-2" }),
    ]);
    expect(joins.map((j) => j.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.NONE]);
    await syncAll(c, "g", joins);
    const describedBefore = c.describeGroups(["g"], 5)[0]!;
    const old = joins.find((j) => describedBefore.members.find((m) => m.memberId === j.memberId)?.groupInstanceId === "pod-2")!;
    const restarted = await c.joinGroup(joinRequest("g", { groupInstanceId: "pod-2" }));
    expect(restarted.errorCode).toBe(ErrorCode.NONE);
    expect(restarted.generationId).toBe(1);
    expect(restarted.memberId).not.toBe(old.memberId);
    expect(restarted.memberId).toStartWith("pod-2-");
    expect(c.groupState("g")).toBe(GroupState.Stable);
    const sync = await c.syncGroup({
      groupId: "g", generationId: 1, memberId: restarted.memberId, groupInstanceId: "pod-2",
      protocolType: "consumer", protocolName: "range", assignments: [],
    });
    expect(text(sync.assignment)).toBe(`assigned:${old.memberId}`);
    // The old incarnation is fenced.
    expect(c.heartbeat({ groupId: "g", generationId: 1, memberId: old.memberId, groupInstanceId: "pod-2" }))
      .toBe(ErrorCode.FENCED_INSTANCE_ID);
    expect(c.heartbeat({ groupId: "g", generationId: 1, memberId: restarted.memberId, groupInstanceId: "pod-2" }))
      .toBe(ErrorCode.NONE);
  });

  test("a restarted static leader on v9+ is told it leads but to skip the assignment", async () => {
    const c = await open();
    const first = await c.joinGroup(joinRequest("g", { groupInstanceId: "pod-1", apiVersion: 9 }));
    await syncAll(c, "g", [first]);
    const again = await c.joinGroup(joinRequest("g", { groupInstanceId: "pod-1", apiVersion: 9 }));
    expect(again.leader).toBe(again.memberId);
    expect(again.skipAssignment).toBe(true);
    expect(again.members).toHaveLength(1);
    const older = await c.joinGroup(joinRequest("g", { groupInstanceId: "pod-1", apiVersion: 5 }));
    expect(older.leader).toBe(again.memberId);
    expect(older.leader).not.toBe(older.memberId);
    expect(older.skipAssignment).toBe(false);
  });

  test("a static member that does not rejoin keeps its place through a rebalance", async () => {
    const c = await open({ initialRebalanceDelayMs: 30 });
    const joins = await Promise.all([
      joinWithId(c, "g", { groupInstanceId: "s1", rebalanceTimeoutMs: 100 }),
      joinWithId(c, "g", { groupInstanceId: "s2", rebalanceTimeoutMs: 100 }),
    ]);
    await syncAll(c, "g", joins);
    const [s1] = joins;
    const rejoin = await c.joinGroup(joinRequest("g", { memberId: s1!.memberId, groupInstanceId: "s1", rebalanceTimeoutMs: 100,
      protocols: [{ name: "range", metadata: subscription(["orders", "new-topic"]) }] }));
    expect(rejoin.generationId).toBe(2);
    expect(c.describeGroups(["g"], 5)[0]!.members).toHaveLength(2);
  });

  test("LeaveGroup by instance id alone removes the static member", async () => {
    const c = await open();
    const a = await c.joinGroup(joinRequest("g", { groupInstanceId: "pod-9" }));
    await syncAll(c, "g", [a]);
    const left = c.leaveGroup({ groupId: "g", members: [{ memberId: "", groupInstanceId: "pod-9", reason: null }] });
    expect(left.members[0]!.errorCode).toBe(ErrorCode.NONE);
    await waitFor("the group to empty", () => c.groupState("g") === GroupState.Empty);
  });
});

describe("DescribeGroups, ListGroups, DeleteGroups", () => {
  test("describe shows metadata and assignments once Stable; unknown groups are Dead (v<6) or not found", async () => {
    const c = await open();
    const a = await joinWithId(c, "g", { clientId: "app-1" });
    expect(c.describeGroups(["g"], 5)[0]!.groupState).toBe("CompletingRebalance");
    expect(c.describeGroups(["g"], 5)[0]!.members[0]!.memberAssignment).toHaveLength(0);
    await syncAll(c, "g", [a]);
    const [d, missing, missingV6] = [...c.describeGroups(["g", "nope"], 5), ...c.describeGroups(["nope"], 6)];
    expect(d!.groupState).toBe("Stable");
    expect(d!.protocolType).toBe("consumer");
    expect(d!.protocolData).toBe("range");
    expect(d!.members[0]!.clientId).toBe("app-1");
    expect(d!.members[0]!.memberMetadata).toEqual(subscription(["orders"]));
    expect(text(d!.members[0]!.memberAssignment)).toBe(`assigned:${a.memberId}`);
    expect(missing!.errorCode).toBe(ErrorCode.NONE);
    expect(missing!.groupState).toBe("Dead");
    expect(missingV6!.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  test("list filters by state case-insensitively and by type", async () => {
    const c = await open();
    const a = await joinWithId(c, "live");
    await syncAll(c, "live", [a]);
    await c.offsetCommit({ groupId: "simple", generationId: -1, memberId: "", groupInstanceId: null,
      topics: [{ name: "t", partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: null }] }] });
    const all = c.listGroups({ statesFilter: [], typesFilter: [] }).groups.map((g) => `${g.groupId}:${g.groupState}`);
    expect(all.sort()).toEqual(["live:Stable", "simple:Empty"]);
    expect(c.listGroups({ statesFilter: ["stable"], typesFilter: [] }).groups.map((g) => g.groupId)).toEqual(["live"]);
    expect(c.listGroups({ statesFilter: [], typesFilter: ["Consumer"] }).groups).toHaveLength(0);
    expect(c.listGroups({ statesFilter: [], typesFilter: ["classic"] }).groups).toHaveLength(2);
  });

  test("delete refuses a group with members and removes an Empty one with its offsets", async () => {
    const c = await open();
    const a = await joinWithId(c, "busy");
    await syncAll(c, "busy", [a]);
    await c.offsetCommit({ groupId: "idle", generationId: -1, memberId: "", groupInstanceId: null,
      topics: [{ name: "t", partitions: [{ partitionIndex: 0, committedOffset: 9n, committedLeaderEpoch: -1, committedMetadata: null }] }] });
    const results = await c.deleteGroups(["busy", "idle", "ghost"]);
    expect(Object.fromEntries(results.map((r) => [r.groupId, r.errorCode]))).toEqual({
      busy: ErrorCode.NON_EMPTY_GROUP, idle: ErrorCode.NONE, ghost: ErrorCode.GROUP_ID_NOT_FOUND,
    });
    expect(c.groupState("idle")).toBeNull();
    expect(await fixture!.store.listGroups()).not.toContain("idle");
    const fetched = await c.offsetFetch({ groupId: "idle", topics: [{ name: "t", partitionIndexes: [0] }], requireStable: false });
    expect(fetched.topics[0]!.partitions[0]!.committedOffset).toBe(-1n);
  });
});

describe("offsets", () => {
  const commit = (groupId: string, offsets: Record<string, bigint>, member = { generationId: -1, memberId: "" }) => {
    const byTopic = new Map<string, { partitionIndex: number; committedOffset: bigint; committedLeaderEpoch: number; committedMetadata: string | null }[]>();
    for (const [tp, offset] of Object.entries(offsets)) {
      const [topic, partition] = tp.split(":") as [string, string];
      const list = byTopic.get(topic) ?? [];
      list.push({ partitionIndex: Number(partition), committedOffset: offset, committedLeaderEpoch: 3, committedMetadata: `m${offset}` });
      byTopic.set(topic, list);
    }
    return fixture!.coordinator.offsetCommit({
      groupId, ...member, groupInstanceId: null,
      topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })),
    });
  };

  test("a simple consumer (generation -1) creates the group by committing; fetch returns what was committed", async () => {
    const c = await open();
    const result = await commit("simple", { "a:0": 10n, "a:1": 11n, "b:0": 20n });
    expect(result.topics.flatMap((t) => t.partitions.map((p) => p.errorCode))).toEqual([0, 0, 0]);
    expect(c.groupState("simple")).toBe(GroupState.Empty);
    const some = await c.offsetFetch({ groupId: "simple", topics: [{ name: "a", partitionIndexes: [1, 7] }], requireStable: true });
    expect(some.topics[0]!.partitions).toEqual([
      { partitionIndex: 1, committedOffset: 11n, committedLeaderEpoch: 3, metadata: "m11", errorCode: 0 },
      { partitionIndex: 7, committedOffset: -1n, committedLeaderEpoch: -1, metadata: "", errorCode: 0 },
    ]);
    const all = await c.offsetFetch({ groupId: "simple", topics: null, requireStable: false });
    expect(all.topics.map((t) => [t.name, t.partitions.map((p) => p.committedOffset)])).toEqual([
      ["a", [10n, 11n]], ["b", [20n]],
    ]);
  });

  test("member commits are checked against member id and generation", async () => {
    const c = await open();
    const a = await joinWithId(c, "g");
    await syncAll(c, "g", [a]);
    const codes = async (member: { generationId: number; memberId: string }) =>
      (await commit("g", { "t:0": 1n }, member)).topics[0]!.partitions[0]!.errorCode;
    expect(await codes({ generationId: 1, memberId: a.memberId })).toBe(ErrorCode.NONE);
    expect(await codes({ generationId: 2, memberId: a.memberId })).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect(await codes({ generationId: 1, memberId: "other" })).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    // A simple consumer may not commit into a group whose members own the partitions.
    expect(await codes({ generationId: -1, memberId: "" })).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    // A member commit into a group this coordinator does not know comes from an old generation.
    const unknownGroup = await commit("nogroup", { "t:0": 1n }, { generationId: 3, memberId: "x" });
    expect(unknownGroup.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
  });

  test("commits during CompletingRebalance get REBALANCE_IN_PROGRESS", async () => {
    const c = await open();
    const a = await joinWithId(c, "g");
    expect(c.groupState("g")).toBe(GroupState.CompletingRebalance);
    const r = await commit("g", { "t:0": 1n }, { generationId: 1, memberId: a.memberId });
    expect(r.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
  });

  test("metadata longer than offset.metadata.max.bytes fails only that partition", async () => {
    const c = await open({ offsetMetadataMaxBytes: 4 });
    const r = await c.offsetCommit({ groupId: "g", generationId: -1, memberId: "", groupInstanceId: null, topics: [{ name: "t", partitions: [
      { partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: "long!" },
      { partitionIndex: 1, committedOffset: 2n, committedLeaderEpoch: -1, committedMetadata: "ok" },
    ] }] });
    expect(r.topics[0]!.partitions.map((p) => p.errorCode)).toEqual([ErrorCode.OFFSET_METADATA_TOO_LARGE, ErrorCode.NONE]);
    const f = await c.offsetFetch({ groupId: "g", topics: [{ name: "t", partitionIndexes: [0, 1] }], requireStable: false });
    expect(f.topics[0]!.partitions.map((p) => p.committedOffset)).toEqual([-1n, 2n]);
  });

  test("offsetsPerCommitMax and offsetsPerGroupMax give INVALID_COMMIT_OFFSET_SIZE", async () => {
    await open({ offsetsPerCommitMax: 2, offsetsPerGroupMax: 3 });
    expect((await commit("g", { "t:0": 1n, "t:1": 1n, "t:2": 1n })).topics[0]!.partitions[0]!.errorCode)
      .toBe(ErrorCode.INVALID_COMMIT_OFFSET_SIZE);
    expect((await commit("g", { "t:0": 1n, "t:1": 1n })).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    expect((await commit("g", { "t:0": 2n, "t:2": 1n })).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    expect((await commit("g", { "u:0": 1n })).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.INVALID_COMMIT_OFFSET_SIZE);
  });

  test("offsets survive a restart: a new coordinator on the reopened store lists and serves them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "quill-coordinator-restart-"));
    const first = await openFixture({}, dir);
    await first.coordinator.offsetCommit({ groupId: "g", generationId: -1, memberId: "", groupInstanceId: null,
      topics: [{ name: "t", partitions: [{ partitionIndex: 4, committedOffset: 1234n, committedLeaderEpoch: 2, committedMetadata: "meta" }] }] });
    first.coordinator.close();
    await first.store.close();
    fixture = await openFixture({}, dir);
    const c = fixture.coordinator;
    expect(c.listGroups({ statesFilter: [], typesFilter: [] }).groups.map((g) => `${g.groupId}:${g.groupState}`)).toEqual(["g:Empty"]);
    const f = await c.offsetFetch({ groupId: "g", topics: null, requireStable: false });
    expect(f.topics).toEqual([{ name: "t", partitions: [
      { partitionIndex: 4, committedOffset: 1234n, committedLeaderEpoch: 2, metadata: "meta", errorCode: 0 },
    ] }]);
    await fixture.close();
    fixture = null;
    rmSync(dir, { recursive: true, force: true });
  });

  test("OffsetDelete: GROUP_SUBSCRIBED_TO_TOPIC for subscribed topics, deleted otherwise", async () => {
    const c = await open();
    const a = await joinWithId(c, "g", { protocols: [{ name: "range", metadata: subscription(["orders"]) }] });
    await syncAll(c, "g", [a]);
    await commit("g", { "orders:0": 5n, "old:0": 6n }, { generationId: 1, memberId: a.memberId });
    const r = await c.offsetDelete({ groupId: "g", topics: [{ name: "orders", partitions: [0] }, { name: "old", partitions: [0] }] });
    expect(r.errorCode).toBe(ErrorCode.NONE);
    expect(r.topics.map((t) => [t.name, t.partitions[0]!.errorCode])).toEqual([
      ["orders", ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC], ["old", ErrorCode.NONE],
    ]);
    const f = await c.offsetFetch({ groupId: "g", topics: null, requireStable: false });
    expect(f.topics.map((t) => t.name)).toEqual(["orders"]);
    expect((await c.offsetDelete({ groupId: "missing", topics: [] })).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  test("OffsetDelete on a non-consumer group with members is NON_EMPTY_GROUP", async () => {
    const c = await open();
    const a = await joinWithId(c, "connect", { protocolType: "connect", protocols: [{ name: "sessioned", metadata: new Uint8Array([1]) }] });
    await syncAll(c, "connect", [a]);
    const r = await c.offsetDelete({ groupId: "connect", topics: [{ name: "t", partitions: [0] }] });
    expect(r.errorCode).toBe(ErrorCode.NON_EMPTY_GROUP);
  });
});
