// CreateAcls: v0-3
//
// Version notes:
// * v0 creates literal ACLs only (the pattern type is not on the wire); v1 adds PREFIXED; v2+
//   are flexible.
// * Without an authorizer every creation is SECURITY_DISABLED; ALTER on the cluster is required
//   (CLUSTER_AUTHORIZATION_FAILED). A binding with an UNKNOWN or ANY element, an empty name, a
//   cluster not named kafka-cluster or a principal without a type is INVALID_REQUEST with
//   Kafka's message; the valid ones of the request are created all the same.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import {
  type AclBinding,
  invalidBindingReason,
  type PatternType,
  PERMISSION_ALLOW,
  PERMISSION_DENY,
} from "../security/acl.ts";
import type { ResourceType } from "../security/authorized-operations.ts";
import { AclOperation, aclRequestRefusal } from "./acl-requests.ts";
import { defineHandler } from "./handler.ts";

/** Most creations one request may carry. */
const CREATIONS_MAX = 10_000;

export const createAclsHandler = defineHandler({
  apiKey: ApiKey.CreateAcls,
  minVersion: 0,
  maxVersion: 3,
  async handle(request, ctx) {
    const refusal = aclRequestRefusal(ctx, AclOperation.ALTER);
    if (refusal !== null) {
      return { throttleTimeMs: 0, results: request.creations.map(() => refusal) };
    }
    const results = request.creations.map((c, i) => {
      if (i >= CREATIONS_MAX) return `at most ${CREATIONS_MAX} ACLs per request`;
      return invalidBindingReason(c);
    });
    const valid: AclBinding[] = request.creations.flatMap((c, i) =>
      results[i] !== null
        ? []
        : [
            {
              pattern: {
                resourceType: c.resourceType as ResourceType,
                name: c.resourceName,
                patternType: c.resourcePatternType as PatternType,
              },
              entry: {
                principal: c.principal,
                host: c.host,
                operation: c.operation,
                permissionType:
                  c.permissionType === PERMISSION_ALLOW ? PERMISSION_ALLOW : PERMISSION_DENY,
              },
            },
          ],
    );
    let failure: string | null = null;
    try {
      await ctx.broker.authorizer!.create(valid);
    } catch (error) {
      failure = `Failed to create ACLs: ${(error as Error).message}`;
    }
    return {
      throttleTimeMs: 0,
      results: results.map((reason) => {
        const message = reason ?? failure;
        if (message === null) return { errorCode: ErrorCode.NONE, errorMessage: null };
        return { errorCode: ErrorCode.INVALID_REQUEST, errorMessage: message };
      }),
    };
  },
});
