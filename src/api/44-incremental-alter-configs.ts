// IncrementalAlterConfigs: v0-1
//
// Version notes:
// * v0 (KIP-339): per-key operations SET (0), DELETE (1), APPEND (2) and SUBTRACT (3) on the
//   topic's current overrides. APPEND and SUBTRACT apply to list keys only (cleanup.policy);
//   on any other key they are INVALID_REQUEST. v1: flexible.
// * Topic resources (type 2): the merged overrides are checked, persisted and handed to the
//   running logs. Broker resources (type 4): the operations apply to the stored dynamic configs
//   of this broker (its id) or of the cluster-wide default (the empty name), which are then
//   checked whole, persisted and applied (docs/broker-configs.md). APPEND/SUBTRACT on a broker
//   key that is not a list is INVALID_REQUEST. Group resources (type 32): Kafka 4's group
//   configs (server/group-config-manager.ts; a bad value or unknown key is INVALID_CONFIG, as
//   Kafka 4), ALTER_CONFIGS on the group (GROUP_AUTHORIZATION_FAILED). Other types:
//   INVALID_REQUEST.
// * A key named twice in one resource, or a null value for anything but DELETE, is
//   INVALID_REQUEST for that resource (Kafka's preprocessing).
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

export const incrementalAlterConfigsHandler = defineHandler({
  apiKey: ApiKey.IncrementalAlterConfigs,
  minVersion: 0,
  maxVersion: 1,
  async handle(request, ctx) {
    const { adminManager, brokerConfigManager } = ctx.broker;
    const only = request.validateOnly;
    const changesOf = (r: (typeof request.resources)[number]) =>
      r.configs.map((c) => ({ name: c.name, operation: c.configOperation, value: c.value }));
    const check = (name: string, isTopic: boolean) => {
      const denial = configResourceDenial(ctx, AclOperation.ALTER_CONFIGS, isTopic, name);
      if (denial !== null) throw denial;
    };
    const responses = await alterResources(request.resources, ctx.broker.brokerId, {
      topic: (r) => {
        check(r.resourceName, true);
        return adminManager.alterTopicConfigs(r.resourceName, changesOf(r), only);
      },
      broker: (r) => {
        check(r.resourceName, false);
        return brokerConfigManager.alterBrokerConfigs(r.resourceName, changesOf(r), only);
      },
      group: (r) => {
        if (!authorize(ctx, AclOperation.ALTER_CONFIGS, ResourceType.GROUP, r.resourceName)) {
          throw new KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED);
        }
        const configs = ctx.broker.sharePartitionManager.groupConfigs;
        return configs.alter(r.resourceName, changesOf(r), only);
      },
    });
    return { throttleTimeMs: 0, responses };
  },
});
