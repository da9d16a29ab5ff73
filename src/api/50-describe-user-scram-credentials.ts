// DescribeUserScramCredentials: v0
//
// Version notes:
// * v0 only. A null user list describes every user with a credential; a named user without
//   one is RESOURCE_NOT_FOUND, a name asked twice DUPLICATE_RESOURCE, as Kafka answers.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation } from "../security/authorized-operations.ts";
import { SCRAM_MECHANISM_IDS } from "../security/scram.ts";
import { authorizeCluster } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

/** Most users one request may describe. */
const USERS_MAX = 10_000;

export const describeUserScramCredentialsHandler = defineHandler({
  apiKey: ApiKey.DescribeUserScramCredentials,
  minVersion: 0,
  maxVersion: 0,
  async handle(request, ctx) {
    // DESCRIBE on the cluster, as Kafka.
    if (!authorizeCluster(ctx, AclOperation.DESCRIBE)) {
      const errorMessage = "Cluster authorization failed.";
      const errorCode = ErrorCode.CLUSTER_AUTHORIZATION_FAILED;
      return { throttleTimeMs: 0, errorCode, errorMessage, results: [] };
    }
    const store = ctx.broker.saslAuthenticator?.credentials;
    const names = request.users?.map((u) => u.name) ?? (await store?.users()) ?? [];
    const results = await Promise.all(
      names.slice(0, USERS_MAX).map(async (user, i) => {
        if (names.indexOf(user) !== i) {
          return failure(
            user,
            ErrorCode.DUPLICATE_RESOURCE,
            `Cannot describe SCRAM credentials ` +
              `for the same user twice in a single request: ${user}`,
          );
        }
        const infos = (await store?.describe(user)) ?? [];
        // Every user: only those with a credential (a user znode may hold only quotas).
        if (infos.length === 0 && request.users === null) return null;
        if (infos.length === 0) {
          return failure(
            user,
            ErrorCode.RESOURCE_NOT_FOUND,
            `Attempt to describe a user credential that does not exist: ${user}`,
          );
        }
        const credentialInfos = infos.map((c) => ({
          mechanism: SCRAM_MECHANISM_IDS[c.mechanism],
          iterations: c.iterations,
        }));
        return { user, errorCode: ErrorCode.NONE, errorMessage: null, credentialInfos };
      }),
    );
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      results: results.filter((r) => r !== null),
    };
  },
});

const failure = (user: string, errorCode: number, errorMessage: string) => ({
  user,
  errorCode,
  errorMessage,
  credentialInfos: [],
});
