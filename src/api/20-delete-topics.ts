// DeleteTopics: v1-6
//
// Version notes:
// * v0 is deprecated and removed in Kafka 4 (KIP-896); not offered. v1: ThrottleTimeMs.
// * v2, v3: no changes; from v3 a broker with delete.topic.enable=false answers
//   TOPIC_DELETION_DISABLED, before that INVALID_REQUEST (as Kafka does).
// * v4: flexible. v5: ErrorMessage (KIP-599); Quill fills it for every error. From v5 a client
//   over its controller_mutation_rate gets THROTTLING_QUOTA_EXCEEDED for each topic after the
//   bucket ran dry; before v5 every topic is deleted and the response only throttled.
// * v6: topics by name or by TopicId (KIP-516); an unknown id is UNKNOWN_TOPIC_ID, and naming
//   both a name and an id in one entry makes the whole request INVALID_REQUEST.
// * Deletion is synchronous: the topic and its logs are gone when the answer is sent.
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { ApiKey, type DeleteTopicsRequest } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import type { ControllerMutationQuota } from "../server/controller-mutation-quota.ts";
import { authorize } from "./authorize.ts";
import { defineHandler, type RequestContext } from "./handler.ts";
import { controllerMutationQuota, settleControllerMutationQuota } from "./quota-throttle.ts";

const ZERO_TOPIC_ID = new Uint8Array(16);
/** Versions before this one answer a disabled deletion with INVALID_REQUEST. */
const TOPIC_DELETION_DISABLED_MIN_VERSION = 3;
/** The first version whose clients understand THROTTLING_QUOTA_EXCEEDED (KIP-599). */
const STRICT_QUOTA_MIN_VERSION = 5;

/** One requested topic, by name (v1-5, v6) or by id (v6). */
interface Target {
  readonly name: string | null;
  readonly topicId: Uint8Array;
}

export const deleteTopicsHandler = defineHandler({
  apiKey: ApiKey.DeleteTopics,
  minVersion: 1,
  maxVersion: 6,
  async handle(request, ctx) {
    const targets = targetsOf(request, ctx.apiVersion);
    if (targets.some((t) => t.name !== null && !isZeroId(t.topicId))) {
      const message = "Topic name and topic ID can not both be specified.";
      const responses = targets.map((t) => result(t, ErrorCode.INVALID_REQUEST, message));
      return { throttleTimeMs: 0, responses };
    }
    const quota = controllerMutationQuota(ctx, STRICT_QUOTA_MIN_VERSION);
    const responses = [];
    for (const t of targets) responses.push(await deleteOne(t, quota, ctx));
    settleControllerMutationQuota(ctx, quota);
    return { throttleTimeMs: 0, responses };
  },
});

function targetsOf(request: DeleteTopicsRequest, apiVersion: number): Target[] {
  if (apiVersion >= 6) return request.topics.map((t) => ({ name: t.name, topicId: t.topicId }));
  return request.topicNames.map((name) => ({ name, topicId: ZERO_TOPIC_ID }));
}

async function deleteOne(t: Target, quota: ControllerMutationQuota, ctx: RequestContext) {
  const cache = ctx.broker.metadataCache;
  const name = t.name ?? cache.topicById(t.topicId)?.name ?? null;
  if (name === null) {
    return result(t, ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID.");
  }
  // DELETE on the topic, as Kafka (checked before its existence, so none is revealed).
  if (!authorize(ctx, AclOperation.DELETE, ResourceType.TOPIC, name)) {
    return result(t, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.");
  }
  try {
    const topicId = await ctx.broker.adminManager.deleteTopic(name, quota);
    return result({ name, topicId }, ErrorCode.NONE, null);
  } catch (e) {
    if (!(e instanceof KafkaError)) throw e;
    const disabledInOldVersion =
      e.code === ErrorCode.TOPIC_DELETION_DISABLED &&
      ctx.apiVersion < TOPIC_DELETION_DISABLED_MIN_VERSION;
    const code = disabledInOldVersion ? ErrorCode.INVALID_REQUEST : e.code;
    return result({ name, topicId: t.topicId }, code, e.message);
  }
}

function result(t: Target, errorCode: number, errorMessage: string | null) {
  return { name: t.name, topicId: t.topicId, errorCode, errorMessage };
}

function isZeroId(id: Uint8Array): boolean {
  return id.every((b) => b === 0);
}
