// CreateTopics: v2-7
//
// Version notes:
// * v0-1 are deprecated and removed in Kafka 4 (KIP-896); not offered. v1 added ValidateOnly and
//   error messages, v2 ThrottleTimeMs.
// * v3, v4: no changes (v4 lets clients leave partitions and replication factor at -1, the
//   broker defaults, which every version here accepts).
// * v5: flexible; the result carries NumPartitions, ReplicationFactor and the topic's configs
//   (every topic key Quill honours, as DescribeConfigs describes them) (KIP-525).
// * v6: no changes (quota violations): from v6 a client over its controller_mutation_rate gets
//   THROTTLING_QUOTA_EXCEEDED for each topic after the bucket ran dry, before v6 every topic is
//   created and the response only throttled (KIP-599, api/quota-throttle.ts).
// * v7: TopicId (KIP-516).
// * A topic named twice in one request gets INVALID_REQUEST for each entry and is not created.
// * Creation is synchronous: the topic exists when the answer is sent. So, unlike Kafka's
//   ZooKeeper mode, timeout_ms <= 0 does not turn success into REQUEST_TIMED_OUT (KRaft brokers
//   behave the same way).
// * Not implemented: create-topic policies (TopicConfigErrorCode stays NONE).
import { topicBrokerSynonyms } from "../config/broker-config-description.ts";
import {
  describeTopicConfig,
  TOPIC_CONFIG_KEYS,
  type TopicConfigKey,
} from "../config/topic-config.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { ApiKey, type CreateTopicsRequest } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import type { CreatedTopic } from "../server/admin-manager.ts";
import type { ControllerMutationQuota } from "../server/controller-mutation-quota.ts";
import { authorize, authorizeCluster } from "./authorize.ts";
import { defineHandler, type RequestContext } from "./handler.ts";
import { controllerMutationQuota, settleControllerMutationQuota } from "./quota-throttle.ts";

const NO_TOPIC_ID = new Uint8Array(16);
/** The first version whose clients understand THROTTLING_QUOTA_EXCEEDED (KIP-599). */
const STRICT_QUOTA_MIN_VERSION = 6;

type CreatableTopic = CreateTopicsRequest["topics"][number];

export const createTopicsHandler = defineHandler({
  apiKey: ApiKey.CreateTopics,
  minVersion: 2,
  maxVersion: 7,
  async handle(request, ctx) {
    const counts = new Map<string, number>();
    for (const t of request.topics) counts.set(t.name, (counts.get(t.name) ?? 0) + 1);
    const topics = [];
    // CREATE on the cluster, or else on each topic, as Kafka's handleCreateTopicsRequest.
    const clusterCreate = authorizeCluster(ctx, AclOperation.CREATE);
    const mayCreate = (name: string) =>
      clusterCreate || authorize(ctx, AclOperation.CREATE, ResourceType.TOPIC, name);
    const quota = controllerMutationQuota(ctx, STRICT_QUOTA_MIN_VERSION);
    // One at a time, in request order, so a failure cannot leave half of a topic behind.
    for (const t of request.topics) {
      topics.push(
        counts.get(t.name)! > 1
          ? failed(t.name, ErrorCode.INVALID_REQUEST, "Found multiple entries for this topic.")
          : !mayCreate(t.name)
            ? failed(t.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
            : await createOne(t, request.validateOnly, quota, ctx),
      );
    }
    settleControllerMutationQuota(ctx, quota);
    return { throttleTimeMs: 0, topics };
  },
});

async function createOne(
  t: CreatableTopic,
  validateOnly: boolean,
  quota: ControllerMutationQuota,
  ctx: RequestContext,
) {
  try {
    const created = await ctx.broker.adminManager.createTopic(t, validateOnly, quota);
    return succeeded(t.name, created, ctx);
  } catch (e) {
    if (!(e instanceof KafkaError)) throw e;
    return failed(t.name, e.code, e.message);
  }
}

function succeeded(name: string, created: CreatedTopic, ctx: RequestContext) {
  const result = { name, topicId: created.topicId, errorCode: ErrorCode.NONE, errorMessage: null };
  if (ctx.apiVersion < 5) return result;
  const dynamic = ctx.broker.dynamicConfig;
  const synonyms = topicBrokerSynonyms(dynamic);
  const names = Object.keys(TOPIC_CONFIG_KEYS) as TopicConfigKey[];
  const configs = names.map((key) => {
    const d = describeTopicConfig(key, created.configs, dynamic.current, synonyms);
    return {
      name: d.name,
      value: d.value,
      readOnly: d.readOnly,
      configSource: d.source,
      isSensitive: d.sensitive,
    };
  });
  return {
    ...result,
    numPartitions: created.numPartitions,
    replicationFactor: created.replicationFactor,
    configs,
  };
}

/** Kafka resets the metadata fields of a failed topic: -1 counts and no configs. */
function failed(name: string, errorCode: number, errorMessage: string) {
  return {
    name,
    topicId: NO_TOPIC_ID,
    errorCode,
    errorMessage,
    numPartitions: -1,
    replicationFactor: -1,
    configs: [],
  };
}
