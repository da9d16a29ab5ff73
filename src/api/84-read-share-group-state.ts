// ReadShareGroupState: v0 (KIP-932)
//
// Version notes:
// * Broker to share coordinator: a partition leader reads a share partition's state when it
//   starts serving it. No state yet is StartOffset -1 with no batches (the leader then starts
//   at share.auto.offset.reset). A LeaderEpoch below the highest seen is FENCED_LEADER_EPOCH;
//   a higher one fences the older leader's later writes.
// * NOT_COORDINATOR when this broker does not lead the key's __share_group_state partition,
//   COORDINATOR_LOAD_IN_PROGRESS while it reads it. CLUSTER_ACTION (brokers only).
import { ApiKey } from "../protocol/generated/index.ts";
import { defineHandler } from "./handler.ts";
import { answerShareState } from "./share-state-requests.ts";

export const readShareGroupStateHandler = defineHandler({
  apiKey: ApiKey.ReadShareGroupState,
  minVersion: 0,
  maxVersion: 0,
  async handle(request, ctx) {
    const coordinator = ctx.broker.shareCoordinator;
    const results = await answerShareState(
      ctx,
      request.topics,
      (topicId, p) =>
        coordinator.read(
          { groupId: request.groupId, topicId, partition: p.partition },
          p.leaderEpoch,
        ),
      (p, o) => ({
        partition: p.partition,
        errorCode: o.errorCode,
        errorMessage: o.errorMessage,
        stateEpoch: o.state?.stateEpoch ?? 0,
        startOffset: o.state?.startOffset ?? -1n,
        stateBatches: (o.state?.stateBatches ?? []).map((b) => ({ ...b })),
      }),
    );
    return { results };
  },
});
