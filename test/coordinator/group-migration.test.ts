// Online upgrade and downgrade of a running group (group.consumer.migration.policy): classic
// members of a consumer group join, sync and heartbeat through the consumer group's state
// machine, with the partitions the server-side assignor gives them, until the last
// KIP-848 member leaves and the group is a classic group again.
import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { HeartbeatRequest } from "../../src/coordinator/consumer-group-manager.ts";
import { decodeAssignment, encodeAssignment } from "../../src/coordinator/consumer-protocol.ts";
import type { GroupConfig } from "../../src/coordinator/group-config.ts";
import type { JoinGroupResult } from "../../src/coordinator/group-operations.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { Writer } from "../../src/protocol/writer.ts";
import {
  commit,
  consumerHeartbeatRequest,
  heartbeat,
  joinRequest,
  leave,
  openFixture,
} from "./group-test-support.ts";

const fixtures: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const f of fixtures.splice(0)) await f.close();
});

const PARTITIONS = 4;

async function open(config: Partial<GroupConfig> = {}, on?: string) {
  const fixture = await openFixture(config, on, () => new Map([["orders", PARTITIONS]]));
  fixtures.push(fixture);
  return fixture.coordinator;
}

/** ConsumerProtocolSubscription v1: topics, no user data, the partitions the member owns. */
function subscriptionV1(owned: ReadonlyMap<string, ReadonlySet<number>>): Uint8Array {
  const w = new Writer();
  w.int16(1);
  w.arrayLength(1, false);
  w.string("orders");
  w.nullableBytes(null);
  w.arrayLength(owned.size, false);
  for (const [topic, ps] of owned) {
    w.string(topic);
    w.arrayLength(ps.size, false);
    for (const p of ps) w.int32(p);
  }
  return w.toBytes();
}

type Coordinator = Awaited<ReturnType<typeof open>>;
const GROUP = "g";
const NONE = new Map<string, Set<number>>();

function classicJoin(c: Coordinator, memberId: string, owned = NONE, protocolType = "consumer") {
  const protocols = [{ name: "range", metadata: subscriptionV1(owned) }];
  return c.joinGroup(joinRequest(GROUP, { memberId, protocols, protocolType, apiVersion: 9 }));
}

function sync(c: Coordinator, j: JoinGroupResult, assignments: [string, Uint8Array][] = []) {
  return c.syncGroup({
    groupId: GROUP,
    generationId: j.generationId,
    memberId: j.memberId,
    groupInstanceId: null,
    protocolType: "consumer",
    protocolName: j.protocolName,
    assignments: assignments.map(([memberId, assignment]) => ({ memberId, assignment })),
  });
}

const hb = (r: Partial<HeartbeatRequest>): HeartbeatRequest =>
  consumerHeartbeatRequest({ groupId: GROUP, memberId: "c", ...r });

/** A Stable classic group of a and b at generation 1, a owning 0-1 and b 2-3. */
async function classicGroup(c: Coordinator) {
  const [a0, b0] = await Promise.all([classicJoin(c, ""), classicJoin(c, "")]);
  const [a, b] = await Promise.all([classicJoin(c, a0.memberId), classicJoin(c, b0.memberId)]);
  const leader = a!.leader === a!.memberId ? a! : b!;
  const follower = leader === a ? b! : a!;
  const half = (ps: number[]) => encodeAssignment(new Map([["orders", new Set(ps)]]), 1);
  const assignments: [string, Uint8Array][] = [
    [leader.memberId, half([0, 1])],
    [follower.memberId, half([2, 3])],
  ];
  await Promise.all([sync(c, leader, assignments), sync(c, follower)]);
  expect(c.groupState(GROUP)).toBe("Stable");
  return { a: leader.memberId, b: follower.memberId, generation: leader.generationId };
}

interface Classic {
  id: string;
  generation: number;
  owned: Map<string, Set<number>>;
}

/** One round: each classic member heartbeats (rejoining and syncing when told), then c. */
async function round(
  c: Coordinator,
  classics: Classic[],
  consumer: { epoch: number; owned: Map<string, Set<number>> } | null,
) {
  for (const m of classics) {
    const code = heartbeat(c, GROUP, m.generation, m.id);
    if (code === ErrorCode.NONE) continue;
    expect(code).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    const j = await classicJoin(c, m.id, m.owned);
    expect(j.errorCode).toBe(ErrorCode.NONE);
    expect(j.leader).toBe(""); // the broker assigns
    m.generation = j.generationId;
    const s = await sync(c, j);
    if (s.errorCode === ErrorCode.REBALANCE_IN_PROGRESS) continue;
    expect(s.errorCode).toBe(ErrorCode.NONE);
    m.owned = decodeAssignment(s.assignment)!;
  }
  if (consumer === null) return;
  const r = await c.consumerGroupHeartbeat(
    hb({ memberEpoch: consumer.epoch, owned: consumer.owned }),
  );
  expect(r.errorCode).toBe(ErrorCode.NONE);
  consumer.epoch = r.memberEpoch;
  if (r.assignment !== null)
    consumer.owned = new Map([...r.assignment].map(([t, ps]) => [t, new Set(ps)]));
}

