import { ErrorCode } from "../protocol/errors.ts";
import {
  type AclBinding,
  type AclBindingFilter,
  ANY_CODE,
  invalidFilterReason,
  PATTERN_LITERAL,
} from "../security/acl.ts";
import { AclOperation } from "../security/authorized-operations.ts";
import { authorizeCluster } from "./authorize.ts";
import type { RequestContext } from "./handler.ts";

/** What CreateAcls, DescribeAcls and DeleteAcls share: the gate and the filter's reading. */

export const NO_AUTHORIZER_MESSAGE = "No Authorizer is configured.";

/**
 * The error that refuses the whole request, or null: SECURITY_DISABLED without an authorizer,
 * CLUSTER_AUTHORIZATION_FAILED without `operation` on the cluster (DESCRIBE to list ACLs,
 * ALTER to change them), as Kafka's AclApis.
 */
export function aclRequestRefusal(
  ctx: RequestContext,
  operation: AclOperation,
): { errorCode: number; errorMessage: string } | null {
  if (ctx.broker.authorizer === null) {
    return { errorCode: ErrorCode.SECURITY_DISABLED, errorMessage: NO_AUTHORIZER_MESSAGE };
  }
  if (!authorizeCluster(ctx, operation)) {
    return {
      errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
      errorMessage: "Cluster authorization failed.",
    };
  }
  return null;
}

/** A wire filter as the authorizer reads it; a string reason when Kafka would refuse it. */
export function readFilter(
  f: {
    resourceTypeFilter: number;
    resourceNameFilter: string | null;
    patternTypeFilter: number;
    principalFilter: string | null;
    hostFilter: string | null;
    operation: number;
    permissionType: number;
  },
  apiVersion: number,
): AclBindingFilter | string {
  // Version 0 knows literal patterns only; ANY there means LITERAL (Kafka's normalisation).
  const v0Pattern = f.patternTypeFilter === ANY_CODE ? PATTERN_LITERAL : f.patternTypeFilter;
  const patternType = apiVersion === 0 ? v0Pattern : f.patternTypeFilter;
  if (apiVersion === 0 && patternType !== PATTERN_LITERAL) {
    return "Version 0 only supports literal resource pattern types";
  }
  const filter: AclBindingFilter = {
    resourceType: f.resourceTypeFilter,
    name: f.resourceNameFilter,
    patternType,
    principal: f.principalFilter,
    host: f.hostFilter,
    operation: f.operation,
    permissionType: f.permissionType,
  };
  return invalidFilterReason(filter) ?? filter;
}

/** A binding in the wire's flat shape (DescribeAcls groups these by pattern). */
export function wireBinding({ pattern, entry }: AclBinding) {
  return {
    resourceType: pattern.resourceType,
    resourceName: pattern.name,
    patternType: pattern.patternType,
    principal: entry.principal,
    host: entry.host,
    operation: entry.operation,
    permissionType: entry.permissionType,
  };
}

export { AclOperation };
