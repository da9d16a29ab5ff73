// AlterReplicaLogDirs: v0-2 (KIP-113, `kafka-reassign-partitions.sh` with `log_dirs`)
//
// Version notes:
// * v0 is deprecated (removed in Kafka 4, KIP-896) but still in Kafka 3.9's set, so offered.
//   v1: no changes (throttling after the response). v2: flexible.
// * Each dir's partitions move to that dir of this broker (server/replica-alter-log-dirs-
//   manager.ts); a partition named twice goes to the last dir named, as in Kafka's map.
// * Per partition, as Kafka's ReplicaManager answers: LOG_DIR_NOT_FOUND (not one of log.dirs,
//   compared as the absolute path), KAFKA_STORAGE_ERROR (the dir or the partition's dir is
//   offline, or another dir is, while a future log would have to be made),
//   REPLICA_NOT_AVAILABLE (not hosted here yet: the dir is remembered for when it comes),
//   UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION (the future dir's name over 255 bytes).
// * Needs ALTER on the cluster (with an authorizer): else CLUSTER_AUTHORIZATION_FAILED for
//   every partition, as Kafka answers.
import { ErrorCode } from "../protocol/errors.ts";
import { type AlterReplicaLogDirsResponse, ApiKey } from "../protocol/generated/index.ts";
import { AclOperation } from "../security/authorized-operations.ts";
import { authorizeCluster } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

type TopicResult = AlterReplicaLogDirsResponse["results"][number];

export const alterReplicaLogDirsHandler = defineHandler({
  apiKey: ApiKey.AlterReplicaLogDirs,
  minVersion: 0,
  maxVersion: 2,
  handle(request, ctx) {
    // Insertion order is the order partitions are first named; a later dir replaces an earlier.
    const dirOf = new Map<string, { topic: string; partition: number; dir: string }>();
    for (const d of request.dirs) {
      for (const t of d.topics) {
        for (const partition of t.partitions) {
          dirOf.set(`${t.name}\u0000${partition}`, { topic: t.name, partition, dir: d.path });
        }
      }
    }
    const allowed = authorizeCluster(ctx, AclOperation.ALTER);
    const byTopic = new Map<string, TopicResult>();
    for (const { topic, partition, dir } of dirOf.values()) {
      const errorCode = allowed
        ? ctx.broker.replicaManager.alterReplicaLogDir(topic, partition, dir)
        : ErrorCode.CLUSTER_AUTHORIZATION_FAILED;
      let result = byTopic.get(topic);
      if (result === undefined) byTopic.set(topic, (result = { topicName: topic, partitions: [] }));
      result.partitions.push({ partitionIndex: partition, errorCode });
    }
    return { throttleTimeMs: 0, results: [...byTopic.values()] };
  },
});
