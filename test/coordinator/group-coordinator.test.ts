import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GroupState } from "../../src/coordinator/group-state.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import {
  commit,
  commitCodes,
  type Fixture,
  heartbeat,
  joinRequest,
  joinWithId,
  leave,
  openFixture,
  protocols,
  rejoin,
  sleep,
  subscription,
  syncAll,
  text,
  waitFor,
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

const { NONE } = ErrorCode;
const isLeader = (j: { leader: string; memberId: string }) => j.leader === j.memberId;

describe("JoinGroup and SyncGroup", () => {
  test("a v4+ new member gets MEMBER_ID_REQUIRED, then leads generation 1", async () => {
    const c = await open();
    const first = await c.joinGroup(joinRequest("g"));
    expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    expect(first.memberId).toStartWith("test-client-");
    expect(c.groupState("g")).toBe(GroupState.Empty);
    const joined = await rejoin(c, "g", first.memberId);
    expect(joined.errorCode).toBe(NONE);
    expect(joined.generationId).toBe(1);
    expect(joined.leader).toBe(first.memberId);
    expect(joined.protocolName).toBe("range");
    expect(joined.protocolType).toBe("consumer");
    expect(joined.members.map((m) => m.memberId)).toEqual([first.memberId]);
    expect(c.groupState("g")).toBe(GroupState.CompletingRebalance);
    const [sync] = await syncAll(c, "g", [joined]);
    expect(sync!.errorCode).toBe(NONE);
    expect(text(sync!.assignment)).toBe(`assigned:${first.memberId}`);
    expect(c.groupState("g")).toBe(GroupState.Stable);
  });

  test("v3 and older clients join directly without MEMBER_ID_REQUIRED", async () => {
    const c = await open();
    const joined = await c.joinGroup(joinRequest("g", { apiVersion: 3 }));
    expect(joined.errorCode).toBe(NONE);
    expect(joined.generationId).toBe(1);
  });

  test("joins in the initial delay share one generation; the leader assigns to all", async () => {
    const c = await open({ initialRebalanceDelayMs: 150 });
    const started = Date.now();
    const joins = await Promise.all([joinWithId(c, "g"), joinWithId(c, "g"), joinWithId(c, "g")]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(new Set(joins.map((j) => j.generationId))).toEqual(new Set([1]));
    const leaders = joins.filter(isLeader);
    expect(leaders).toHaveLength(1);
    expect(leaders[0]!.members).toHaveLength(3);
    expect(joins.filter((j) => j.members.length === 0)).toHaveLength(2);
    const syncs = await syncAll(c, "g", joins);
    const expected = joins.map((j) => `assigned:${j.memberId}`);
    expect(syncs.map((s) => text(s.assignment))).toEqual(expected);
    expect(c.groupState("g")).toBe(GroupState.Stable);
  });

  test("a new member starts a rebalance; the old member learns it by heartbeat", async () => {
    const c = await open();
    const a = await joinWithId(c, "g");
    await syncAll(c, "g", [a]);
    const bJoin = joinWithId(c, "g");
    await waitFor("the rebalance", () => c.groupState("g") === GroupState.PreparingRebalance);
    expect(heartbeat(c, "g", 1, a.memberId)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    // Offsets of the previous generation may still be committed while the group prepares.
    const committed = await commit(c, "g", { "orders:0": 5n }, a);
    expect(commitCodes(committed)).toEqual([NONE]);
    const [a2, b] = await Promise.all([rejoin(c, "g", a.memberId), bJoin]);
    expect(a2.generationId).toBe(2);
    expect(b.generationId).toBe(2);
    expect(a2.leader).toBe(a.memberId);
    expect(a2.members).toHaveLength(2);
    expect(heartbeat(c, "g", 1, a.memberId)).toBe(ErrorCode.ILLEGAL_GENERATION);
  });

  test("a member that does not rejoin is dropped when the rebalance timeout ends", async () => {
    const c = await open();
    const a = await joinWithId(c, "g", { rebalanceTimeoutMs: 100 });
    await syncAll(c, "g", [a]);
    const b = await joinWithId(c, "g", { rebalanceTimeoutMs: 100 });
    expect(b.generationId).toBe(2);
    expect(b.leader).toBe(b.memberId);
    expect(b.members.map((m) => m.memberId)).toEqual([b.memberId]);
    expect(heartbeat(c, "g", 2, a.memberId)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test("a follower rejoining in Stable with the same metadata gets no rebalance", async () => {
    const c = await open({ initialRebalanceDelayMs: 50 });
    const joins = await Promise.all([joinWithId(c, "g"), joinWithId(c, "g")]);
    await syncAll(c, "g", joins);
    const follower = joins.find((j) => !isLeader(j))!;
    const again = await rejoin(c, "g", follower.memberId);
    expect(again.errorCode).toBe(NONE);
    expect(again.generationId).toBe(1);
    expect(c.groupState("g")).toBe(GroupState.Stable);
  });

  test("cooperative: new follower metadata in Stable rebalances, keeping everyone", async () => {
    const c = await open({ initialRebalanceDelayMs: 50 });
    const sticky = (topics: string[]) => ({ protocols: protocols("cooperative-sticky", topics) });
    const joins = await Promise.all([
      joinWithId(c, "g", sticky(["a"])),
      joinWithId(c, "g", sticky(["a"])),
    ]);
    await syncAll(c, "g", joins);
    const leader = joins.find(isLeader)!;
    const follower = joins.find((j) => !isLeader(j))!;
    const followerRejoin = rejoin(c, "g", follower.memberId, sticky(["a", "b"]));
    expect(c.groupState("g")).toBe(GroupState.PreparingRebalance);
    const leaderRejoin = rejoin(c, "g", leader.memberId, sticky(["a"]));
    const [f2, l2] = await Promise.all([followerRejoin, leaderRejoin]);
    expect(f2.generationId).toBe(2);
    const both = [leader.memberId, follower.memberId].sort();
    expect(l2.members.map((m) => m.memberId).sort()).toEqual(both);
    const syncs = await syncAll(c, "g", [f2, l2]);
    expect(syncs.every((s) => s.errorCode === NONE)).toBe(true);
    // A second, immediate rebalance (cooperative clients revoke, then rejoin) keeps both too.
    // The leader's JoinGroup starts it; the follower's, arriving next, joins the same rebalance.
    const [l3, f3] = await Promise.all([
      rejoin(c, "g", leader.memberId, sticky(["a"])),
      rejoin(c, "g", follower.memberId, sticky(["a", "b"])),
    ]);
    expect(f3.generationId).toBe(3);
    expect(l3.members).toHaveLength(2);
  });

  test("a parked follower SyncGroup gets REBALANCE_IN_PROGRESS if a rebalance starts", async () => {
    const c = await open({ initialRebalanceDelayMs: 50 });
    const joins = await Promise.all([joinWithId(c, "g"), joinWithId(c, "g")]);
    const follower = joins.find((j) => !isLeader(j))!;
    const parked = c.syncGroup({
      groupId: "g",
      generationId: 1,
      memberId: follower.memberId,
      groupInstanceId: null,
      protocolType: "consumer",
      protocolName: "range",
      assignments: [],
    });
    void joinWithId(c, "g");
    expect((await parked).errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    expect(c.groupState("g")).toBe(GroupState.PreparingRebalance);
  });

  test("SyncGroup errors: unknown member, wrong generation, inconsistent protocol", async () => {
    const c = await open();
    const a = await joinWithId(c, "g");
    const base = {
      groupId: "g",
      generationId: 1,
      memberId: a.memberId,
      groupInstanceId: null,
      protocolType: "consumer",
      protocolName: "range",
      assignments: [],
    };
    const code = async (overrides: Partial<typeof base>) =>
      (await c.syncGroup({ ...base, ...overrides })).errorCode;
    expect(await code({ memberId: "nobody" })).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(await code({ generationId: 7 })).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect(await code({ protocolName: "roundrobin" })).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    expect(await code({ groupId: "other" })).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test("a follower that never sends SyncGroup is removed after the rebalance timeout", async () => {
    const c = await open({ initialRebalanceDelayMs: 30 });
    const quick = { rebalanceTimeoutMs: 150 };
    const joins = await Promise.all([joinWithId(c, "g", quick), joinWithId(c, "g", quick)]);
    const leader = joins.find(isLeader)!;
    await syncAll(c, "g", [leader]);
    expect(c.groupState("g")).toBe(GroupState.Stable);
    await waitFor("the sync timeout", () => c.groupState("g") !== GroupState.Stable);
    const described = (await c.describeGroups(["g"], 5))[0]!;
    expect(described.members.map((m) => m.memberId)).toEqual([leader.memberId]);
  });
});

describe("validation and limits", () => {
  test("session timeouts outside the configured range get INVALID_SESSION_TIMEOUT", async () => {
    const c = await open({ minSessionTimeoutMs: 1_000, maxSessionTimeoutMs: 5_000 });
    const code = async (sessionTimeoutMs: number) =>
      (await c.joinGroup(joinRequest("g", { sessionTimeoutMs }))).errorCode;
    expect(await code(999)).toBe(ErrorCode.INVALID_SESSION_TIMEOUT);
    expect(await code(5_001)).toBe(ErrorCode.INVALID_SESSION_TIMEOUT);
    expect(await code(5_000)).toBe(ErrorCode.MEMBER_ID_REQUIRED);
  });

  test("INCONSISTENT_GROUP_PROTOCOL for another protocol type or no common protocol", async () => {
    const c = await open();
    expect((await joinWithId(c, "g")).errorCode).toBe(NONE);
    const code = async (groupId: string, overrides: Parameters<typeof joinRequest>[1]) =>
      (await c.joinGroup(joinRequest(groupId, overrides))).errorCode;
    const inconsistent = ErrorCode.INCONSISTENT_GROUP_PROTOCOL;
    expect(await code("g", { protocolType: "connect" })).toBe(inconsistent);
    expect(await code("g", { protocols: protocols("roundrobin") })).toBe(inconsistent);
    expect(await code("fresh", { protocolType: "" })).toBe(inconsistent);
  });

  test("the most voted common protocol is chosen", async () => {
    const c = await open({ initialRebalanceDelayMs: 50 });
    const offer = (names: string[]) => ({ protocols: names.map((name) => protocols(name)[0]!) });
    const joins = await Promise.all([
      joinWithId(c, "g", offer(["roundrobin", "range"])),
      joinWithId(c, "g", offer(["range", "roundrobin"])),
      joinWithId(c, "g", offer(["range", "roundrobin", "sticky"])),
    ]);
    expect(joins.map((j) => j.protocolName)).toEqual(["range", "range", "range"]);
  });

  test("group.max.size: a member beyond it gets GROUP_MAX_SIZE_REACHED", async () => {
    const c = await open({ maxSize: 2, initialRebalanceDelayMs: 50 });
    const joins = await Promise.all([joinWithId(c, "g"), joinWithId(c, "g")]);
    await syncAll(c, "g", joins);
    expect((await joinWithId(c, "g")).errorCode).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
    expect(c.groupState("g")).toBe(GroupState.Stable);
    expect((await c.describeGroups(["g"], 5))[0]!.members).toHaveLength(2);
  });

  test("member metadata larger than the limit is refused with INVALID_REQUEST", async () => {
    const c = await open({ memberMetadataBytesMax: 100 });
    const oversized = [{ name: "range", metadata: new Uint8Array(101) }];
    const big = await c.joinGroup(joinRequest("g", { protocols: oversized }));
    expect(big.errorCode).toBe(ErrorCode.INVALID_REQUEST);
  });

  test("groupsMax refuses a new group but keeps serving existing ones", async () => {
    const c = await open({ groupsMax: 1 });
    expect((await joinWithId(c, "one")).errorCode).toBe(NONE);
    const refused = await c.joinGroup(joinRequest("two"));
    expect(refused.errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(c.groupCount).toBe(1);
  });

  test("an empty group id is INVALID_GROUP_ID for membership APIs", async () => {
    const c = await open();
    expect((await c.joinGroup(joinRequest(""))).errorCode).toBe(ErrorCode.INVALID_GROUP_ID);
    expect(heartbeat(c, "", 1, "m")).toBe(ErrorCode.INVALID_GROUP_ID);
  });

  test("close: parked joins get NOT_COORDINATOR, later COORDINATOR_NOT_AVAILABLE", async () => {
    const c = await open({ initialRebalanceDelayMs: 10_000 });
    const first = await c.joinGroup(joinRequest("g"));
    const parked = rejoin(c, "g", first.memberId);
    c.close();
    expect((await parked).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    const later = await c.joinGroup(joinRequest("g"));
    expect(later.errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });
});

describe("sessions and leaving", () => {
  test("a member that stops heartbeating is removed after its session timeout", async () => {
    const c = await open();
    const a = await joinWithId(c, "g", { sessionTimeoutMs: 400 });
    await syncAll(c, "g", [a]);
    // Heartbeats every 50 ms keep the member for well past its 400 ms session.
    for (let i = 0; i < 12; i++) {
      await sleep(50);
      expect(heartbeat(c, "g", 1, a.memberId)).toBe(NONE);
    }
    // Polling the state, not heartbeating, which would keep the member alive.
    await waitFor("the group to empty", () => c.groupState("g") === GroupState.Empty);
    expect(heartbeat(c, "g", 1, a.memberId)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test("a pending member that never rejoins expires without holding up the rebalance", async () => {
    const c = await open();
    const a = await joinWithId(c, "g", { sessionTimeoutMs: 100 });
    await syncAll(c, "g", [a]);
    const ghost = await c.joinGroup(joinRequest("g", { sessionTimeoutMs: 100 }));
    expect(ghost.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    const again = await rejoin(c, "g", a.memberId, { sessionTimeoutMs: 100 });
    expect(again.generationId).toBe(2);
    expect(again.members.map((m) => m.memberId)).toEqual([a.memberId]);
  });

  test("LeaveGroup removes members, answers per member, and rebalances the rest", async () => {
    const c = await open({ initialRebalanceDelayMs: 50 });
    const [x, y] = await Promise.all([joinWithId(c, "g"), joinWithId(c, "g")]);
    await syncAll(c, "g", [x!, y!]);
    const left = c.leaveGroup({
      groupId: "g",
      members: [
        { memberId: x!.memberId, groupInstanceId: null, reason: "shutting down" },
        { memberId: "stranger", groupInstanceId: null, reason: null },
      ],
    });
    expect(left.errorCode).toBe(NONE);
    expect(left.members.map((m) => m.errorCode)).toEqual([NONE, ErrorCode.UNKNOWN_MEMBER_ID]);
    expect(c.groupState("g")).toBe(GroupState.PreparingRebalance);
    const y2 = await rejoin(c, "g", y!.memberId);
    expect(y2.generationId).toBe(2);
    expect(y2.members.map((m) => m.memberId)).toEqual([y!.memberId]);
    expect(leave(c, "nope", "m").members[0]!.errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test("the group is Empty by the time the last member's LeaveGroup is answered", async () => {
    const c = await open();
    const a = await joinWithId(c, "g");
    await syncAll(c, "g", [a]);
    expect(leave(c, "g", a.memberId).members[0]!.errorCode).toBe(NONE);
    // Same tick: an admin's DeleteGroups right after a consumer's close must succeed.
    expect(c.groupState("g")).toBe(GroupState.Empty);
    expect((await c.describeGroups(["g"], 5))[0]!.groupState).toBe(GroupState.Empty);
  });

  test("a memberless group does not wait out the initial delay", async () => {
    const c = await open({ initialRebalanceDelayMs: 10_000 });
    const first = await c.joinGroup(joinRequest("g"));
    const parked = c.joinGroup(joinRequest("g", { memberId: first.memberId }));
    expect(c.groupState("g")).toBe(GroupState.PreparingRebalance);
    leave(c, "g", first.memberId);
    expect(c.groupState("g")).toBe(GroupState.Empty);
    expect((await parked).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect((await c.deleteGroups(["g"]))[0]!.errorCode).toBe(NONE);
  });

  test("the last member's session expiry leaves the group Empty, never memberless", async () => {
    const c = await open();
    const a = await joinWithId(c, "g", { sessionTimeoutMs: 100 });
    await syncAll(c, "g", [a]);
    // Sampled every millisecond: once the member is gone, no sample may show a rebalance.
    const deadlineMs = Date.now() + 5_000;
    while ((await c.describeGroups(["g"], 5))[0]!.members.length > 0 && Date.now() < deadlineMs) {
      await sleep(1);
    }
    expect((await c.describeGroups(["g"], 5))[0]!.members).toHaveLength(0);
    expect(c.groupState("g")).toBe(GroupState.Empty);
  });
});

describe("leaders and duplicate requests", () => {
  test("when the leader leaves, a remaining member leads the next generation", async () => {
    const c = await open({ initialRebalanceDelayMs: 50 });
    const joins = await Promise.all([joinWithId(c, "g"), joinWithId(c, "g")]);
    await syncAll(c, "g", joins);
    const leader = joins.find(isLeader)!;
    const follower = joins.find((j) => !isLeader(j))!;
    leave(c, "g", leader.memberId);
    const rejoined = await rejoin(c, "g", follower.memberId);
    expect(rejoined.generationId).toBe(2);
    expect(rejoined.leader).toBe(follower.memberId);
    expect(rejoined.members.map((m) => m.memberId)).toEqual([follower.memberId]);
  });

  test("a second JoinGroup from a parked member answers the first one", async () => {
    const c = await open({ initialRebalanceDelayMs: 50 });
    const [x, y] = await Promise.all([joinWithId(c, "g"), joinWithId(c, "g")]);
    await syncAll(c, "g", [x!, y!]);
    const newcomer = joinWithId(c, "g");
    await waitFor("the rebalance", () => c.groupState("g") === GroupState.PreparingRebalance);
    // x rejoins twice while y has not rejoined yet: the first JoinGroup is superseded.
    const first = rejoin(c, "g", x!.memberId);
    const second = rejoin(c, "g", x!.memberId);
    expect((await first).errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    const yRejoin = rejoin(c, "g", y!.memberId);
    const [x2, y2, n] = await Promise.all([second, yRejoin, newcomer]);
    expect([x2.errorCode, y2.errorCode, n.errorCode]).toEqual([NONE, NONE, NONE]);
    expect(new Set([x2.generationId, y2.generationId, n.generationId])).toEqual(new Set([2]));
  });
});

describe("static membership (KIP-345)", () => {
  test("a static member restarting in its session keeps its assignment, no rebalance", async () => {
    const c = await open({ initialRebalanceDelayMs: 50 });
    const joins = await Promise.all([
      joinWithId(c, "g", { groupInstanceId: "pod-1" }),
      joinWithId(c, "g", { groupInstanceId: "pod-2" }),
    ]);
    expect(joins.map((j) => j.errorCode)).toEqual([NONE, NONE]);
    await syncAll(c, "g", joins);
    const members = (await c.describeGroups(["g"], 5))[0]!.members;
    const oldId = members.find((m) => m.groupInstanceId === "pod-2")!.memberId;
    const restarted = await c.joinGroup(joinRequest("g", { groupInstanceId: "pod-2" }));
    expect(restarted.errorCode).toBe(NONE);
    expect(restarted.generationId).toBe(1);
    expect(restarted.memberId).not.toBe(oldId);
    expect(restarted.memberId).toStartWith("pod-2-");
    expect(c.groupState("g")).toBe(GroupState.Stable);
    const sync = await c.syncGroup({
      groupId: "g",
      generationId: 1,
      memberId: restarted.memberId,
      groupInstanceId: "pod-2",
      protocolType: "consumer",
      protocolName: "range",
      assignments: [],
    });
    expect(text(sync.assignment)).toBe(`assigned:${oldId}`);
    // The old incarnation is fenced.
    expect(heartbeat(c, "g", 1, oldId, "pod-2")).toBe(ErrorCode.FENCED_INSTANCE_ID);
    expect(heartbeat(c, "g", 1, restarted.memberId, "pod-2")).toBe(NONE);
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
    const again = await rejoin(c, "g", joins[0]!.memberId, {
      groupInstanceId: "s1",
      rebalanceTimeoutMs: 100,
      protocols: protocols("range", ["orders", "new"]),
    });
    expect(again.generationId).toBe(2);
    expect((await c.describeGroups(["g"], 5))[0]!.members).toHaveLength(2);
  });

  test("LeaveGroup by instance id alone removes the static member", async () => {
    const c = await open();
    const a = await c.joinGroup(joinRequest("g", { groupInstanceId: "pod-9" }));
    await syncAll(c, "g", [a]);
    expect(leave(c, "g", "", "pod-9").members[0]!.errorCode).toBe(NONE);
    expect(c.groupState("g")).toBe(GroupState.Empty);
  });
});

describe("DescribeGroups, ListGroups, DeleteGroups", () => {
  test("describe shows metadata once Stable; unknown groups Dead or not found (v6)", async () => {
    const c = await open();
    const a = await joinWithId(c, "g", { clientId: "app-1" });
    const [completing] = await c.describeGroups(["g"], 5);
    expect(completing!.groupState).toBe("CompletingRebalance");
    expect(completing!.members[0]!.memberAssignment).toHaveLength(0);
    await syncAll(c, "g", [a]);
    const [d, missing] = await c.describeGroups(["g", "nope"], 5);
    const [missingV6] = await c.describeGroups(["nope"], 6);
    expect(d!.groupState).toBe("Stable");
    expect(d!.protocolType).toBe("consumer");
    expect(d!.protocolData).toBe("range");
    expect(d!.members[0]!.clientId).toBe("app-1");
    expect(d!.members[0]!.memberMetadata).toEqual(subscription(["orders"]));
    expect(text(d!.members[0]!.memberAssignment)).toBe(`assigned:${a.memberId}`);
    expect(missing!.errorCode).toBe(NONE);
    expect(missing!.groupState).toBe("Dead");
    expect(missingV6!.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  test("list filters by state case-insensitively and by type", async () => {
    const c = await open();
    const a = await joinWithId(c, "live");
    await syncAll(c, "live", [a]);
    await commit(c, "simple", { "t:0": 1n });
    const list = async (statesFilter: string[], typesFilter: string[]) =>
      (await c.listGroups({ statesFilter, typesFilter })).groups;
    const all = (await list([], [])).map((g) => `${g.groupId}:${g.groupState}`);
    expect(all.sort()).toEqual(["live:Stable", "simple:Empty"]);
    expect((await list(["stable"], [])).map((g) => g.groupId)).toEqual(["live"]);
    expect(await list([], ["Consumer"])).toHaveLength(0);
    expect(await list([], ["classic"])).toHaveLength(2);
  });

  test("delete refuses a group with members, removes an Empty one with its offsets", async () => {
    const c = await open();
    const a = await joinWithId(c, "busy");
    await syncAll(c, "busy", [a]);
    await commit(c, "idle", { "t:0": 9n });
    const results = await c.deleteGroups(["busy", "idle", "ghost"]);
    expect(Object.fromEntries(results.map((r) => [r.groupId, r.errorCode]))).toEqual({
      busy: ErrorCode.NON_EMPTY_GROUP,
      idle: NONE,
      ghost: ErrorCode.GROUP_ID_NOT_FOUND,
    });
    expect(c.groupState("idle")).toBeNull();
    expect(await fixture!.store.listGroups()).not.toContain("idle");
    const topics = [{ name: "t", partitionIndexes: [0] }];
    const fetched = await c.offsetFetch({ groupId: "idle", topics, requireStable: false });
    expect(fetched.topics[0]!.partitions[0]!.committedOffset).toBe(-1n);
  });
});

describe("offsets", () => {
  test("a simple consumer (generation -1) creates a group by committing", async () => {
    const c = await open();
    const result = await commit(c, "simple", { "a:0": 10n, "a:1": 11n, "b:0": 20n });
    expect(commitCodes(result)).toEqual([NONE, NONE, NONE]);
    expect(c.groupState("simple")).toBe(GroupState.Empty);
    const topics = [{ name: "a", partitionIndexes: [1, 7] }];
    const some = await c.offsetFetch({ groupId: "simple", topics, requireStable: true });
    const fetched = (partitionIndex: number, offset: bigint, epoch: number, metadata: string) => ({
      partitionIndex,
      committedOffset: offset,
      committedLeaderEpoch: epoch,
      metadata,
      errorCode: 0,
    });
    const expected = [fetched(1, 11n, 3, "m11"), fetched(7, -1n, -1, "")];
    expect(some.topics[0]!.partitions).toEqual(expected);
    const all = await c.offsetFetch({ groupId: "simple", topics: null, requireStable: false });
    expect(all.topics.map((t) => [t.name, t.partitions.map((p) => p.committedOffset)])).toEqual([
      ["a", [10n, 11n]],
      ["b", [20n]],
    ]);
  });

  test("member commits are checked against member id and generation", async () => {
    const c = await open();
    const a = await joinWithId(c, "g");
    await syncAll(c, "g", [a]);
    const code = async (group: string, member: { generationId: number; memberId: string }) =>
      commitCodes(await commit(c, group, { "t:0": 1n }, member))[0];
    expect(await code("g", { generationId: 1, memberId: a.memberId })).toBe(NONE);
    const { ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID } = ErrorCode;
    expect(await code("g", { generationId: 2, memberId: a.memberId })).toBe(ILLEGAL_GENERATION);
    expect(await code("g", { generationId: 1, memberId: "other" })).toBe(UNKNOWN_MEMBER_ID);
    // A simple consumer may not commit into a group whose members own the partitions.
    expect(await code("g", { generationId: -1, memberId: "" })).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    // A member commit into a group this coordinator does not know comes from an old generation.
    const stranger = { generationId: 3, memberId: "x" };
    expect(await code("nogroup", stranger)).toBe(ErrorCode.ILLEGAL_GENERATION);
  });

  test("commits during CompletingRebalance get REBALANCE_IN_PROGRESS", async () => {
    const c = await open();
    const a = await joinWithId(c, "g");
    expect(c.groupState("g")).toBe(GroupState.CompletingRebalance);
    const result = await commit(c, "g", { "t:0": 1n }, a);
    expect(commitCodes(result)).toEqual([ErrorCode.REBALANCE_IN_PROGRESS]);
  });

  test("metadata longer than offset.metadata.max.bytes fails only that partition", async () => {
    const c = await open({ offsetMetadataMaxBytes: 4 });
    const partition = (partitionIndex: number, committedMetadata: string) => ({
      partitionIndex,
      committedOffset: 2n,
      committedLeaderEpoch: -1,
      committedMetadata,
    });
    const partitions = [partition(0, "five!"), partition(1, "four")];
    const result = await c.offsetCommit({
      groupId: "g",
      generationId: -1,
      memberId: "",
      groupInstanceId: null,
      topics: [{ name: "t", partitions }],
    });
    expect(commitCodes(result)).toEqual([ErrorCode.OFFSET_METADATA_TOO_LARGE, NONE]);
    const topics = [{ name: "t", partitionIndexes: [0, 1] }];
    const fetched = await c.offsetFetch({ groupId: "g", topics, requireStable: false });
    expect(fetched.topics[0]!.partitions.map((p) => p.committedOffset)).toEqual([-1n, 2n]);
  });

  test("offsetsPerCommitMax and offsetsPerGroupMax give INVALID_COMMIT_OFFSET_SIZE", async () => {
    const c = await open({ offsetsPerCommitMax: 2, offsetsPerGroupMax: 3 });
    const code = async (offsets: Record<string, bigint>) =>
      commitCodes(await commit(c, "g", offsets))[0];
    const tooLarge = ErrorCode.INVALID_COMMIT_OFFSET_SIZE;
    expect(await code({ "t:0": 1n, "t:1": 1n, "t:2": 1n })).toBe(tooLarge);
    expect(await code({ "t:0": 1n, "t:1": 1n })).toBe(NONE);
    expect(await code({ "t:0": 2n, "t:2": 1n })).toBe(NONE);
    expect(await code({ "u:0": 1n })).toBe(tooLarge);
  });

  test("after a restart a consumer group is listed and described as before", async () => {
    const dir = mkdtempSync(join(tmpdir(), "quill-coordinator-restart-"));
    const first = await openFixture({}, dir);
    const a = await joinWithId(first.coordinator, "readers");
    await syncAll(first.coordinator, "readers", [a]);
    const member = { generationId: a.generationId, memberId: a.memberId };
    expect(commitCodes(await commit(first.coordinator, "readers", { "t:0": 5n }, member))).toEqual([
      NONE,
    ]);
    leave(first.coordinator, "readers", a.memberId);
    const view = async (c: typeof first.coordinator) => ({
      listed: (await c.listGroups({ statesFilter: [], typesFilter: [] })).groups,
      described: await c.describeGroups(["readers"], 5),
    });
    const before = await view(first.coordinator);
    expect(before.listed).toEqual([
      { groupId: "readers", protocolType: "consumer", groupState: "Empty", groupType: "classic" },
    ]);
    first.coordinator.close();
    await first.store.close();
    fixture = await openFixture({}, dir);
    expect(await view(fixture.coordinator)).toEqual(before);
  });

  test("offsets survive a restart: a new coordinator lists and serves them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "quill-coordinator-restart-"));
    const first = await openFixture({}, dir);
    await commit(first.coordinator, "g", { "t:4": 1234n });
    first.coordinator.close();
    await first.store.close();
    fixture = await openFixture({}, dir);
    const c = fixture.coordinator;
    const listed = (await c.listGroups({ statesFilter: [], typesFilter: [] })).groups;
    expect(listed.map((g) => `${g.groupId}:${g.groupState}`)).toEqual(["g:Empty"]);
    const fetched = await c.offsetFetch({ groupId: "g", topics: null, requireStable: false });
    expect(fetched.topics).toEqual([
      {
        name: "t",
        partitions: [
          {
            partitionIndex: 4,
            committedOffset: 1234n,
            committedLeaderEpoch: 3,
            metadata: "m1234",
            errorCode: NONE,
          },
        ],
      },
    ]);
    await fixture.close();
    fixture = null;
    rmSync(dir, { recursive: true, force: true });
  });

  test("OffsetDelete: GROUP_SUBSCRIBED_TO_TOPIC for subscribed topics; others go", async () => {
    const c = await open();
    const a = await joinWithId(c, "g", { protocols: protocols("range", ["orders"]) });
    await syncAll(c, "g", [a]);
    await commit(c, "g", { "orders:0": 5n, "old:0": 6n }, a);
    const result = await c.offsetDelete({
      groupId: "g",
      topics: [
        { name: "orders", partitions: [0] },
        { name: "old", partitions: [0] },
      ],
    });
    expect(result.errorCode).toBe(NONE);
    expect(result.topics.map((t) => [t.name, t.partitions[0]!.errorCode])).toEqual([
      ["orders", ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC],
      ["old", NONE],
    ]);
    const fetched = await c.offsetFetch({ groupId: "g", topics: null, requireStable: false });
    expect(fetched.topics.map((t) => t.name)).toEqual(["orders"]);
    const missing = await c.offsetDelete({ groupId: "missing", topics: [] });
    expect(missing.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  test("OffsetDelete on a non-consumer group with members is NON_EMPTY_GROUP", async () => {
    const c = await open();
    const connect = [{ name: "sessioned", metadata: new Uint8Array([1]) }];
    const a = await joinWithId(c, "connect", { protocolType: "connect", protocols: connect });
    await syncAll(c, "connect", [a]);
    const topics = [{ name: "t", partitions: [0] }];
    const result = await c.offsetDelete({ groupId: "connect", topics });
    expect(result.errorCode).toBe(ErrorCode.NON_EMPTY_GROUP);
  });
});
