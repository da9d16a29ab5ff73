// DeleteGroups: v0-3
//
// Version notes:
// * v1 is the same as v0. v2: flexible. v3: a per-group ErrorMessage (left null).
// * Only Empty groups are deleted (with their committed offsets); others get NON_EMPTY_GROUP.
// * A share group (KIP-932), as Kafka 4's GroupCoordinatorService.deleteGroups: with members
//   NON_EMPTY_GROUP; Empty, its share-partition state is deleted first (the share coordinators'
//   DeleteShareGroupState in a cluster, the state file in embedded mode, as
//   DeleteShareGroupOffsets does), then the group, so a member joining the id afterwards starts
//   at share.auto.offset.reset. When the state cannot be deleted the group is kept and the
//   failure is its error. An id with no group of any type is GROUP_ID_NOT_FOUND.
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler, type RequestContext } from "./handler.ts";

export const deleteGroupsHandler = defineHandler({
  apiKey: ApiKey.DeleteGroups,
  minVersion: 0,
  maxVersion: 3,
  async handle(request, ctx) {
    // DELETE on each group, as Kafka; a refused one is GROUP_AUTHORIZATION_FAILED.
    const mayDelete = (g: string) => authorize(ctx, AclOperation.DELETE, ResourceType.GROUP, g);
    const allowed = [...new Set(request.groupsNames.filter(mayDelete))];
    const coordinator = ctx.broker.groupCoordinator;
    // Split before anything is deleted: a deleted share group no longer counts as one.
    const shareIds = new Set(allowed.filter((g) => coordinator.shareGroup(g) !== null));
    const shares = await Promise.all([...shareIds].map((g) => deleteShareGroup(ctx, g)));
    const others = await coordinator.deleteGroups(allowed.filter((g) => !shareIds.has(g)));
    const deleted = await Promise.all(
      others.map((r) =>
        r.errorCode === ErrorCode.GROUP_ID_NOT_FOUND ? deleteStoredShareState(ctx, r.groupId) : r,
      ),
    );
    const refused = request.groupsNames
      .filter((g) => !mayDelete(g))
      .map((groupId) => ({ groupId, errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED }));
    return { throttleTimeMs: 0, results: [...refused, ...shares, ...deleted] };
  },
});

/** A share group this broker coordinates: its state of every partition it may have, then it. */
async function deleteShareGroup(ctx: RequestContext, groupId: string) {
  const coordinator = ctx.broker.groupCoordinator;
  if (coordinator.shareGroups.hasMembers(groupId)) {
    return { groupId, errorCode: ErrorCode.NON_EMPTY_GROUP };
  }
  const partitions: { topic: string; partition: number }[] = [];
  for (const topic of coordinator.shareGroup(groupId)?.assignedTopics ?? []) {
    const count = ctx.broker.metadataCache.topic(topic)?.partitions.length ?? 0;
    for (let partition = 0; partition < count; partition++) partitions.push({ topic, partition });
  }
  const errorCode = await deleteState(ctx, groupId, partitions);
  // A member that joined while the state was deleted keeps the group (it starts afresh).
  if (errorCode === ErrorCode.NONE && !coordinator.shareGroups.hasMembers(groupId)) {
    coordinator.shareGroups.unload(groupId);
  }
  return { groupId, errorCode };
}

/**
 * An id with no group in memory whose share-partition state this broker can list (embedded
 * mode: a share group's membership is gone after a restart, its state is not): the state goes,
 * and the group with it, as Kafka (whose membership is durable) deletes that group.
 */
async function deleteStoredShareState(ctx: RequestContext, groupId: string) {
  const notFound = { groupId, errorCode: ErrorCode.GROUP_ID_NOT_FOUND };
  if (ctx.broker.sharePartitionManager.hasStoredState(groupId) !== true) return notFound;
  return { groupId, errorCode: await deleteState(ctx, groupId, []) };
}

async function deleteState(
  ctx: RequestContext,
  groupId: string,
  partitions: readonly { topic: string; partition: number }[],
): Promise<number> {
  try {
    await ctx.broker.sharePartitionManager.deleteGroupState(groupId, partitions);
    return ErrorCode.NONE;
  } catch (e) {
    if (!(e instanceof KafkaError)) throw e;
    return e.code;
  }
}
