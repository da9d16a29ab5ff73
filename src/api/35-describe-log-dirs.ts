// DescribeLogDirs: v1-5
//
// Version notes:
// * v0 is removed in Kafka 4 (KIP-896); not offered. v1: no changes (throttling after the
//   response). v2: flexible. v3: a top-level error code. v4: each dir's total and usable bytes.
//   v5: IsCordoned per dir (KIP-1066, a KRaft broker's dirs that take no new replicas); Quill
//   has no cordoning, so every dir answers false.
// * Topics null lists every partition; otherwise the named partitions only (a partition this
//   broker does not hold is left out, as in Kafka).
// * Needs DESCRIBE on the cluster (with an authorizer): else CLUSTER_AUTHORIZATION_FAILED and no
//   dirs, as Kafka answers.
// * A failed log dir (KIP-112) is answered KAFKA_STORAGE_ERROR with no partitions, as Kafka.
// * A replica moving between dirs (AlterReplicaLogDirs) is listed twice: in its current dir, and
//   in the target dir with isFutureKey, its size and its lag behind the current log's end.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation } from "../security/authorized-operations.ts";
import { authorizeCluster } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

export const describeLogDirsHandler = defineHandler({
  apiKey: ApiKey.DescribeLogDirs,
  minVersion: 1,
  maxVersion: 5,
  handle(request, ctx) {
    if (ctx.broker.authorizer !== null && !authorizeCluster(ctx, AclOperation.DESCRIBE)) {
      return { throttleTimeMs: 0, errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results: [] };
    }
    const wanted =
      request.topics === null
        ? null
        : new Set(request.topics.flatMap((t) => t.partitions.map((p) => `${t.topic}:${p}`)));
    const dirs = ctx.broker.replicaManager.describeLogDirs(
      wanted === null ? null : (topic, partition) => wanted.has(`${topic}:${partition}`),
    );
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, results: dirs };
  },
});
