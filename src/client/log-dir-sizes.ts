/**
 * Partition sizes on disk from DescribeLogDirs, as kafka-log-dirs.sh reads them: each broker
 * that holds a replica is asked for those partitions once. A broker that cannot say (the API is
 * missing, the principal lacks DESCRIBE on the cluster, the broker is down) leaves its sizes
 * out instead of failing the command: sizes are extra information.
 */
import { ApiKey } from "../protocol/generated/index.ts";
import type { ClusterClient } from "./cluster-client.ts";
import { type PartitionInfo, partitionKey } from "./partition-offsets.ts";

/** `topic:partition` to (broker id to the replica's bytes on disk, future logs excluded). */
export type ReplicaSizes = Map<string, Map<number, bigint>>;

export async function replicaSizes(
  client: ClusterClient,
  partitions: readonly PartitionInfo[],
): Promise<ReplicaSizes> {
  const out: ReplicaSizes = new Map();
  if (!client.supports(ApiKey.DescribeLogDirs)) return out;
  const byBroker = new Map<number, Map<string, number[]>>();
  for (const p of partitions) {
    for (const broker of p.replicas) {
      const topics = byBroker.get(broker) ?? new Map<string, number[]>();
      topics.set(p.topic, [...(topics.get(p.topic) ?? []), p.partition]);
      byBroker.set(broker, topics);
    }
  }
  const asks = [...byBroker].map(async ([broker, topics]) => {
    const response = await client
      .request(
        ApiKey.DescribeLogDirs,
        { topics: [...topics].map(([topic, ps]) => ({ topic, partitions: ps })) },
        broker,
      )
      .catch(() => null);
    if (response === null || response.errorCode !== 0) return;
    for (const dir of response.results) {
      if (dir.errorCode !== 0) continue;
      for (const t of dir.topics) {
        for (const p of t.partitions) {
          if (p.isFutureKey) continue;
          const key = partitionKey(t.name, p.partitionIndex);
          const sizes = out.get(key) ?? new Map<number, bigint>();
          sizes.set(broker, p.partitionSize);
          out.set(key, sizes);
        }
      }
    }
  });
  await Promise.all(asks);
  return out;
}
