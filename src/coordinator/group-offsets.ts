import {
  type TopicPartitionKey,
  topicPartitionKey,
  topicPartitionOf,
} from "../common/topic-partition.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { assert } from "../util/assert.ts";
import type { ClassicGroup } from "./classic-group.ts";
import type { GroupConfig } from "./group-config.ts";
import type {
  FetchedOffset,
  OffsetCommitRequest,
  OffsetCommitResult,
  OffsetFetchRequest,
  OffsetFetchResult,
  PartitionError,
  TopicPartitionErrors,
} from "./group-operations.ts";
import type { CommittedOffset, OffsetStore } from "./offset-store.ts";

/**
 * The offset half of the coordinator (Kafka's GroupMetadataManager offset paths): writes go to
 * the OffsetStore first and reach the group's in-memory cache only once the store has them, so
 * an OffsetFetch never returns an offset that a crash could lose.
 */

/** Kafka's answer for a partition without a committed offset. */
const NO_OFFSET: Omit<FetchedOffset, "partitionIndex"> = {
  committedOffset: -1n,
  committedLeaderEpoch: -1,
  metadata: "",
  errorCode: ErrorCode.NONE,
};

/** Loads the group's committed offsets from the store once; concurrent callers share the read. */
export async function ensureOffsetsLoaded(store: OffsetStore, group: ClassicGroup): Promise<void> {
  if (group.offsets !== null) return;
  group.offsetsLoading ??= store.loadGroup(group.groupId).then(
    (offsets) => {
      group.offsets ??= offsets;
      group.offsetsLoading = null;
    },
    (error: unknown) => {
      group.offsetsLoading = null;
      throw error;
    },
  );
  await group.offsetsLoading;
}

/** Every partition of a commit answered with the same error code. */
export function commitError(req: OffsetCommitRequest, errorCode: number): OffsetCommitResult {
  return {
    topics: req.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode })),
    })),
  };
}

export function countCommitPartitions(req: OffsetCommitRequest): number {
  let count = 0;
  for (const t of req.topics) count += t.partitions.length;
  return count;
}

/** Writes the valid partitions of an already-authorized commit to the store, then to the cache. */
export async function storeOffsets(
  store: OffsetStore,
  config: GroupConfig,
  group: ClassicGroup,
  req: OffsetCommitRequest,
  nowMs: number,
): Promise<OffsetCommitResult> {
  const offsets = group.offsets;
  assert(offsets !== null, `offsets of ${group.groupId} are committed before they are loaded`);
  const accepted: { topic: string; partition: number; committed: CommittedOffset }[] = [];
  const errors = new Map<TopicPartitionKey, number>();
  for (const t of req.topics) {
    for (const p of t.partitions) {
      const metadata = p.committedMetadata ?? "";
      if (metadata.length > config.offsetMetadataMaxBytes) {
        const key = topicPartitionKey(t.name, p.partitionIndex);
        errors.set(key, ErrorCode.OFFSET_METADATA_TOO_LARGE);
        continue;
      }
      const committed = {
        offset: p.committedOffset,
        leaderEpoch: p.committedLeaderEpoch,
        metadata,
        commitTimestampMs: nowMs,
      };
      accepted.push({ topic: t.name, partition: p.partitionIndex, committed });
    }
  }
  const errorCode = await persist(store, config, group, offsets, accepted);
  return {
    topics: req.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        errorCode: errors.get(topicPartitionKey(t.name, p.partitionIndex)) ?? errorCode,
      })),
    })),
  };
}

async function persist(
  store: OffsetStore,
  config: GroupConfig,
  group: ClassicGroup,
  offsets: Map<TopicPartitionKey, CommittedOffset>,
  accepted: readonly { topic: string; partition: number; committed: CommittedOffset }[],
): Promise<number> {
  if (accepted.length === 0) return ErrorCode.NONE;
  let added = 0;
  for (const a of accepted) if (!offsets.has(topicPartitionKey(a.topic, a.partition))) added++;
  if (offsets.size + added > config.offsetsPerGroupMax) return ErrorCode.INVALID_COMMIT_OFFSET_SIZE;
  try {
    await store.commit(group.groupId, accepted);
  } catch (error) {
    if (error instanceof KafkaError) return error.code;
    throw error;
  }
  // The store resolves commits in the order they were issued, so applying in completion
  // order keeps the cache equal to what the store holds.
  for (const a of accepted) offsets.set(topicPartitionKey(a.topic, a.partition), a.committed);
  return ErrorCode.NONE;
}

/** Answers an OffsetFetch from the group's loaded offsets (all of them when topics is null). */
export function fetchOffsets(
  offsets: ReadonlyMap<TopicPartitionKey, CommittedOffset>,
  req: OffsetFetchRequest,
): OffsetFetchResult {
  if (req.topics === null) return { errorCode: ErrorCode.NONE, topics: allOffsets(offsets) };
  return {
    errorCode: ErrorCode.NONE,
    topics: req.topics.map((t) => ({
      name: t.name,
      partitions: t.partitionIndexes.map((partitionIndex) => {
        const committed = offsets.get(topicPartitionKey(t.name, partitionIndex));
        if (committed === undefined) return { partitionIndex, ...NO_OFFSET };
        return fetched(partitionIndex, committed);
      }),
    })),
  };
}

function allOffsets(
  offsets: ReadonlyMap<TopicPartitionKey, CommittedOffset>,
): OffsetFetchResult["topics"] {
  const byTopic = new Map<string, FetchedOffset[]>();
  for (const [key, committed] of offsets) {
    const { topic, partition } = topicPartitionOf(key);
    const partitions = byTopic.get(topic) ?? [];
    partitions.push(fetched(partition, committed));
    byTopic.set(topic, partitions);
  }
  return [...byTopic].map(([name, partitions]) => ({
    name,
    partitions: partitions.sort((a, b) => a.partitionIndex - b.partitionIndex),
  }));
}

function fetched(partitionIndex: number, committed: CommittedOffset): FetchedOffset {
  return {
    partitionIndex,
    committedOffset: committed.offset,
    committedLeaderEpoch: committed.leaderEpoch,
    metadata: committed.metadata ?? "",
    errorCode: ErrorCode.NONE,
  };
}

/** Removes offsets from the store and then from the cache; every partition gets `errorCode`. */
export async function deleteOffsets(
  store: OffsetStore,
  group: ClassicGroup,
  partitions: readonly { topic: string; partition: number }[],
): Promise<number> {
  if (partitions.length === 0) return ErrorCode.NONE;
  try {
    await store.deleteOffsets(group.groupId, partitions);
  } catch (error) {
    if (error instanceof KafkaError) return error.code;
    throw error;
  }
  for (const p of partitions) group.offsets?.delete(topicPartitionKey(p.topic, p.partition));
  return ErrorCode.NONE;
}

export function partitionErrors(
  topics: readonly { name: string; partitions: readonly number[] }[],
  errorOf: (topic: string, partition: number) => number,
): TopicPartitionErrors[] {
  return topics.map((t) => ({
    name: t.name,
    partitions: t.partitions.map(
      (partitionIndex): PartitionError => ({
        partitionIndex,
        errorCode: errorOf(t.name, partitionIndex),
      }),
    ),
  }));
}
