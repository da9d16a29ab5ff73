// AlterClientQuotas: v0-1
//
// Version notes:
// * v1: flexible. Each entry names an entity (user and/or client-id, a null name for
//   `<default>`) and sets or removes quota keys; the entity's config znode (or the embedded
//   store) is rewritten, other keys of it (SCRAM credentials) kept, and every broker told.
//   Errors as Kafka 3.9's ZkAdminManager: INVALID_REQUEST for an empty entity, an unknown entity
//   type or key, an empty name, or a byte rate that is not a whole number; ALTER_CONFIGS on the
//   cluster is needed (CLUSTER_AUTHORIZATION_FAILED on every entry otherwise).
// * Differences: IP entities (connection_creation_rate) are refused with INVALID_REQUEST, and
//   a value <= 0 too (Kafka's ZooKeeper mode stores it; a zero rate would throttle forever).
import {
  type EntityConfigs,
  type QuotaEntity,
  quotaEntityPath,
} from "../metadata/client-quota-store.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { type AlterClientQuotasRequest, ApiKey } from "../protocol/generated/index.ts";
import { AclOperation } from "../security/authorized-operations.ts";
import { isQuotaType, QUOTA_KEY_IS_LONG } from "../server/client-quota-manager.ts";
import { authorizeCluster } from "./authorize.ts";
import { defineHandler, type RequestContext } from "./handler.ts";

type Entry = AlterClientQuotasRequest["entries"][number];

export const alterClientQuotasHandler = defineHandler({
  apiKey: ApiKey.AlterClientQuotas,
  minVersion: 0,
  maxVersion: 1,
  async handle(request, ctx) {
    const allowed = authorizeCluster(ctx, AclOperation.ALTER_CONFIGS);
    const entries = [];
    for (const entry of request.entries) {
      let errorCode: number = ErrorCode.CLUSTER_AUTHORIZATION_FAILED;
      let errorMessage: string | null = "Cluster authorization failed.";
      if (allowed) {
        try {
          await alterEntity(entry, request.validateOnly, ctx);
          errorCode = ErrorCode.NONE;
          errorMessage = null;
        } catch (error) {
          if (!(error instanceof KafkaError)) throw error;
          errorCode = error.code;
          errorMessage = error.message;
        }
      }
      entries.push({ errorCode, errorMessage, entity: entry.entity });
    }
    return { throttleTimeMs: 0, entries };
  },
});

const invalid = (message: string) => new KafkaError(ErrorCode.INVALID_REQUEST, message);

async function alterEntity(entry: Entry, validateOnly: boolean, ctx: RequestContext) {
  const path = quotaEntityPath(parseEntity(entry.entity));
  if (path === null) throw invalid("Invalid empty client quota entity");
  const store = ctx.broker.clientQuotaStore;
  const configs: Record<string, string> = { ...(await store.read(path)) };
  for (const op of entry.ops) {
    if (!isQuotaType(op.key)) throw invalid(`Invalid configuration key ${op.key}`);
    if (op.remove) {
      delete configs[op.key];
    } else {
      configs[op.key] = quotaValue(op.key, op.value);
    }
  }
  if (validateOnly) return;
  await store.write(path, configs);
  ctx.broker.clientQuotas.update(path, configs as EntityConfigs);
}

/** Kafka's parseAndSanitizeQuotaEntity: user and/or client-id, null for `<default>`. */
function parseEntity(entity: Entry["entity"]): QuotaEntity {
  let user: string | null | undefined;
  let clientId: string | null | undefined;
  for (const { entityType, entityName } of entity) {
    if (entityType === "user") user = entityName;
    else if (entityType === "client-id") clientId = entityName;
    else if (entityType === "ip") throw invalid("IP quotas are not supported by Quill");
    else throw invalid(`Unhandled client quota entity type: ${entityType}`);
    if (entityName === "") throw invalid(`Empty ${entityType} not supported`);
  }
  return { user, clientId };
}

/** The value as Kafka stores it: a whole number for the byte rates, a Java double otherwise. */
function quotaValue(key: string, value: number): string {
  if (!Number.isFinite(value) || value <= 0) {
    throw invalid(`Invalid value ${value} for configuration ${key}: must be positive`);
  }
  if (!QUOTA_KEY_IS_LONG[key as keyof typeof QUOTA_KEY_IS_LONG]) {
    return Number.isInteger(value) ? value.toFixed(1) : String(value);
  }
  const epsilon = 1e-6;
  const whole = Math.floor(value + epsilon);
  if (Math.abs(whole - value) > epsilon) {
    throw invalid(`Configuration ${key} must be a LONG value`);
  }
  return String(whole);
}
