// InitializeShareGroupState: v0 (KIP-932)
//
// Version notes:
// * Broker to share coordinator: a share partition's state starts afresh at StartOffset with a
//   new StateEpoch (FENCED_STATE_EPOCH when it is not newer than the stored one).
// * NOT_COORDINATOR when this broker does not lead the key's __share_group_state partition,
//   COORDINATOR_LOAD_IN_PROGRESS while it reads it. CLUSTER_ACTION (brokers only).
import { ApiKey } from "../protocol/generated/index.ts";
import { defineHandler } from "./handler.ts";
import { answerShareState } from "./share-state-requests.ts";

export const initializeShareGroupStateHandler = defineHandler({
  apiKey: ApiKey.InitializeShareGroupState,
  minVersion: 0,
  maxVersion: 0,
  async handle(request, ctx) {
    const coordinator = ctx.broker.shareCoordinator;
    const results = await answerShareState(
      ctx,
      request.topics,
      (topicId, p) =>
        coordinator.initialize(
          { groupId: request.groupId, topicId, partition: p.partition },
          p.stateEpoch,
          p.startOffset,
        ),
      (p, o) => ({ partition: p.partition, errorCode: o.errorCode, errorMessage: o.errorMessage }),
    );
    return { results };
  },
});