const owned = (m: { owned: Map<string, Set<number>> }) => [...(m.owned.get("orders") ?? [])];

test("a classic group is upgraded by a KIP-848 member and downgraded when it leaves", async () => {
  const c = await open();
  const { a, b, generation } = await classicGroup(c);
  const classics: Classic[] = [
    { id: a, generation, owned: new Map([["orders", new Set([0, 1])]]) },
    { id: b, generation, owned: new Map([["orders", new Set([2, 3])]]) },
  ];
  // The first ConsumerGroupHeartbeat upgrades the group: a and b keep their partitions.
  const first = await c.consumerGroupHeartbeat(hb({}));
  expect(first.errorCode).toBe(ErrorCode.NONE);
  const group = c.consumerGroup(GROUP)!;
  expect(group.members.get(a)?.memberEpoch).toBe(generation);
  expect((await c.listGroups({ statesFilter: [], typesFilter: [] })).groups).toEqual([
    expect.objectContaining({ groupId: GROUP, groupType: "consumer" }),
  ]);
  // A JoinGroup of another protocol type is refused; a commit of a stale generation too.
  const other = await classicJoin(c, "x", NONE, "connect");
  expect(other.errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
  const stale = await commit(c, GROUP, { "orders:0": 5n }, { generationId: 99, memberId: a });
  expect(stale.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
  expect(heartbeat(c, GROUP, generation, first.memberId)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  // DescribeGroups does not describe consumer groups (ConsumerGroupDescribe does).
  const [described] = await c.describeGroups([GROUP], 6);
  expect([described!.errorCode, described!.errorMessage]).toEqual([
    ErrorCode.GROUP_ID_NOT_FOUND,
    "Group g is not a classic group.",
  ]);
  expect((await c.describeGroups([GROUP], 5))[0]!.groupState).toBe("Dead");

  // Rounds of heartbeats until the three members split the four partitions.
  const consumer = { epoch: first.memberEpoch, owned: NONE };
  for (let i = 0; i < 10 && group.state !== "Stable"; i++) {
    await round(c, classics, consumer);
    const all = [...classics.flatMap(owned), ...owned(consumer)];
    expect(new Set(all).size).toBe(all.length); // never two owners
  }
  expect(group.state).toBe("Stable");
  const all = [...classics.flatMap(owned), ...owned(consumer)].sort();
  expect(all).toEqual([0, 1, 2, 3]);
  expect(owned(consumer).length).toBeGreaterThan(0);
  expect(classics.every((m) => m.generation === group.groupEpoch)).toBe(true);

  // The KIP-848 member leaves: a classic group of a and b rebalances, with a client leader.
  await c.consumerGroupHeartbeat(hb({ memberEpoch: -1 }));
  expect(c.consumerGroup(GROUP)).toBeNull();
  expect(c.groupState(GROUP)).toBe("PreparingRebalance");
  expect(heartbeat(c, GROUP, group.groupEpoch, a)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
  const [ja, jb] = await Promise.all([classicJoin(c, a), classicJoin(c, b)]);
  expect(ja!.generationId).toBe(group.groupEpoch + 1);
  expect([ja!.leader, jb!.leader]).toContain(ja!.leader);
  expect((ja!.leader === a ? ja! : jb!).members.length).toBe(2);
});

test("a classic member's rejoin that changes nothing writes no membership record", async () => {
  const fixture = await openFixture({}, undefined, () => new Map([["orders", PARTITIONS]]));
  fixtures.push(fixture);
  const c = fixture.coordinator;
  const { a, b, generation } = await classicGroup(c);
  const first = await c.consumerGroupHeartbeat(hb({}));
  const classics: Classic[] = [
    { id: a, generation, owned: new Map([["orders", new Set([0, 1])]]) },
    { id: b, generation, owned: new Map([["orders", new Set([2, 3])]]) },
  ];
  const consumer = { epoch: first.memberEpoch, owned: NONE };
  const group = c.consumerGroup(GROUP)!;
  for (let i = 0; i < 10 && group.state !== "Stable"; i++) await round(c, classics, consumer);
  expect(group.state).toBe("Stable");
  let writes = 0;
  const store = fixture.store;
  const storeMembership = store.storeMembership.bind(store);
  store.storeMembership = (groupId, record) => {
    writes++;
    return storeMembership(groupId, record);
  };
  // A write starts a turn after the change that scheduled it: one macrotask lets it begin.
  const written = async () => {
    await new Promise((resolve) => setTimeout(resolve, 0));
    return writes;
  };
  const m = classics[0]!;
  const again = await classicJoin(c, m.id, m.owned);
  expect([again.errorCode, again.generationId]).toEqual([ErrorCode.NONE, m.generation]);
  expect(await written()).toBe(0);
  // The same rejoin with another session timeout is a change, and is stored.
  const protocols = [{ name: "range", metadata: subscriptionV1(m.owned) }];
  const changed = joinRequest(GROUP, {
    memberId: m.id,
    protocols,
    apiVersion: 9,
    sessionTimeoutMs: 12_000,
  });
  expect((await c.joinGroup(changed)).errorCode).toBe(ErrorCode.NONE);
  expect(await written()).toBe(1);
});

test("group.consumer.migration.policy decides whether groups change protocol", async () => {
  const disabled = await open({ consumerMigrationPolicy: "downgrade" });
  await classicGroup(disabled);
  const refused = await disabled.consumerGroupHeartbeat(hb({}));
  expect(refused.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  expect(refused.errorMessage).toBe(
    "Cannot upgrade classic group g to consumer group because online upgrade is disabled.",
  );
  expect(disabled.groupState(GROUP)).toBe("Stable");

  // Upgrade only: the group stays a consumer group of classic members when c leaves.
  const upgradeOnly = await open({ consumerMigrationPolicy: "upgrade" });
  const { a, b } = await classicGroup(upgradeOnly);
  const c = await upgradeOnly.consumerGroupHeartbeat(hb({}));
  await upgradeOnly.consumerGroupHeartbeat(hb({ memberEpoch: -1, memberId: c.memberId }));
  expect(upgradeOnly.consumerGroup(GROUP)?.members.size).toBe(2);
  // Classic LeaveGroup works for classic members only, and empties the group.
  expect(leave(upgradeOnly, GROUP, a).members[0]!.errorCode).toBe(ErrorCode.NONE);
  expect(leave(upgradeOnly, GROUP, "nobody").members[0]!.errorCode).toBe(
    ErrorCode.UNKNOWN_MEMBER_ID,
  );
  expect(leave(upgradeOnly, GROUP, b).members[0]!.errorCode).toBe(ErrorCode.NONE);
  expect(upgradeOnly.consumerGroup(GROUP)?.state).toBe("Empty");
  expect((await upgradeOnly.listGroups({ statesFilter: [], typesFilter: [] })).groups).toEqual([
    { groupId: GROUP, protocolType: "consumer", groupState: "Empty", groupType: "consumer" },
  ]);
});

test("classic members of a consumer group are stored with it and carry on after a failover", async () => {
  const dir = mkdtempSync(join(tmpdir(), "quill-migration-"));
  try {
    const first = await open({}, dir);
    const { a, b, generation } = await classicGroup(first);
    const k = await first.consumerGroupHeartbeat(hb({}));
    expect(k.errorCode).toBe(ErrorCode.NONE);
    await fixtures.shift()!.close(); // the coordinator goes away without the group leaving
    const next = await open({}, dir);
    await next.loadGroup(GROUP);
    const member = next.consumerGroup(GROUP)?.members.get(a);
    expect(member?.classic?.sessionTimeoutMs).toBe(10_000);
    expect(member?.classic?.protocols.map((p) => p.name)).toEqual(["range"]);
    // a is still known by its generation, and told to rejoin for the new member's epoch.
    expect(heartbeat(next, GROUP, generation, a)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    // Eager members rejoin owning nothing: one of them must give up a partition to k, and
    // neither waits for a revocation step (Kafka's CurrentAssignmentBuilder skips it).
    const joins = [await classicJoin(next, a), await classicJoin(next, b)];
    const epoch = next.consumerGroup(GROUP)!.groupEpoch;
    expect(joins.map((j) => [j.errorCode, j.generationId])).toEqual([
      [ErrorCode.NONE, epoch],
      [ErrorCode.NONE, epoch],
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a classic member replacing the last KIP-848 member under its instance id downgrades the group", async () => {
  const c = await open();
  const { a, b } = await classicGroup(c);
  const k = await c.consumerGroupHeartbeat(hb({ instanceId: "i-k" }));
  expect(k.errorCode).toBe(ErrorCode.NONE);
  await c.leaveGroup({
    groupId: GROUP,
    members: [{ memberId: b, groupInstanceId: null, reason: null }],
  });
  expect(c.consumerGroup(GROUP)?.members.size).toBe(2);
  // k's process restarts as a classic consumer with the same instance id: no MEMBER_ID_REQUIRED
  // for a static member, and the group is classic again, Stable (same subscription).
  const protocols = [{ name: "range", metadata: subscriptionV1(NONE) }];
  const j = await c.joinGroup(joinRequest(GROUP, { groupInstanceId: "i-k", protocols }));
  expect(j.errorCode).toBe(ErrorCode.NONE);
  expect(c.consumerGroup(GROUP)).toBeNull();
  expect(c.groupState(GROUP)).toBe("Stable");
  const s = await sync(c, j);
  expect(s.errorCode).toBe(ErrorCode.NONE);
  expect(c.groupViews().find((g) => g.groupId === GROUP)?.members.length).toBe(2);
  expect(a).not.toBe(j.memberId);
});
