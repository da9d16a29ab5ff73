// DeleteRecords: v0-2
//
// Version notes:
// * v1: no changes (throttling behaviour, KIP-219). v2: flexible.
// * Each partition's log start offset moves to the requested offset (-1: the high watermark) on
//   its leader, which deletes the segments wholly below it; the answer waits until every live
//   replica has the new start (the low watermark) or TimeoutMs passes (REQUEST_TIMED_OUT).
// * Errors as Kafka 3.9: OFFSET_OUT_OF_RANGE above the high watermark, NOT_LEADER_OR_FOLLOWER,
//   UNKNOWN_TOPIC_OR_PARTITION, POLICY_VIOLATION when cleanup.policy lacks `delete`.
// * Not implemented: ACLs.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import type { DeleteRecordsEntry, DeleteRecordsOutcome } from "../server/replica-manager.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

/** Partitions one request may name; Kafka has no limit, but every list needs one. */
const PARTITIONS_MAX = 10_000;

export const deleteRecordsHandler = defineHandler({
  apiKey: ApiKey.DeleteRecords,
  minVersion: 0,
  maxVersion: 2,
  async handle(request, ctx) {
    const entries: DeleteRecordsEntry[] = [];
    for (const t of request.topics) {
      for (const p of t.partitions) {
        entries.push({ topic: t.name, partition: p.partitionIndex, offset: p.offset });
      }
    }
    const accepted = entries.slice(0, PARTITIONS_MAX);
    // DELETE on the topic, as Kafka's handleDeleteRecordsRequest.
    const mayDelete = accepted.map((e) =>
      authorize(ctx, AclOperation.DELETE, ResourceType.TOPIC, e.topic),
    );
    const deleted: DeleteRecordsOutcome[] = await ctx.broker.replicaManager.deleteRecords(
      request.timeoutMs,
      accepted.filter((_, j) => mayDelete[j]),
    );
    const denied = { errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED, lowWatermark: -1n };
    let next = 0;
    const outcomes = mayDelete.map((ok) => (ok ? deleted[next++]! : denied));
    const tooMany = { errorCode: ErrorCode.INVALID_REQUEST, lowWatermark: -1n };
    let i = 0;
    return {
      throttleTimeMs: 0,
      topics: request.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => {
          const outcome = outcomes[i++] ?? tooMany;
          return {
            partitionIndex: p.partitionIndex,
            lowWatermark: outcome.lowWatermark,
            errorCode: outcome.errorCode,
          };
        }),
      })),
    };
  },
});
