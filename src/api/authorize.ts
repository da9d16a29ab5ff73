import type { ConnectionContext } from "../network/request-handler.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { apiSpec } from "../protocol/generated/index.ts";
import {
  type AclOperation,
  CLUSTER_RESOURCE_NAME,
  type RequestAuthorizer,
  ResourceType,
} from "../security/authorized-operations.ts";
import type { RequestContext } from "./handler.ts";

/**
 * The handlers' side of authorization, as Kafka's AuthHelper: each handler asks about the
 * resources its request touches and answers the refused ones with Kafka's error code. Without
 * an authorizer (`authorizer.class.name` blank) everything is allowed, as in Kafka.
 */

/** The client's address as ACL hosts name it (an IPv4-mapped IPv6 address as IPv4). */
export function clientHost(conn: ConnectionContext): string {
  const address = conn.remoteAddress;
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}

/**
 * One decision, logged as Kafka's authorizer logs it: a denial at INFO unless `logIfDenied` is
 * false (a listing filtered by what the principal may see), a grant at DEBUG.
 */
export function authorize(
  ctx: RequestContext,
  operation: AclOperation,
  resourceType: ResourceType,
  name: string,
  logIfDenied = true,
): boolean {
  const authorizer = ctx.broker.authorizer;
  if (authorizer === null) return true;
  const principal = ctx.conn.principal;
  const host = clientHost(ctx.conn);
  const allowed = authorizer.authorize(principal, host, operation, resourceType, name);
  const api = apiSpec(ctx.header.requestApiKey)?.name ?? String(ctx.header.requestApiKey);
  authorizer.audit({ principal, host, operation, resourceType, name, api, allowed, logIfDenied });
  return allowed;
}

export const authorizeCluster = (
  ctx: RequestContext,
  operation: AclOperation,
  logIfDenied = true,
): boolean => authorize(ctx, operation, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME, logIfDenied);

/** The names the principal may do `operation` on (Kafka's filterByAuthorized). */
export function authorizedNames(
  ctx: RequestContext,
  operation: AclOperation,
  resourceType: ResourceType,
  names: Iterable<string>,
): Set<string> {
  const allowed = new Set<string>();
  for (const name of names) if (authorize(ctx, operation, resourceType, name)) allowed.add(name);
  return allowed;
}

/** Kafka's authorizeByResourceType: the operation on at least one resource of the type. */
export function authorizeAnyOfType(
  ctx: RequestContext,
  operation: AclOperation,
  resourceType: ResourceType,
): boolean {
  const authorizer = ctx.broker.authorizer;
  if (authorizer === null) return true;
  const host = clientHost(ctx.conn);
  return authorizer.authorizeByResourceType(ctx.conn.principal, host, operation, resourceType);
}

/** For authorized-operations bit fields: null without an authorizer. */
export function requestAuthorizer(ctx: RequestContext): RequestAuthorizer | null {
  const authorizer = ctx.broker.authorizer;
  return authorizer === null
    ? null
    : authorizer.forRequest(ctx.conn.principal, clientHost(ctx.conn));
}

/**
 * A config resource's refusal, or null: ALTER_CONFIGS or DESCRIBE_CONFIGS on the topic
 * (TOPIC_AUTHORIZATION_FAILED) or, for a broker or broker logger, on the cluster
 * (CLUSTER_AUTHORIZATION_FAILED), as Kafka's ConfigHelper and ZkAdminManager check.
 */
export function configResourceDenial(
  ctx: RequestContext,
  operation: AclOperation,
  isTopic: boolean,
  name: string,
): KafkaError | null {
  if (isTopic) {
    return authorize(ctx, operation, ResourceType.TOPIC, name)
      ? null
      : new KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.");
  }
  return authorizeCluster(ctx, operation)
    ? null
    : new KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.");
}
