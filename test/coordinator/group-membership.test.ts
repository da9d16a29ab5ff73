// Membership stored beside the offsets: a coordinator opened on the same store (a restart, or
// the broker taking a group over after a failover) carries on a classic group's generation and
// a KIP-848 group's epochs and assignments, so members that heartbeat in time see no rebalance;
// members that do not are dropped after their session timeout, as before.
import { afterEach, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { HeartbeatRequest } from "../../src/coordinator/consumer-group-manager.ts";
import { GroupCoordinator } from "../../src/coordinator/group-coordinator.ts";
import { decodeMembership } from "../../src/coordinator/group-membership-record.ts";
import { LocalOffsetStore } from "../../src/coordinator/local-offset-store.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { waitUntil } from "../support/wait-until.ts";
import {
  consumerHeartbeatRequest,
  heartbeat,
  joinWithId,
  syncAll,
  TEST_CONFIG,
} from "./group-test-support.ts";

const dirs: string[] = [];
const open: { store: LocalOffsetStore; coordinator: GroupCoordinator }[] = [];

afterEach(async () => {
  for (const o of open.splice(0)) {
    o.coordinator.close();
    await o.store.close();
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function coordinatorOn(dir: string, sessionTimeoutMs = 45_000) {
  const store = LocalOffsetStore.open(dir);
  const counts = () => new Map([["orders", 4]]);
  const config = { ...TEST_CONFIG, consumerSessionTimeoutMs: sessionTimeoutMs };
  const coordinator = new GroupCoordinator(store, config, Date.now, () => true, counts);
  await coordinator.start();
  open.push({ store, coordinator });
  return { store, coordinator };
}

/** Closes a coordinator without its group leaving: what a kill or a move looks like to it. */
async function drop(o: { store: LocalOffsetStore; coordinator: GroupCoordinator }) {
  open.splice(open.indexOf(o), 1);
  o.coordinator.close();
  await o.store.close();
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "quill-membership-"));
  dirs.push(dir);
  return dir;
}

test("a classic group's generation and assignments carry over to the next coordinator", async () => {
  const dir = tempDir();
  const first = await coordinatorOn(dir);
  const [a, b] = await Promise.all([
    joinWithId(first.coordinator, "g"),
    joinWithId(first.coordinator, "g"),
  ]);
  const synced = await syncAll(first.coordinator, "g", [a!, b!]);
  expect(synced.map((s) => s.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.NONE]);
  await waitUntil(async () => (await first.store.loadMembership("g")) !== null, 5_000, "stored");
  await drop(first);

  const next = await coordinatorOn(dir);
  expect(await next.coordinator.loadGroup("g")).toBeNull();
  for (const j of [a!, b!]) {
    expect(heartbeat(next.coordinator, "g", j.generationId, j.memberId)).toBe(ErrorCode.NONE);
  }
  expect(next.coordinator.groupState("g")).toBe("Stable");
  // SyncGroup in Stable answers the stored assignment again.
  const again = await syncAll(next.coordinator, "g", [{ ...b!, members: [] }]);
  expect(new TextDecoder().decode(again[0]!.assignment)).toBe(`assigned:${b!.memberId}`);
});

test("a taken-over classic member that does not heartbeat leaves after its session", async () => {
  const dir = tempDir();
  const first = await coordinatorOn(dir);
  const joined = await joinWithId(first.coordinator, "g", { sessionTimeoutMs: 300 });
  await syncAll(first.coordinator, "g", [joined]);
  await waitUntil(async () => (await first.store.loadMembership("g")) !== null, 5_000, "stored");
  await drop(first);
  const next = await coordinatorOn(dir);
  await next.coordinator.loadGroup("g");
  expect(next.coordinator.groupState("g")).toBe("Stable");
  await waitUntil(() => next.coordinator.groupState("g") === "Empty", 5_000, "member expiry");
  // The Empty group's record is removed: the next coordinator has no members to take over.
  await waitUntil(async () => (await next.store.loadMembership("g")) === null, 5_000, "removal");
});

const hb = (r: Partial<HeartbeatRequest>): HeartbeatRequest =>
  consumerHeartbeatRequest({ groupId: "c", memberId: "", ...r });

test("a KIP-848 group's epochs and assignments carry over; a heartbeat is answered once stored", async () => {
  const dir = tempDir();
  const first = await coordinatorOn(dir);
  const a = await first.coordinator.consumerGroupHeartbeat(hb({ memberId: "a" }));
  const b = await first.coordinator.consumerGroupHeartbeat(hb({ memberId: "b" }));
  // a gives up half its partitions, then both settle on epoch 2.
  const a2 = await first.coordinator.consumerGroupHeartbeat(
    hb({ memberId: "a", memberEpoch: a.memberEpoch, owned: a.assignment }),
  );
  const a3 = await first.coordinator.consumerGroupHeartbeat(
    hb({ memberId: "a", memberEpoch: a2.memberEpoch, owned: a2.assignment }),
  );
  const b2 = await first.coordinator.consumerGroupHeartbeat(
    hb({ memberId: "b", memberEpoch: b.memberEpoch, owned: new Map() }),
  );
  expect([a3.memberEpoch, b2.memberEpoch]).toEqual([2, 2]);
  // Answered only after the write: the store already holds the epochs just handed out.
  const stored = decodeMembership((await first.store.loadMembership("c"))!);
  expect(stored?.type).toBe("consumer");
  if (stored?.type !== "consumer") return;
  expect(stored.members.map((m) => [m.memberId, m.memberEpoch]).sort()).toEqual([
    ["a", 2],
    ["b", 2],
  ]);
  await drop(first);

  const next = await coordinatorOn(dir);
  const a4 = await next.coordinator.consumerGroupHeartbeat(hb({ memberId: "a", memberEpoch: 2 }));
  const b4 = await next.coordinator.consumerGroupHeartbeat(hb({ memberId: "b", memberEpoch: 2 }));
  expect([a4.errorCode, b4.errorCode]).toEqual([ErrorCode.NONE, ErrorCode.NONE]);
  expect([a4.memberEpoch, b4.memberEpoch]).toEqual([2, 2]);
  const group = next.coordinator.consumerGroup("c")!;
  expect(group.state).toBe("Stable");
  expect(group.groupEpoch).toBe(2);
  const sizes = [...group.members.values()].map((m) => [...m.assigned.values()][0]!.size);
  expect(sizes).toEqual([2, 2]);
});

test("a taken-over KIP-848 member that does not heartbeat is fenced after the session timeout", async () => {
  const dir = tempDir();
  const first = await coordinatorOn(dir, 400);
  await first.coordinator.consumerGroupHeartbeat(hb({ memberId: "a" }));
  await drop(first);
  const next = await coordinatorOn(dir, 400);
  await next.coordinator.loadGroup("c");
  expect(next.coordinator.consumerGroup("c")?.members.size).toBe(1);
  await waitUntil(() => next.coordinator.consumerGroup("c")?.isEmpty !== false, 5_000, "fence");
  await waitUntil(async () => (await next.store.loadMembership("c")) === null, 5_000, "removal");
});

test("a membership record that does not parse is ignored: members rejoin", async () => {
  const dir = tempDir();
  const first = await coordinatorOn(dir);
  await first.store.storeMembership("g", new TextEncoder().encode('{"version":99}'));
  expect(await first.coordinator.loadGroup("g")).toBeNull();
  expect(heartbeat(first.coordinator, "g", 1, "someone")).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
});

test("a membership write that fails with a disk error is a retriable error, not a crash", async () => {
  const dir = tempDir();
  const { coordinator } = await coordinatorOn(dir);
  // A file where the membership directory was: every write fails with ENOTDIR.
  const membershipDir = join(dir, "__consumer_offsets", "membership");
  rmSync(membershipDir, { recursive: true, force: true });
  writeFileSync(membershipDir, "not a directory");
  const answer = await coordinator.consumerGroupHeartbeat(hb({ memberId: "a" }));
  expect(answer.errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  // The member is known; once the disk is back its next heartbeat stores the group.
  rmSync(membershipDir);
  mkdirSync(membershipDir);
  const again = await coordinator.consumerGroupHeartbeat(
    hb({ memberId: "a", memberEpoch: 1, subscribedTopicNames: ["orders", "x"] }),
  );
  expect(again.errorCode).toBe(ErrorCode.NONE);
  expect(await open[0]!.store.loadMembership("c")).not.toBeNull();
});
