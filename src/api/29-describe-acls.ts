// DescribeAcls: v0-3
//
// Version notes:
// * v0 describes literal patterns only (a filter asking for another is INVALID_REQUEST); v1
//   adds pattern types (LITERAL, PREFIXED, ANY, MATCH); v2+ are flexible.
// * Without an authorizer SECURITY_DISABLED; DESCRIBE on the cluster is required
//   (CLUSTER_AUTHORIZATION_FAILED), as Kafka's AclApis. A filter with an UNKNOWN element
//   (an unknown resource type, pattern type, operation or permission code) is INVALID_REQUEST:
//   Kafka 3.9 fails to parse such a request and closes the connection; the API's own error
//   tells the client more.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { type AclBinding, patternKey } from "../security/acl.ts";
import { AclOperation, aclRequestRefusal, readFilter } from "./acl-requests.ts";
import { defineHandler } from "./handler.ts";

export const describeAclsHandler = defineHandler({
  apiKey: ApiKey.DescribeAcls,
  minVersion: 0,
  maxVersion: 3,
  handle(request, ctx) {
    const refusal = aclRequestRefusal(ctx, AclOperation.DESCRIBE);
    if (refusal !== null) return { throttleTimeMs: 0, ...refusal, resources: [] };
    const filter = readFilter(request, ctx.apiVersion);
    if (typeof filter === "string") {
      return {
        throttleTimeMs: 0,
        errorCode: ErrorCode.INVALID_REQUEST,
        errorMessage: filter,
        resources: [],
      };
    }
    const bindings = ctx.broker.authorizer!.describe(filter);
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      resources: byPattern(bindings),
    };
  },
});

function byPattern(bindings: readonly AclBinding[]) {
  const resources = new Map<string, ReturnType<typeof resourceOf>>();
  for (const { pattern, entry } of bindings) {
    const k = patternKey(pattern);
    const resource = resources.get(k) ?? resourceOf(pattern);
    resource.acls.push({
      principal: entry.principal,
      host: entry.host,
      operation: entry.operation,
      permissionType: entry.permissionType,
    });
    resources.set(k, resource);
  }
  return [...resources.values()];
}

const resourceOf = (pattern: AclBinding["pattern"]) => ({
  resourceType: pattern.resourceType as number,
  resourceName: pattern.name,
  patternType: pattern.patternType as number,
  acls: [] as { principal: string; host: string; operation: number; permissionType: number }[],
});
