import { AclOperation, ResourceType } from "./authorized-operations.ts";

/**
 * Kafka's ACL model: a binding is a resource pattern (type, name, LITERAL or PREFIXED) and an
 * entry (principal, host, operation, ALLOW or DENY). The wire codes are Kafka's
 * (org.apache.kafka.common.acl / .resource); the names are the ones Kafka's ZooKeeper authorizer
 * writes into znode paths and JSON, so ACLs made by Kafka's brokers or tools read back here.
 */

/** Codes of the filter-only values, beside the concrete ones of authorized-operations.ts. */
export const UNKNOWN_CODE = 0;
export const ANY_CODE = 1;
export const OPERATION_ALL = 2;
/** PatternType.MATCH: a filter matching every pattern that would apply to its name. */
export const PATTERN_MATCH = 2;
export const PATTERN_LITERAL = 3;
export const PATTERN_PREFIXED = 4;
export const PERMISSION_DENY = 2;
export const PERMISSION_ALLOW = 3;

export const WILDCARD_RESOURCE = "*";
export const WILDCARD_PRINCIPAL = "User:*";
export const WILDCARD_HOST = "*";

export type PatternType = typeof PATTERN_LITERAL | typeof PATTERN_PREFIXED;

export interface ResourcePattern {
  readonly resourceType: ResourceType;
  readonly name: string;
  readonly patternType: PatternType;
}

export interface AccessControlEntry {
  readonly principal: string;
  readonly host: string;
  /** An AclOperation code or OPERATION_ALL. */
  readonly operation: number;
  readonly permissionType: typeof PERMISSION_DENY | typeof PERMISSION_ALLOW;
}

export interface AclBinding {
  readonly pattern: ResourcePattern;
  readonly entry: AccessControlEntry;
}

/** What DescribeAcls and DeleteAcls carry: codes may be ANY or MATCH, strings may be null. */
export interface AclBindingFilter {
  readonly resourceType: number;
  readonly name: string | null;
  readonly patternType: number;
  readonly principal: string | null;
  readonly host: string | null;
  readonly operation: number;
  readonly permissionType: number;
}

/** The ZooKeeper path segment and JSON name of each resource type (SecurityUtils's names). */
export const RESOURCE_TYPE_NAMES: Readonly<Record<ResourceType, string>> = {
  [ResourceType.TOPIC]: "Topic",
  [ResourceType.GROUP]: "Group",
  [ResourceType.CLUSTER]: "Cluster",
  [ResourceType.TRANSACTIONAL_ID]: "TransactionalId",
  [ResourceType.DELEGATION_TOKEN]: "DelegationToken",
  [ResourceType.USER]: "User",
};

const OPERATION_NAMES: Readonly<Record<number, string>> = {
  [OPERATION_ALL]: "All",
  [AclOperation.READ]: "Read",
  [AclOperation.WRITE]: "Write",
  [AclOperation.CREATE]: "Create",
  [AclOperation.DELETE]: "Delete",
  [AclOperation.ALTER]: "Alter",
  [AclOperation.DESCRIBE]: "Describe",
  [AclOperation.CLUSTER_ACTION]: "ClusterAction",
  [AclOperation.DESCRIBE_CONFIGS]: "DescribeConfigs",
  [AclOperation.ALTER_CONFIGS]: "AlterConfigs",
  [AclOperation.IDEMPOTENT_WRITE]: "IdempotentWrite",
  [AclOperation.CREATE_TOKENS]: "CreateTokens",
  [AclOperation.DESCRIBE_TOKENS]: "DescribeTokens",
};

/** Case- and underscore-insensitive lookup, as Kafka's fromString accepts "READ" and "Read". */
const fold = (s: string) => s.replaceAll("_", "").toLowerCase();
const OPERATION_BY_NAME = new Map(
  Object.entries(OPERATION_NAMES).map(([code, name]) => [fold(name), Number(code)]),
);
const RESOURCE_TYPE_BY_NAME = new Map(
  Object.entries(RESOURCE_TYPE_NAMES).map(([code, n]) => [fold(n), Number(code) as ResourceType]),
);

export const operationName = (code: number): string => OPERATION_NAMES[code] ?? "Unknown";
export const operationFromName = (name: string): number | undefined =>
  OPERATION_BY_NAME.get(fold(name));
