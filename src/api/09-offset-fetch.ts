// OffsetFetch: v0-9
//
// Version notes:
// * v0 read offsets from ZooKeeper in Kafka; here every version reads the same offset store.
// * v2: null Topics means every committed partition; a top-level ErrorCode. v6: flexible.
// * v7: RequireStable (KIP-447). Without transactions no offset is ever pending, so it changes
//   nothing. v8: several groups per request (KIP-709). v9: MemberId/MemberEpoch for KIP-848
//   groups; classic groups ignore them.
// * Before v2 there is no top-level error: a group error is reported on every partition.

import type { OffsetFetchResult, OffsetFetchTopic } from "../coordinator/group-operations.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { defineHandler, type RequestContext } from "./handler.ts";

const GROUPS_MIN_VERSION = 8;
const TOP_LEVEL_ERROR_MIN_VERSION = 2;
/** Groups one request may ask about; Kafka has no limit, but every list needs one. */
const GROUPS_MAX = 10_000;

type Topics = readonly OffsetFetchTopic[] | null;

export const offsetFetchHandler = defineHandler({
  apiKey: ApiKey.OffsetFetch,
  minVersion: 0,
  maxVersion: 9,
  async handle(request, ctx) {
    if (ctx.apiVersion >= GROUPS_MIN_VERSION) {
      const groups = await Promise.all(
        request.groups.slice(0, GROUPS_MAX).map(async (g) => {
          const result = await fetch(g.groupId, g.topics, request.requireStable, ctx);
          return { groupId: g.groupId, errorCode: result.errorCode, topics: result.topics };
        }),
      );
      return { throttleTimeMs: 0, groups };
    }
    const result = await fetch(request.groupId, request.topics, request.requireStable, ctx);
    if (ctx.apiVersion >= TOP_LEVEL_ERROR_MIN_VERSION) {
      return { throttleTimeMs: 0, errorCode: result.errorCode, topics: result.topics };
    }
    return { throttleTimeMs: 0, topics: withGroupErrorOnPartitions(result, request.topics ?? []) };
  },
});

function fetch(groupId: string, topics: Topics, requireStable: boolean, ctx: RequestContext) {
  return ctx.broker.groupCoordinator.offsetFetch({ groupId, topics, requireStable });
}

/** v0-1: a group-level error becomes every requested partition's error. */
function withGroupErrorOnPartitions(result: OffsetFetchResult, requested: NonNullable<Topics>) {
  if (result.errorCode === 0) return result.topics;
  return requested.map((t) => ({
    name: t.name,
    partitions: t.partitionIndexes.map((partitionIndex) => ({
      partitionIndex,
      committedOffset: -1n,
      committedLeaderEpoch: -1,
      metadata: "",
      errorCode: result.errorCode,
    })),
  }));
}
