// WriteShareGroupState: v0-1 (KIP-932)
//
// Version notes:
// * Broker to share coordinator: a partition leader writes a share partition's start offset
//   and in-flight state batches; answered once the record is in __share_group_state on every
//   in-sync replica. v1 adds DeliveryCompleteCount (KIP-1226), which Quill does not keep.
// * FENCED_LEADER_EPOCH for a deposed leader, FENCED_STATE_EPOCH after an offset reset.
//   NOT_COORDINATOR when this broker does not lead the key's __share_group_state partition,
//   COORDINATOR_LOAD_IN_PROGRESS while it reads it. CLUSTER_ACTION (brokers only).

import { STATE_BATCHES_MAX } from "../coordinator/share-state-log.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { defineHandler } from "./handler.ts";
import { answerShareState } from "./share-state-requests.ts";

export const writeShareGroupStateHandler = defineHandler({
  apiKey: ApiKey.WriteShareGroupState,
  minVersion: 0,
  maxVersion: 1,
  async handle(request, ctx) {
    const coordinator = ctx.broker.shareCoordinator;
    const results = await answerShareState(
      ctx,
      request.topics,
      (topicId, p) =>
        p.stateBatches.length > STATE_BATCHES_MAX
          ? { errorCode: ErrorCode.INVALID_REQUEST, errorMessage: "Too many batches.", state: null }
          : coordinator.write({ groupId: request.groupId, topicId, partition: p.partition }, p),
      (p, o) => ({ partition: p.partition, errorCode: o.errorCode, errorMessage: o.errorMessage }),
    );
    return { results };
  },
});