export const resourceTypeFromName = (name: string): ResourceType | undefined =>
  RESOURCE_TYPE_BY_NAME.get(fold(name));
export const permissionName = (code: number): string =>
  code === PERMISSION_ALLOW ? "Allow" : "Deny";

export const isConcreteResourceType = (code: number): code is ResourceType =>
  code >= ResourceType.TOPIC && code <= ResourceType.USER;
export const isConcreteOperation = (code: number): boolean =>
  code === OPERATION_ALL || (code >= AclOperation.READ && code <= AclOperation.DESCRIBE_TOKENS);
export const isConcretePatternType = (code: number): code is PatternType =>
  code === PATTERN_LITERAL || code === PATTERN_PREFIXED;
export const isConcretePermission = (code: number) =>
  code === PERMISSION_DENY || code === PERMISSION_ALLOW;

/** `User:alice` -> true; a principal without a type is not one Kafka can parse. */
export const isPrincipal = (s: string): boolean => /^[^:]+:.+$/.test(s);

/** One key per pattern, for maps. */
export const patternKey = (p: ResourcePattern): string =>
  `${p.resourceType}:${p.patternType}:${p.name}`;

export function sameEntry(a: AccessControlEntry, b: AccessControlEntry): boolean {
  return (
    a.principal === b.principal &&
    a.host === b.host &&
    a.operation === b.operation &&
    a.permissionType === b.permissionType
  );
}

/**
 * Why a binding cannot be created, in Kafka's words, or null when it can: no UNKNOWN or ANY
 * element, a non-empty name, `kafka-cluster` as the only cluster name, a typed principal.
 */
export function invalidBindingReason(b: {
  resourceType: number;
  resourceName: string;
  resourcePatternType: number;
  principal: string;
  host: string;
  operation: number;
  permissionType: number;
}): string | null {
  const concrete =
    isConcreteResourceType(b.resourceType) &&
    isConcretePatternType(b.resourcePatternType) &&
    isConcreteOperation(b.operation) &&
    isConcretePermission(b.permissionType);
  if (!concrete) return "Invalid ACL creation: ACL binding contains unknown or ANY elements";
  if (b.resourceName === "") return "Invalid empty resource name";
  if (b.resourceType === ResourceType.CLUSTER && b.resourceName !== "kafka-cluster") {
    return "The only valid name for the CLUSTER resource is kafka-cluster";
  }
  if (!isPrincipal(b.principal)) return `Could not parse principal from \`${b.principal}\``;
  if (b.host === "") return "Invalid empty host";
  return null;
}

/** Why a filter is refused (an UNKNOWN element), or null. */
export function invalidFilterReason(f: AclBindingFilter): string | null {
  const known =
    (f.resourceType === ANY_CODE || isConcreteResourceType(f.resourceType)) &&
    (f.patternType === ANY_CODE ||
      f.patternType === PATTERN_MATCH ||
      isConcretePatternType(f.patternType)) &&
    (f.operation === ANY_CODE || isConcreteOperation(f.operation)) &&
    (f.permissionType === ANY_CODE || isConcretePermission(f.permissionType));
  return known ? null : "The filter must not contain UNKNOWN elements";
}

/** Kafka's ResourcePatternFilter.matches. */
export function filterMatchesPattern(f: AclBindingFilter, p: ResourcePattern): boolean {
  if (f.resourceType !== ANY_CODE && f.resourceType !== p.resourceType) return false;
  if (f.patternType !== ANY_CODE && f.patternType !== PATTERN_MATCH) {
    if (f.patternType !== p.patternType) return false;
  }
  if (f.name === null) return true;
  if (f.patternType !== PATTERN_MATCH) return f.name === p.name;
  if (p.patternType === PATTERN_LITERAL) return f.name === p.name || p.name === WILDCARD_RESOURCE;
  return f.name.startsWith(p.name);
}

/** Kafka's AccessControlEntryFilter.matches. */
export function filterMatchesEntry(f: AclBindingFilter, e: AccessControlEntry): boolean {
  return (
    (f.principal === null || f.principal === e.principal) &&
    (f.host === null || f.host === e.host) &&
    (f.operation === ANY_CODE || f.operation === e.operation) &&
    (f.permissionType === ANY_CODE || f.permissionType === e.permissionType)
  );
}
