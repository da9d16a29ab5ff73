// DeleteShareGroupState: v0 (KIP-932)
//
// Version notes:
// * Broker to share coordinator: forgets a share partition's state (a tombstone in
//   __share_group_state); a key without state is answered NONE.
// * NOT_COORDINATOR when this broker does not lead the key's __share_group_state partition,
//   COORDINATOR_LOAD_IN_PROGRESS while it reads it. CLUSTER_ACTION (brokers only).
import { ApiKey } from "../protocol/generated/index.ts";
import { defineHandler } from "./handler.ts";
import { answerShareState } from "./share-state-requests.ts";

export const deleteShareGroupStateHandler = defineHandler({
  apiKey: ApiKey.DeleteShareGroupState,
  minVersion: 0,
  maxVersion: 0,
  async handle(request, ctx) {
    const coordinator = ctx.broker.shareCoordinator;
    const results = await answerShareState(
      ctx,
      request.topics,
      (topicId, p) =>
        coordinator.delete({ groupId: request.groupId, topicId, partition: p.partition }),
      (p, o) => ({ partition: p.partition, errorCode: o.errorCode, errorMessage: o.errorMessage }),
    );
    return { results };
  },
});
