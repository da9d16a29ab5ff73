// IncrementalAlterConfigs: v0-1
//
// Version notes:
// * v0 (KIP-339): per-key operations SET (0), DELETE (1), APPEND (2) and SUBTRACT (3) on the
//   topic's current overrides. APPEND and SUBTRACT apply to list keys only (cleanup.policy);
//   on any other key they are INVALID_REQUEST. v1: flexible.
// * Topic resources (type 2): the merged overrides are checked, persisted and handed to the
//   running logs. Broker resources (type 4): INVALID_REQUEST, because Quill's broker config is
//   static; other resource types: INVALID_REQUEST, as in Kafka.
// * A key named twice in one resource, or a null value for anything but DELETE, is
//   INVALID_REQUEST for that resource (Kafka's preprocessing).
// * ValidateOnly checks everything and changes nothing.
// * Not implemented: alter-config policies, ACLs.
import { ApiKey } from "../protocol/generated/index.ts";
import { alterResources } from "./config-resource.ts";
import { defineHandler } from "./handler.ts";

export const incrementalAlterConfigsHandler = defineHandler({
  apiKey: ApiKey.IncrementalAlterConfigs,
  minVersion: 0,
  maxVersion: 1,
  async handle(request, ctx) {
    const admin = ctx.broker.adminManager;
    const responses = await alterResources(request.resources, ctx.broker.brokerId, (r) =>
      admin.alterTopicConfigs(
        r.resourceName,
        r.configs.map((c) => ({ name: c.name, operation: c.configOperation, value: c.value })),
        request.validateOnly,
      ),
    );
    return { throttleTimeMs: 0, responses };
  },
});
