// ElectLeaders: v0-2 (admin client to the controller, KIP-183 and KIP-460)
//
// Version notes:
// * v0: preferred elections only. v1: ElectionType (0 preferred, 1 unclean) and a top-level
//   error code. v2: flexible.
// * Only the active controller elects; elsewhere every partition (and, v1+, the top level) is
//   NOT_CONTROLLER and the admin client looks for the controller again. Null topic partitions
//   means every partition. Per partition, as Kafka's controller answers:
//   ELECTION_NOT_NEEDED (the preferred replica leads already; unclean: a live leader exists),
//   PREFERRED_LEADER_NOT_AVAILABLE (the preferred replica is dead or out of the ISR),
//   ELIGIBLE_LEADERS_NOT_AVAILABLE (unclean: no replica lives), UNKNOWN_TOPIC_OR_PARTITION.
import { ElectionType } from "../controller/controller.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey, type ElectLeadersResponse } from "../protocol/generated/index.ts";
import { AclOperation } from "../security/authorized-operations.ts";
import { authorizeCluster } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

type TopicResult = ElectLeadersResponse["replicaElectionResults"][number];

export const electLeadersHandler = defineHandler({
  apiKey: ApiKey.ElectLeaders,
  minVersion: 0,
  maxVersion: 2,
  async handle(request, ctx) {
    const controller = ctx.broker.controller;
    const electionType = ctx.apiVersion >= 1 ? request.electionType : ElectionType.PREFERRED;
    const wanted =
      request.topicPartitions === null
        ? null
        : request.topicPartitions.flatMap((t) =>
            t.partitions.map((partition) => ({ topic: t.topic, partition })),
          );
    // ALTER on the cluster, as Kafka's handleElectLeaders.
    if (!authorizeCluster(ctx, AclOperation.ALTER)) {
      const refused = ErrorCode.CLUSTER_AUTHORIZATION_FAILED;
      return answer(refused, wanted ?? [], refused);
    }
    if (electionType !== ElectionType.PREFERRED && electionType !== ElectionType.UNCLEAN) {
      return answer(ErrorCode.INVALID_REQUEST, wanted ?? [], ErrorCode.INVALID_REQUEST);
    }
    const results =
      controller === null || !controller.isActive
        ? null
        : await controller.electLeaders(electionType, wanted);
    if (results === null) {
      return answer(ErrorCode.NOT_CONTROLLER, wanted ?? [], ErrorCode.NOT_CONTROLLER);
    }
    return answer(ErrorCode.NONE, results, null);
  },
});

function answer(
  errorCode: number,
  results: readonly { topic: string; partition: number; errorCode?: number }[],
  partitionError: number | null,
) {
  const byTopic = new Map<string, TopicResult>();
  for (const r of results) {
    let topic = byTopic.get(r.topic);
    if (topic === undefined)
      byTopic.set(r.topic, (topic = { topic: r.topic, partitionResult: [] }));
    const code = partitionError ?? r.errorCode ?? ErrorCode.NONE;
    topic.partitionResult.push({
      partitionId: r.partition,
      errorCode: code,
      errorMessage: code === ErrorCode.NONE ? null : messageOf(code),
    });
  }
  return { throttleTimeMs: 0, errorCode, replicaElectionResults: [...byTopic.values()] };
}

/** Kafka's messages, which kafka-leader-election.sh prints beside each partition. */
function messageOf(code: number): string {
  switch (code) {
    case ErrorCode.ELECTION_NOT_NEEDED:
      return "Leader election not needed for topic partition.";
    case ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE:
      return "Failed to elect leader: the preferred replica is not alive or not in the ISR.";
    case ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE:
      return "Failed to elect leader: no replica of the partition is alive.";
    case ErrorCode.NOT_CONTROLLER:
      return "This broker is not the controller.";
    default:
      return "Leader election failed.";
  }
}
