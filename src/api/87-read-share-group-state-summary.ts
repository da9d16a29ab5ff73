// ReadShareGroupStateSummary: v0-1 (KIP-932)
//
// Version notes:
// * Group coordinator to share coordinator (DescribeShareGroupOffsets in a cluster): a share
//   partition's state epoch, leader epoch and start offset (-1 when it has no state), and from
//   v1 DeliveryCompleteCount, the offsets at or above the start offset already acknowledged or
//   archived. A read of the summary fences no leader and moves no epoch: the LeaderEpoch sent is
//   not checked.
// * NOT_COORDINATOR when this broker does not lead the key's __share_group_state partition,
//   COORDINATOR_LOAD_IN_PROGRESS while it reads it. CLUSTER_ACTION (brokers only).
import { deliveryCompleteCount } from "../coordinator/share-state-log.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { defineHandler } from "./handler.ts";
import { answerShareState } from "./share-state-requests.ts";

export const readShareGroupStateSummaryHandler = defineHandler({
  apiKey: ApiKey.ReadShareGroupStateSummary,
  minVersion: 0,
  maxVersion: 1,
  async handle(request, ctx) {
    const coordinator = ctx.broker.shareCoordinator;
    const results = await answerShareState(
      ctx,
      request.topics,
      (topicId, p) =>
        coordinator.read({ groupId: request.groupId, topicId, partition: p.partition }, -1),
      (p, o) => ({
        partition: p.partition,
        errorCode: o.errorCode,
        errorMessage: o.errorMessage,
        stateEpoch: o.state?.stateEpoch ?? 0,
        leaderEpoch: o.state?.leaderEpoch ?? -1,
        startOffset: o.state?.startOffset ?? -1n,
        deliveryCompleteCount: o.state === null ? 0 : deliveryCompleteCount(o.state),
      }),
    );
    return { results };
  },
});
