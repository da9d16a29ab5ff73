// DescribeConfigs: v1-4
//
// Version notes:
// * v0 (IsDefault instead of ConfigSource) is deprecated and removed in Kafka 4 (KIP-896);
//   not offered.
// * v1: IncludeSynonyms, ConfigSource and Synonyms (KIP-226). v2: no changes.
// * v3: IncludeDocumentation, ConfigType and Documentation (KIP-569). v4: flexible.
// * Resource type 2 (topic): every topic key Quill honours, with the topic's override or the
//   broker's value, and the synonyms Kafka lists (the override, then each broker key). A
//   missing topic is UNKNOWN_TOPIC_OR_PARTITION for that resource; an illegal name is
//   INVALID_TOPIC_EXCEPTION.
// * Resource type 4 (broker): name "<broker.id>" lists every broker key with its value now,
//   read-only unless it may change at runtime, its source (DYNAMIC_BROKER_CONFIG,
//   DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG or DEFAULT_CONFIG) and synonyms as
//   Kafka's ZooKeeper-mode broker lists them; the empty name lists the cluster-wide dynamic
//   defaults only. Another id is INVALID_REQUEST, as in Kafka. Topic entries show a changed
//   broker default as their value, with its dynamic synonym.
// * ConfigurationKeys null or empty lists every key; otherwise only the named ones.
// * Resource type 32 (group, Kafka 4): every group config Quill applies, with the group's value
//   (source GROUP_CONFIG) or the broker's (DEFAULT_CONFIG); DESCRIBE_CONFIGS on the group.
// * Not implemented: broker loggers (type 8) and client metrics: INVALID_REQUEST.
import { describeBrokerConfigs, topicBrokerSynonyms } from "../config/broker-config-description.ts";
import {
  type ConfigDescription,
  describeTopicConfig,
  TOPIC_CONFIG_KEYS,
  type TopicConfigKey,
} from "../config/topic-config.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { ApiKey, type DescribeConfigsRequest } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { checkTopicName } from "../server/admin-manager.ts";
import { authorize, configResourceDenial } from "./authorize.ts";
import { brokerIdOfResource, ConfigResourceType, resourceTypeName } from "./config-resource.ts";
import { defineHandler, type RequestContext } from "./handler.ts";

type Resource = DescribeConfigsRequest["resources"][number];

interface Flags {
  readonly includeSynonyms: boolean;
  readonly includeDocumentation: boolean;
}

export const describeConfigsHandler = defineHandler({
  apiKey: ApiKey.DescribeConfigs,
  minVersion: 1,
  maxVersion: 4,
  handle(request, ctx) {
    const results = request.resources.map((resource) => {
      const header = { resourceType: resource.resourceType, resourceName: resource.resourceName };
      try {
        const configs = describeResource(resource, ctx).map((d) => toEntry(d, request));
        return { ...header, errorCode: ErrorCode.NONE, errorMessage: null, configs };
      } catch (e) {
        if (!(e instanceof KafkaError)) throw e;
        return { ...header, errorCode: e.code, errorMessage: e.message, configs: [] };
      }
    });
    return { throttleTimeMs: 0, results };
  },
});

function describeResource(resource: Resource, ctx: RequestContext): ConfigDescription[] {
  const wanted = (name: string) =>
    resource.configurationKeys === null ||
    resource.configurationKeys.length === 0 ||
    resource.configurationKeys.includes(name);
  const isTopic = resource.resourceType === ConfigResourceType.TOPIC;
  const known = isTopic || resource.resourceType === ConfigResourceType.BROKER;
  const { DESCRIBE_CONFIGS } = AclOperation;
  const denial =
    known && configResourceDenial(ctx, DESCRIBE_CONFIGS, isTopic, resource.resourceName);
  if (denial) throw denial;
  switch (resource.resourceType) {
    case ConfigResourceType.TOPIC:
      return describeTopic(resource.resourceName, wanted, ctx);
    case ConfigResourceType.BROKER:
      return describeBroker(resource.resourceName, wanted, ctx);
    case ConfigResourceType.GROUP:
      if (!authorize(ctx, DESCRIBE_CONFIGS, ResourceType.GROUP, resource.resourceName)) {
        throw new KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED);
      }
      return ctx.broker.sharePartitionManager.groupConfigs.describe(resource.resourceName, wanted);
    default:
      throw new KafkaError(
        ErrorCode.INVALID_REQUEST,
        `Unsupported resource type: ${resourceTypeName(resource.resourceType)}`,
      );
  }
}

function describeTopic(name: string, wanted: (key: string) => boolean, ctx: RequestContext) {
  checkTopicName(name);
  const topic = ctx.broker.metadataCache.topic(name);
  if (topic === undefined) {
    throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Topic '${name}' does not exist.`);
  }
  const keys = (Object.keys(TOPIC_CONFIG_KEYS) as TopicConfigKey[]).filter(wanted);
  const dynamic = ctx.broker.dynamicConfig;
  const synonyms = topicBrokerSynonyms(dynamic);
  return keys.map((key) => describeTopicConfig(key, topic.configs, dynamic.current, synonyms));
}

function describeBroker(name: string, wanted: (key: string) => boolean, ctx: RequestContext) {
  if (name !== "") brokerIdOfResource(name, ctx.broker.brokerId, " or empty string");
  return describeBrokerConfigs(
    ctx.broker.dynamicConfig,
    name === "" ? "default" : "broker",
    wanted,
  );
}

/** Synonyms only when asked for, documentation only when asked for (v3+). */
function toEntry(d: ConfigDescription, flags: Flags) {
  return {
    name: d.name,
    value: d.value,
    readOnly: d.readOnly,
    configSource: d.source,
    isSensitive: d.sensitive,
    synonyms: flags.includeSynonyms ? d.synonyms.map((s) => ({ ...s })) : [],
    configType: d.type,
    documentation: flags.includeDocumentation ? d.documentation : null,
  };
}
