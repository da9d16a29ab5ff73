// AlterConfigs: v0-2
//
// Version notes:
// * v1: no changes (throttling after the response). v2: flexible.
// * Topic resources (type 2): the given configs replace all of the topic's overrides, as in
//   Kafka; keys left out fall back to the broker's values. The change is persisted and reaches
//   the running logs at once. An unknown key is INVALID_CONFIG, a bad value INVALID_REQUEST
//   (Kafka's ZooKeeper-mode answers), a missing topic UNKNOWN_TOPIC_OR_PARTITION.
// * Broker resources (type 4): this broker's id replaces its dynamic configs
//   (/config/brokers/<id>), the empty name the cluster-wide defaults (/config/brokers/<default>);
//   docs/broker-configs.md lists the keys that may change. A key that may not change, or a bad
//   value, is INVALID_REQUEST naming the resource; another broker's id is INVALID_REQUEST.
// * Group resources (type 32, Kafka 4): the given configs replace all of the group's
//   (server/group-config-manager.ts), ALTER_CONFIGS on the group. Other types: INVALID_REQUEST.
// * ValidateOnly checks everything and changes nothing.
// * With an authorizer: ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED) or on the
//   cluster for a broker (CLUSTER_AUTHORIZATION_FAILED), as Kafka.
// * Not implemented: alter-config policies.
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { authorize, configResourceDenial } from "./authorize.ts";
import { alterResources } from "./config-resource.ts";
import { defineHandler } from "./handler.ts";

export const alterConfigsHandler = defineHandler({
  apiKey: ApiKey.AlterConfigs,
  minVersion: 0,
  maxVersion: 2,
  async handle(request, ctx) {
    const { adminManager, brokerConfigManager } = ctx.broker;
    const only = request.validateOnly;
    const check = (name: string, isTopic: boolean) => {
      const denial = configResourceDenial(ctx, AclOperation.ALTER_CONFIGS, isTopic, name);
      if (denial !== null) throw denial;
    };
    const responses = await alterResources(request.resources, ctx.broker.brokerId, {
      topic: (r) => {
        check(r.resourceName, true);
        return adminManager.setTopicConfigs(r.resourceName, r.configs, only);
      },
      broker: (r) => {
        check(r.resourceName, false);
        return brokerConfigManager.setBrokerConfigs(r.resourceName, r.configs, only);
      },
      group: (r) => {
        if (!authorize(ctx, AclOperation.ALTER_CONFIGS, ResourceType.GROUP, r.resourceName)) {
          throw new KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED);
        }
        const configs = ctx.broker.sharePartitionManager.groupConfigs;
        return configs.replace(r.resourceName, r.configs, only);
      },
    });
    return { throttleTimeMs: 0, responses };
  },
});
