import { expect, test } from "bun:test";
import { ShareGroupManager } from "../../src/coordinator/share-group-manager.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";

const settings = { sessionTimeoutMs: 60_000, heartbeatIntervalMs: 100, maxSize: 3, groupsMax: 10 };

function manager(partitions = 2) {
  return new ShareGroupManager(settings, (topics) => {
    return new Map([...topics].map((t) => [t, partitions]));
  });
}

const join = (m: ShareGroupManager, memberId: string) =>
  m.heartbeat({
    groupId: "g",
    memberId,
    memberEpoch: 0,
    rackId: null,
    subscribedTopicNames: ["t"],
    clientId: "c",
    clientHost: "/h",
  });

const beat = (m: ShareGroupManager, memberId: string, memberEpoch: number) =>
  m.heartbeat({
    groupId: "g",
    memberId,
    memberEpoch,
    rackId: null,
    subscribedTopicNames: null,
    clientId: "c",
    clientHost: "/h",
  });

const parts = (r: { assignment: ReadonlyMap<string, ReadonlySet<number>> | null }) =>
  [...(r.assignment?.get("t") ?? [])].sort();

test("more members than partitions share them; fewer split them", () => {
  const m = manager(2);
  const a = join(m, "a");
  expect(parts(a)).toEqual([0, 1]);
  join(m, "b");
  const c = join(m, "c");
  expect(parts(c)).toEqual([0]);
  // a hears its new assignment on its next heartbeat, at the new epoch.
  const a2 = beat(m, "a", a.memberEpoch);
  expect(a2.memberEpoch).toBe(c.memberEpoch);
  expect(parts(a2)).toEqual([0]);
  expect(parts(beat(m, "b", 1))).toEqual([1]);
  m.close();
});

test("join limits, unknown members, stale epochs and leaving", () => {
  const m = manager(1);
  for (const id of ["a", "b", "c"]) expect(join(m, id).errorCode).toBe(ErrorCode.NONE);
  expect(join(m, "d").errorCode).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
  expect(beat(m, "x", 3).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  expect(beat(m, "a", 99).errorCode).toBe(ErrorCode.FENCED_MEMBER_EPOCH);
  expect(beat(m, "a", -1).memberEpoch).toBe(-1);
  expect(m.get("g")!.members.size).toBe(2);
  expect(beat(m, "", 1).errorCode).toBe(ErrorCode.INVALID_REQUEST);
  m.close();
});
