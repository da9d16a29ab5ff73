/**
 * A group's coordinator and committed offsets. Commits are a simple consumer's (generation -1,
 * no member id, which Kafka accepts only while the group has no active members: export and
 * seek) unless a group member's identity is given (`GroupMember.commit`).
 */
import { ApiKey, type DescribeGroupsResponse } from "../protocol/generated/index.ts";
import { check } from "./client-errors.ts";
import type { ClusterClient } from "./cluster-client.ts";
import { type OffsetMap, partitionKey } from "./partition-offsets.ts";

/** FindCoordinator key type for a consumer group. */
const GROUP_KEY_TYPE = 0;

export async function findCoordinator(client: ClusterClient, group: string): Promise<number> {
  const response = await client.request(ApiKey.FindCoordinator, {
    key: group,
    keyType: GROUP_KEY_TYPE,
  });
  check(response.errorCode, `finding the coordinator of group "${group}"`, response.errorMessage);
  return response.nodeId;
}

/** Committed offsets of `group` (all its topics when `topics` is null). */
export async function fetchCommitted(
  client: ClusterClient,
  group: string,
  topics: readonly { name: string; partitions: readonly number[] }[] | null,
): Promise<OffsetMap> {
  const coordinator = await findCoordinator(client, group);
  const response = await client.request(
    ApiKey.OffsetFetch,
    {
      groupId: group,
      topics:
        topics === null
          ? null
          : topics.map((t) => ({ name: t.name, partitionIndexes: [...t.partitions] })),
    },
    coordinator,
  );
  check(response.errorCode, `fetching offsets of group "${group}"`);
  const out: OffsetMap = new Map();
  for (const t of response.topics) {
    for (const p of t.partitions) {
      check(p.errorCode, `fetching offsets of group "${group}" for ${t.name}`);
      if (p.committedOffset >= 0n)
        out.set(partitionKey(t.name, p.partitionIndex), p.committedOffset);
    }
  }
  return out;
}

/** Who commits: a group member's generation and id, or a simple consumer (-1, ""). */
export interface CommitIdentity {
  readonly generationId: number;
  readonly memberId: string;
}

const SIMPLE_CONSUMER: CommitIdentity = { generationId: -1, memberId: "" };

/** Commits `offsets` (`topic:partition` to the next offset to read) for `group`. */
export async function commitOffsets(
  client: ClusterClient,
  group: string,
  offsets: ReadonlyMap<string, bigint>,
  metadata = "",
  identity: CommitIdentity = SIMPLE_CONSUMER,
): Promise<void> {
  const topics = new Map<string, { partitionIndex: number; committedOffset: bigint }[]>();
  for (const [key, offset] of offsets) {
    const at = key.lastIndexOf(":");
    const name = key.slice(0, at);
    const list = topics.get(name) ?? [];
    list.push({ partitionIndex: Number(key.slice(at + 1)), committedOffset: offset });
    topics.set(name, list);
  }
  if (topics.size === 0) return;
  const coordinator = await findCoordinator(client, group);
  const response = await client.request(
    ApiKey.OffsetCommit,
    {
      groupId: group,
      generationIdOrMemberEpoch: identity.generationId,
      memberId: identity.memberId,
      retentionTimeMs: -1n,
      topics: [...topics].map(([name, partitions]) => ({
        name,
        partitions: partitions.map((p) => ({ ...p, committedMetadata: metadata })),
      })),
    },
    coordinator,
  );
  for (const t of response.topics) {
    for (const p of t.partitions) {
      check(
        p.errorCode,
        `committing offsets of group "${group}" for ${t.name}/${p.partitionIndex}`,
      );
    }
  }
}

export async function describeGroup(
  client: ClusterClient,
  group: string,
): Promise<DescribeGroupsResponse["groups"][number]> {
  const coordinator = await findCoordinator(client, group);
  const response = await client.request(ApiKey.DescribeGroups, { groups: [group] }, coordinator);
  const described = response.groups[0]!;
  check(described.errorCode, `describing group "${group}"`);
  return described;
}
