// DescribeProducers: v0 (KIP-664)
//
// Version notes:
// * v0: flexible from the start. Lists the idempotent producers each partition remembers: id,
//   epoch, last sequence and last batch timestamp, the coordinator epoch of the last marker
//   written for it, and the first offset of its open transaction (-1 when none), which is what
//   `kafka-transactions.sh find-hanging` looks at.
// * A partition this broker does not host gets UNKNOWN_TOPIC_OR_PARTITION, as in Kafka.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

/** Partitions one request may ask about; Kafka has no limit, but every list needs one. */
const PARTITIONS_MAX = 10_000;

export const describeProducersHandler = defineHandler({
  apiKey: ApiKey.DescribeProducers,
  minVersion: 0,
  maxVersion: 0,
  handle(request, ctx) {
    let budget = PARTITIONS_MAX;
    return {
      throttleTimeMs: 0,
      topics: request.topics.map((topic) => ({
        name: topic.name,
        partitions: topic.partitionIndexes.map((partitionIndex) => {
          // READ on the topic, as Kafka's handleDescribeProducersRequest.
          const readable = authorize(ctx, AclOperation.READ, ResourceType.TOPIC, topic.name);
          const state = !readable
            ? {
                errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                errorMessage: null,
                producers: [],
              }
            : budget-- > 0
              ? ctx.broker.replicaManager.activeProducers(topic.name, partitionIndex)
              : {
                  errorCode: ErrorCode.INVALID_REQUEST,
                  errorMessage: "Too many partitions.",
                  producers: [],
                };
          return {
            partitionIndex,
            errorCode: state.errorCode,
            errorMessage: state.errorMessage,
            activeProducers: state.producers.map((p) => ({
              producerId: p.producerId,
              producerEpoch: p.producerEpoch,
              lastSequence: p.lastSeq,
              lastTimestamp: p.lastTimestampMs,
              coordinatorEpoch: p.coordinatorEpoch,
              currentTxnStartOffset: p.currentTxnFirstOffset,
            })),
          };
        }),
      })),
    };
  },
});
