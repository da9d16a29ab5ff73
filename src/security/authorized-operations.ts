import { assert } from "../util/assert.ts";

/**
 * Authorized operations (KIP-430): Metadata, DescribeCluster and DescribeGroups may ask which
 * operations the caller may perform on each resource they describe, answered as a 32-bit field
 * with bit `1 << code` set per allowed AclOperation. Kafka computes it in one place
 * (AuthHelper.authorizedOperations): every operation that applies to the resource type, filtered
 * by the authorizer when one is configured. This file is that place for Quill; the handlers
 * pass the request's authorizer (null while none is configured).
 */

/** Kafka's AclOperation codes (org.apache.kafka.common.acl.AclOperation). */
export const AclOperation = {
  READ: 3,
  WRITE: 4,
  CREATE: 5,
  DELETE: 6,
  ALTER: 7,
  DESCRIBE: 8,
  CLUSTER_ACTION: 9,
  DESCRIBE_CONFIGS: 10,
  ALTER_CONFIGS: 11,
  IDEMPOTENT_WRITE: 12,
  CREATE_TOKENS: 13,
  DESCRIBE_TOKENS: 14,
} as const;
export type AclOperation = (typeof AclOperation)[keyof typeof AclOperation];

/** Kafka's concrete ResourceType codes (org.apache.kafka.common.resource.ResourceType). */
export const ResourceType = {
  TOPIC: 2,
  GROUP: 3,
  CLUSTER: 4,
  TRANSACTIONAL_ID: 5,
  DELEGATION_TOKEN: 6,
  USER: 7,
} as const;
export type ResourceType = (typeof ResourceType)[keyof typeof ResourceType];

/** The one cluster resource's name, as ACLs on the cluster name it. */
export const CLUSTER_RESOURCE_NAME = "kafka-cluster";

/** The schemas' default for an authorized-operations field: the request did not ask. */
export const AUTHORIZED_OPERATIONS_NOT_REQUESTED = -2147483648;

const {
  READ,
  WRITE,
  CREATE,
  DELETE,
  ALTER,
  DESCRIBE,
  CLUSTER_ACTION,
  DESCRIBE_CONFIGS,
  ALTER_CONFIGS,
  IDEMPOTENT_WRITE,
  CREATE_TOKENS,
  DESCRIBE_TOKENS,
} = AclOperation;

/** The operations that apply to each resource type (Kafka's AclEntry.supportedOperations). */
const SUPPORTED_OPERATIONS: Readonly<Record<ResourceType, readonly AclOperation[]>> = {
  [ResourceType.TOPIC]: [
    READ,
    WRITE,
    CREATE,
    DELETE,
    ALTER,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    ALTER_CONFIGS,
  ],
  [ResourceType.GROUP]: [READ, DELETE, DESCRIBE],
  [ResourceType.CLUSTER]: [
    CREATE,
    ALTER,
    DESCRIBE,
    CLUSTER_ACTION,
    DESCRIBE_CONFIGS,
    ALTER_CONFIGS,
    IDEMPOTENT_WRITE,
  ],
  [ResourceType.TRANSACTIONAL_ID]: [WRITE, DESCRIBE],
  [ResourceType.DELEGATION_TOKEN]: [DESCRIBE],
  [ResourceType.USER]: [CREATE_TOKENS, DESCRIBE_TOKENS],
};

/** One question to an authorizer: may the request's principal do `operation` on the resource? */
export interface AuthorizationAction {
  readonly operation: AclOperation;
  readonly resourceType: ResourceType;
  readonly resourceName: string;
}

/**
 * The authorizer as a handler sees it: already bound to one request's principal and client
 * address, answering a batch of actions (Kafka's Authorizer.authorize), one boolean per action.
 */
export interface RequestAuthorizer {
  authorize(actions: readonly AuthorizationAction[]): readonly boolean[];
}

export function supportedOperations(resourceType: ResourceType): readonly AclOperation[] {
  return SUPPORTED_OPERATIONS[resourceType];
}

/**
 * The authorized-operations field for one resource: without an authorizer every operation that
 * applies to its type (what Kafka 3.9 answers with no authorizer configured), else those the
 * authorizer allows.
 */
export function authorizedOperations(
  resourceType: ResourceType,
  resourceName: string,
  authorizer: RequestAuthorizer | null = null,
): number {
  const operations = supportedOperations(resourceType);
  if (authorizer === null) return toBitField(operations);
  const actions = operations.map((operation) => ({ operation, resourceType, resourceName }));
  const allowed = authorizer.authorize(actions);
  assert(allowed.length === actions.length, "the authorizer must answer every action");
  return toBitField(operations.filter((_, i) => allowed[i]));
}

/**
 * The cluster's field: Kafka answers 0 to a caller that may not even DESCRIBE the cluster, so
 * it learns nothing about the other operations.
 */
export function clusterAuthorizedOperations(authorizer: RequestAuthorizer | null = null): number {
  const bits = authorizedOperations(ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME, authorizer);
  return (bits & (1 << DESCRIBE)) === 0 ? 0 : bits;
}

/** Kafka's Utils.to32BitField. */
function toBitField(operations: readonly AclOperation[]): number {
  let bits = 0;
  for (const op of operations) bits |= 1 << op;
  return bits;
}
