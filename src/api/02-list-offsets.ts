// ListOffsets: v1-11
//
// Version notes:
// * v0 (old-style offset arrays) is deprecated and not offered, as in Kafka 4 (KIP-896).
// * v2: isolation level: read_committed's latest offset is the last stable offset.
// * v4: the leader epoch of the offset found (KIP-320), from the log's leader-epoch cache; -1
//   when the log has no epochs (records written before epochs).
// * v6: flexible. v7: MAX_TIMESTAMP (-3, KIP-734). v8: EARLIEST_LOCAL (-4, tiered storage):
//   with no tiered storage, local earliest is the earliest.
// * v9: LATEST_TIERED (-5): no tiered storage, so answered like Kafka without it: offset -1.
// * v10: TimeoutMs (KIP-1075), which only matters for remote storage lookups.
// * v11: EARLIEST_PENDING_UPLOAD (-6, KIP-1023): with no tiered storage nothing awaits upload,
//   so it is answered like LATEST_TIERED: offset -1.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { EARLIEST_TIMESTAMP } from "../storage/unified-log.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

const EARLIEST_LOCAL_TIMESTAMP = -4n;
const LATEST_TIERED_TIMESTAMP = -5n;
const EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6n;

export const listOffsetsHandler = defineHandler({
  apiKey: ApiKey.ListOffsets,
  minVersion: 1,
  maxVersion: 11,
  handle(request, ctx) {
    const rm = ctx.broker.replicaManager;
    return {
      throttleTimeMs: 0,
      topics: request.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => {
          // DESCRIBE on the topic, as Kafka's handleListOffsetRequest.
          if (!authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name)) {
            return {
              partitionIndex: p.partitionIndex,
              errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
              timestamp: -1n,
              offset: -1n,
              leaderEpoch: -1,
            };
          }
          const timestamp =
            p.timestamp === EARLIEST_LOCAL_TIMESTAMP ? EARLIEST_TIMESTAMP : p.timestamp;
          const found =
            timestamp === LATEST_TIERED_TIMESTAMP || timestamp === EARLIEST_PENDING_UPLOAD_TIMESTAMP
              ? { errorCode: ErrorCode.NONE, timestamp: -1n, offset: -1n, leaderEpoch: -1 }
              : rm.listOffset(t.name, p.partitionIndex, timestamp, request.isolationLevel);
          return {
            partitionIndex: p.partitionIndex,
            errorCode: found.errorCode,
            timestamp: found.timestamp,
            offset: found.offset,
            // Not ignorable: versions before 4 must carry the default.
            leaderEpoch:
              found.errorCode === ErrorCode.NONE && ctx.apiVersion >= 4 ? found.leaderEpoch : -1,
          };
        }),
      })),
    };
  },
});
