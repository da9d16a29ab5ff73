/**
 * Topic metadata and ListOffsets by leader: where each partition lives, and its earliest,
 * latest or by-time offset. Requests go to each partition's leader, grouped per broker.
 */
import { ApiKey, type MetadataResponse } from "../protocol/generated/index.ts";
import { ClusterError, check } from "./client-errors.ts";
import type { ClusterClient } from "./cluster-client.ts";

/** ListOffsets' special timestamps. */
export const LATEST_TIMESTAMP = -1n;
export const EARLIEST_TIMESTAMP = -2n;

export interface PartitionInfo {
  readonly topic: string;
  readonly partition: number;
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
  readonly offline: readonly number[];
  readonly errorCode: number;
}

export interface TopicInfo {
  readonly name: string;
  readonly topicId: Uint8Array;
  readonly internal: boolean;
  readonly partitions: readonly PartitionInfo[];
}

/** Topics from a Metadata answer, partitions sorted; a topic error throws ClusterError. */
export function topicsOf(response: MetadataResponse): TopicInfo[] {
  return response.topics.map((t) => {
    const name = t.name ?? "";
    check(t.errorCode, `for topic "${name}"`);
    const partitions = t.partitions
      .map((p) => ({
        topic: name,
        partition: p.partitionIndex,
        leader: p.leaderId,
        leaderEpoch: p.leaderEpoch,
        replicas: p.replicaNodes,
        isr: p.isrNodes,
        offline: p.offlineReplicas,
        errorCode: p.errorCode,
      }))
      .sort((a, b) => a.partition - b.partition);
    return { name, topicId: t.topicId, internal: t.isInternal, partitions };
  });
}

/** The named topics' metadata, in the order asked; an unknown topic throws ClusterError. */
export async function describeTopics(
  client: ClusterClient,
  names: readonly string[],
): Promise<TopicInfo[]> {
  const topics = topicsOf(await client.metadata(names));
  return names.map((n) => topics.find((t) => t.name === n)!);
}

/** `topic:partition` keys to offsets. */
export type OffsetMap = Map<string, bigint>;
export const partitionKey = (topic: string, partition: number) => `${topic}:${partition}`;

/**
 * The offset at `timestamp` (or LATEST/EARLIEST) of each partition, asking each leader once.
 * A partition with no record at or after the timestamp gets its log end offset, as Kafka's
 * consumer resets do.
 */
export async function listOffsets(
  client: ClusterClient,
  partitions: readonly PartitionInfo[],
  timestamp: bigint,
  isolationLevel: 0 | 1 = 0,
): Promise<OffsetMap> {
  const byLeader = new Map<number, PartitionInfo[]>();
  for (const p of partitions) {
    if (p.leader < 0) throw new ClusterError(5, `for ${p.topic} partition ${p.partition}`);
    byLeader.set(p.leader, [...(byLeader.get(p.leader) ?? []), p]);
  }
  const out: OffsetMap = new Map();
  const asks = [...byLeader].map(async ([leader, list]) => {
    const topics = new Map<string, PartitionInfo[]>();
    for (const p of list) topics.set(p.topic, [...(topics.get(p.topic) ?? []), p]);
    const response = await client.request(
      ApiKey.ListOffsets,
      {
        replicaId: -1,
        // read_committed: LATEST is the last stable offset, not the high watermark.
        isolationLevel,
        topics: [...topics].map(([name, ps]) => ({
          name,
          partitions: ps.map((p) => ({ partitionIndex: p.partition, timestamp, maxNumOffsets: 1 })),
        })),
      },
      leader,
    );
    for (const t of response.topics) {
      for (const p of t.partitions) {
        check(p.errorCode, `listing offsets of ${t.name} partition ${p.partitionIndex}`);
        out.set(partitionKey(t.name, p.partitionIndex), p.offset);
      }
    }
  });
  await Promise.all(asks);
  if (timestamp >= 0n) {
    const missing = partitions.filter((p) => out.get(partitionKey(p.topic, p.partition)) === -1n);
    const ends = missing.length > 0 ? await listOffsets(client, missing, LATEST_TIMESTAMP) : null;
    for (const [k, v] of ends ?? []) out.set(k, v);
  }
  return out;
}
