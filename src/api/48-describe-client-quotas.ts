// DescribeClientQuotas: v0-1
//
// Version notes:
// * v1: flexible. The filter has at most one component per entity type ("user", "client-id"):
//   EXACT (a name), DEFAULT (`<default>`) or SPECIFIED (any name, defaults included, as Kafka
//   3.9's ZooKeeper mode matches them); `strict` leaves out entities with other parts. Entities
//   without a quota key are left out. Errors as Kafka's ZkAdminManager: a repeated or empty
//   entity type is INVALID_REQUEST, another type UNSUPPORTED_VERSION; DESCRIBE_CONFIGS on the
//   cluster is needed (CLUSTER_AUTHORIZATION_FAILED). An "ip" filter matches nothing (Quill has
//   no IP quotas).
import { type QuotaEntity, quotaEntityOf } from "../metadata/client-quota-store.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { ApiKey, type DescribeClientQuotasRequest } from "../protocol/generated/index.ts";
import { AclOperation } from "../security/authorized-operations.ts";
import { isQuotaType } from "../server/client-quota-manager.ts";
import { authorizeCluster } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

const MATCH_EXACT = 0;
const MATCH_DEFAULT = 1;
const MATCH_SPECIFIED = 2;

type Component = DescribeClientQuotasRequest["components"][number];

/** Per entity type, the name wanted: a name, null for `<default>`, "any" for any. */
type Want = { readonly name: string | null } | "any";

export const describeClientQuotasHandler = defineHandler({
  apiKey: ApiKey.DescribeClientQuotas,
  minVersion: 0,
  maxVersion: 1,
  async handle(request, ctx) {
    if (!authorizeCluster(ctx, AclOperation.DESCRIBE_CONFIGS)) {
      return failure(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.");
    }
    let filter: Map<string, Want>;
    try {
      filter = parseFilter(request.components);
    } catch (error) {
      if (!(error instanceof KafkaError)) throw error;
      return failure(error.code, error.message);
    }
    if (filter.has("ip"))
      return { throttleTimeMs: 0, errorCode: 0, errorMessage: null, entries: [] };
    const all = await ctx.broker.clientQuotaStore.loadAll();
    const entries = [];
    for (const [path, configs] of all) {
      const entity = quotaEntityOf(path);
      if (entity === null || !matches(entity, filter, request.strict)) continue;
      const values = Object.entries(configs)
        .filter(([key]) => isQuotaType(key))
        .map(([key, value]) => ({ key, value: Number(value) }));
      if (values.length > 0) entries.push({ entity: entityData(entity), values });
    }
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, errorMessage: null, entries };
  },
});

const failure = (errorCode: number, errorMessage: string) => ({
  throttleTimeMs: 0,
  errorCode,
  errorMessage,
  entries: null,
});

function parseFilter(components: readonly Component[]): Map<string, Want> {
  const filter = new Map<string, Want>();
  for (const c of components) {
    const type = c.entityType;
    if (type === "") {
      throw new KafkaError(
        ErrorCode.INVALID_REQUEST,
        "Unexpected empty filter component entity type",
      );
    }
    if (type !== "user" && type !== "client-id" && type !== "ip") {
      throw new KafkaError(
        ErrorCode.UNSUPPORTED_VERSION,
        `Custom entity type '${type}' not supported`,
      );
    }
    if (filter.has(type)) {
      const name = type === "client-id" ? "client" : type;
      throw new KafkaError(
        ErrorCode.INVALID_REQUEST,
        `Duplicate ${name} filter component entity type`,
      );
    }
    filter.set(type, want(c));
  }
  if (filter.has("ip") && filter.size > 1) {
    throw new KafkaError(
      ErrorCode.INVALID_REQUEST,
      "Invalid entity filter component combination, IP filter component should not be used " +
        "with user or clientId filter component.",
    );
  }
  return filter;
}

function want(c: Component): Want {
  if (c.matchType === MATCH_DEFAULT) return { name: null };
  if (c.matchType === MATCH_SPECIFIED) return "any";
  if (c.matchType === MATCH_EXACT && c.match !== null) return { name: c.match };
  throw new KafkaError(ErrorCode.INVALID_REQUEST, `Unexpected match type: ${c.matchType}`);
}

function matches(entity: QuotaEntity, filter: ReadonlyMap<string, Want>, strict: boolean) {
  const parts: [string, string | null | undefined][] = [
    ["user", entity.user],
    ["client-id", entity.clientId],
  ];
  return parts.every(([type, name]) => {
    const w = filter.get(type);
    if (w === undefined) return name === undefined || !strict;
    if (name === undefined) return false;
    return w === "any" || w.name === name;
  });
}

function entityData(entity: QuotaEntity) {
  const data: { entityType: string; entityName: string | null }[] = [];
  if (entity.user !== undefined) data.push({ entityType: "user", entityName: entity.user });
  if (entity.clientId !== undefined) {
    data.push({ entityType: "client-id", entityName: entity.clientId });
  }
  return data;
}
