// CreatePartitions: v0-3
//
// Version notes:
// * v0 (KIP-195): grow a topic to Count partitions, optionally placing the new ones
//   (Assignments: one broker list per new partition); ValidateOnly checks without changing.
// * v1: no changes (throttling after the response). v2: flexible. v3: no changes (quotas): from
//   v3 a client over its controller_mutation_rate gets THROTTLING_QUOTA_EXCEEDED for each topic
//   after the bucket ran dry; before v3 the partitions are added and the response throttled.
// * Only increases: the same count or fewer is INVALID_PARTITIONS; a missing topic is
//   UNKNOWN_TOPIC_OR_PARTITION; bad assignments are INVALID_REPLICA_ASSIGNMENT, with Kafka's
//   messages. A topic named twice gets one INVALID_REQUEST result, as in Kafka.
// * Growing is synchronous: the new partitions' logs exist when the answer is sent, so
//   timeout_ms <= 0 is not turned into REQUEST_TIMED_OUT.
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { ApiKey, type CreatePartitionsRequest } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import type { ControllerMutationQuota } from "../server/controller-mutation-quota.ts";
import { authorize } from "./authorize.ts";
import { defineHandler, type RequestContext } from "./handler.ts";
import { controllerMutationQuota, settleControllerMutationQuota } from "./quota-throttle.ts";

type Topic = CreatePartitionsRequest["topics"][number];

const DUPLICATE = "Duplicate topic in request.";
/** The first version whose clients understand THROTTLING_QUOTA_EXCEEDED (KIP-599). */
const STRICT_QUOTA_MIN_VERSION = 3;

export const createPartitionsHandler = defineHandler({
  apiKey: ApiKey.CreatePartitions,
  minVersion: 0,
  maxVersion: 3,
  async handle(request, ctx) {
    const counts = new Map<string, number>();
    for (const t of request.topics) counts.set(t.name, (counts.get(t.name) ?? 0) + 1);
    const answered = new Set<string>();
    const quota = controllerMutationQuota(ctx, STRICT_QUOTA_MIN_VERSION);
    const results = [];
    for (const t of request.topics) {
      if (answered.has(t.name)) continue;
      answered.add(t.name);
      results.push(
        counts.get(t.name)! > 1
          ? { name: t.name, errorCode: ErrorCode.INVALID_REQUEST, errorMessage: DUPLICATE }
          : await createOne(t, request.validateOnly, quota, ctx),
      );
    }
    settleControllerMutationQuota(ctx, quota);
    return { throttleTimeMs: 0, results };
  },
});

async function createOne(
  t: Topic,
  validateOnly: boolean,
  quota: ControllerMutationQuota,
  ctx: RequestContext,
) {
  // ALTER on the topic, as Kafka's handleCreatePartitionsRequest.
  if (!authorize(ctx, AclOperation.ALTER, ResourceType.TOPIC, t.name)) {
    const errorMessage = "Topic authorization failed.";
    return { name: t.name, errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED, errorMessage };
  }
  try {
    const assignments = t.assignments === null ? null : t.assignments.map((a) => a.brokerIds);
    const admin = ctx.broker.adminManager;
    await admin.createPartitions(t.name, t.count, assignments, validateOnly, quota);
    return { name: t.name, errorCode: ErrorCode.NONE, errorMessage: null };
  } catch (e) {
    if (!(e instanceof KafkaError)) throw e;
    return { name: t.name, errorCode: e.code, errorMessage: e.message };
  }
}
