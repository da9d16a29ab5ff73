import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type {
  HeartbeatRequest,
  PartitionCounts,
} from "../../src/coordinator/consumer-group-manager.ts";
import type { GroupConfig } from "../../src/coordinator/group-config.ts";
import { GroupCoordinator } from "../../src/coordinator/group-coordinator.ts";
import type {
  JoinGroupRequest,
  JoinGroupResult,
  LeaveGroupResult,
  OffsetCommitPartition,
  OffsetCommitResult,
  SyncGroupResult,
} from "../../src/coordinator/group-operations.ts";
import { LocalOffsetStore } from "../../src/coordinator/local-offset-store.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";

/** Timeouts small enough for fast tests, large enough not to fire by accident on a busy machine. */
export const TEST_CONFIG: Partial<GroupConfig> = {
  minSessionTimeoutMs: 10,
  initialRebalanceDelayMs: 0,
};

export interface Fixture {
  readonly dir: string;
  readonly store: LocalOffsetStore;
  readonly coordinator: GroupCoordinator;
  close(): Promise<void>;
}

export async function openFixture(
  config: Partial<GroupConfig> = {},
  dir?: string,
  partitionCounts?: PartitionCounts,
): Promise<Fixture> {
  const dataDir = dir ?? mkdtempSync(join(tmpdir(), "quill-coordinator-"));
  const store = LocalOffsetStore.open(dataDir);
  const cfg = { ...TEST_CONFIG, ...config };
  const coordinator = new GroupCoordinator(store, cfg, undefined, undefined, partitionCounts);
  await coordinator.start();
  return {
    dir: dataDir,
    store,
    coordinator,
    async close() {
      coordinator.close();
      await store.close();
      if (dir === undefined) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A ConsumerProtocolSubscription v0 (what Java and kafkajs consumers send) for `topics`. */
export function subscription(topics: readonly string[], userData = ""): Uint8Array {
  const encoder = new TextEncoder();
  const names = topics.map((t) => encoder.encode(t));
  const user = encoder.encode(userData);
  const size = 2 + 4 + names.reduce((n, b) => n + 2 + b.length, 0) + 4 + user.length;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let at = 0;
  view.setInt16(at, 0);
  view.setInt32((at += 2), names.length);
  at += 4;
  for (const b of names) {
    view.setInt16(at, b.length);
    out.set(b, at + 2);
    at += 2 + b.length;
  }
  view.setInt32(at, user.length);
  out.set(user, at + 4);
  return out;
}

export function joinRequest(
  groupId: string,
  overrides: Partial<JoinGroupRequest> = {},
): JoinGroupRequest {
  return {
    groupId,
    memberId: "",
    groupInstanceId: null,
    protocolType: "consumer",
    protocols: [{ name: "range", metadata: subscription(["orders"]) }],
    sessionTimeoutMs: 10_000,
    rebalanceTimeoutMs: 2_000,
    reason: null,
    apiVersion: 5,
    clientId: "test-client",
    clientHost: "/127.0.0.1",
    ...overrides,
  };
}

/** One protocol offer: an assignor name with a subscription to `topics`. */
export const protocols = (name: string, topics: string[] = ["orders"]) => [
  { name, metadata: subscription(topics) },
];

/** JoinGroup v4+ the way clients do it: first get a member id, then join with it. */
export async function joinWithId(
  coordinator: GroupCoordinator,
  groupId: string,
  overrides: Partial<JoinGroupRequest> = {},
): Promise<JoinGroupResult> {
  const first = await coordinator.joinGroup(joinRequest(groupId, overrides));
  if (first.errorCode !== ErrorCode.MEMBER_ID_REQUIRED) return first;
  return coordinator.joinGroup(joinRequest(groupId, { ...overrides, memberId: first.memberId }));
}

/** A rejoin of a known member (no MEMBER_ID_REQUIRED step). */
export function rejoin(
  coordinator: GroupCoordinator,
  groupId: string,
  memberId: string,
  overrides: Partial<JoinGroupRequest> = {},
): Promise<JoinGroupResult> {
  return coordinator.joinGroup(joinRequest(groupId, { ...overrides, memberId }));
}

/** Leader syncs with one assignment per member; followers sync with none. */
export function syncAll(
  coordinator: GroupCoordinator,
  groupId: string,
  joins: readonly JoinGroupResult[],
): Promise<SyncGroupResult[]> {
  const assignmentOf = (id: string) => new TextEncoder().encode(`assigned:${id}`);
  return Promise.all(
    joins.map((j) =>
      coordinator.syncGroup({
        groupId,
        generationId: j.generationId,
        memberId: j.memberId,
        groupInstanceId: null,
        protocolType: j.protocolType,
        protocolName: j.protocolName,
        assignments:
          j.leader !== j.memberId
            ? []
            : j.members.map((m) => ({
                memberId: m.memberId,
                assignment: assignmentOf(m.memberId),
              })),
      }),
    ),
  );
}

export function heartbeat(
  coordinator: GroupCoordinator,
  groupId: string,
  generationId: number,
  memberId: string,
  groupInstanceId: string | null = null,
): number {
  return coordinator.heartbeat({ groupId, generationId, memberId, groupInstanceId });
}

export function leave(
  coordinator: GroupCoordinator,
  groupId: string,
  memberId: string,
  groupInstanceId: string | null = null,
): LeaveGroupResult {
  const members = [{ memberId, groupInstanceId, reason: null }];
  return coordinator.leaveGroup({ groupId, members });
}

/**
 * An OffsetCommit of `offsets` keyed "topic:partition", with leader epoch 3 and metadata
 * "m<offset>"; generation -1 and no member (a simple consumer) unless `member` says otherwise.
 */
export function commit(
  coordinator: GroupCoordinator,
  groupId: string,
  offsets: Record<string, bigint>,
  member: { generationId: number; memberId: string } = { generationId: -1, memberId: "" },
): Promise<OffsetCommitResult> {
  const byTopic = new Map<string, OffsetCommitPartition[]>();
  for (const [tp, offset] of Object.entries(offsets)) {
    const [topic, partition] = tp.split(":") as [string, string];
    const list = byTopic.get(topic) ?? [];
    list.push({
      partitionIndex: Number(partition),
      committedOffset: offset,
      committedLeaderEpoch: 3,
      committedMetadata: `m${offset}`,
    });
    byTopic.set(topic, list);
  }
  return coordinator.offsetCommit({
    groupId,
    ...member,
    groupInstanceId: null,
    topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })),
  });
}

/** The error code of every partition of a commit, in request order. */
export const commitCodes = (result: OffsetCommitResult) =>
  result.topics.flatMap((t) => t.partitions.map((p) => p.errorCode));

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `condition` holds; timer-driven outcomes may come late on a loaded machine. */
export async function waitFor(
  what: string,
  condition: () => boolean,
  timeoutMs = 5_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

export const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** A ConsumerGroupHeartbeat (KIP-848) joining with epoch 0 to "orders", but for `r`. */
export function consumerHeartbeatRequest(
  r: Partial<HeartbeatRequest> & Pick<HeartbeatRequest, "groupId" | "memberId">,
): HeartbeatRequest {
  return {
    memberEpoch: 0,
    instanceId: null,
    rackId: null,
    rebalanceTimeoutMs: 60_000,
    subscribedTopicRegex: null,
    subscribedTopicNames: ["orders"],
    serverAssignor: null,
    owned: null,
    clientId: "client",
    clientHost: "/127.0.0.1",
    ...r,
  };
}
