// DeleteAcls: v0-3
//
// Version notes:
// * v0 filters literal patterns only; v1 adds pattern types; v2+ are flexible.
// * Without an authorizer every filter is SECURITY_DISABLED; ALTER on the cluster is required
//   (CLUSTER_AUTHORIZATION_FAILED). A filter with an UNKNOWN element is INVALID_REQUEST for that
//   filter; the others are applied. Each filter answers the bindings it removed.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import type { AclBindingFilter } from "../security/acl.ts";
import { AclOperation, aclRequestRefusal, readFilter, wireBinding } from "./acl-requests.ts";
import { defineHandler } from "./handler.ts";

/** Most filters one request may carry. */
const FILTERS_MAX = 10_000;

export const deleteAclsHandler = defineHandler({
  apiKey: ApiKey.DeleteAcls,
  minVersion: 0,
  maxVersion: 3,
  async handle(request, ctx) {
    const refusal = aclRequestRefusal(ctx, AclOperation.ALTER);
    if (refusal !== null) {
      const filterResults = request.filters.map(() => ({ ...refusal, matchingAcls: [] }));
      return { throttleTimeMs: 0, filterResults };
    }
    const read = request.filters.map((f, i) =>
      i >= FILTERS_MAX
        ? `at most ${FILTERS_MAX} filters per request`
        : readFilter(f, ctx.apiVersion),
    );
    const valid = read.filter((f): f is AclBindingFilter => typeof f !== "string");
    let deleted: ReturnType<typeof wireBinding>[][] = [];
    let failure: string | null = null;
    try {
      deleted = (await ctx.broker.authorizer!.delete(valid)).map((bs) => bs.map(wireBinding));
    } catch (error) {
      failure = `Failed to delete ACLs: ${(error as Error).message}`;
    }
    let next = 0;
    const filterResults = read.map((f) => {
      const message = typeof f === "string" ? f : failure;
      if (message !== null) {
        if (typeof f !== "string") next++;
        return { errorCode: ErrorCode.INVALID_REQUEST, errorMessage: message, matchingAcls: [] };
      }
      const matchingAcls = deleted[next++]!.map((b) => ({
        errorCode: ErrorCode.NONE,
        errorMessage: null,
        ...b,
      }));
      return { errorCode: ErrorCode.NONE, errorMessage: null, matchingAcls };
    });
    return { throttleTimeMs: 0, filterResults };
  },
});
