// AlterUserScramCredentials: v0
//
// Version notes:
// * v0 only. Upsertions carry the salted password (never the password), from which the stored
//   and server keys are derived and kept in Kafka's form (ZooKeeper's /config/users/<user> in a
//   cluster, the local credential file embedded). Errors as Kafka's: an unknown mechanism is
//   UNSUPPORTED_SASL_MECHANISM, iterations outside 4096..16384 or an empty name
//   UNACCEPTABLE_CREDENTIAL, deleting what does not exist RESOURCE_NOT_FOUND, a user named twice
//   for one mechanism DUPLICATE_RESOURCE. Without an authorizer anyone may call it, as in Kafka.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation } from "../security/authorized-operations.ts";
import {
  credentialFromSalted,
  SCRAM_MAX_ITERATIONS,
  SCRAM_MECHANISM_IDS,
  SCRAM_MIN_ITERATIONS,
  type ScramMechanism,
} from "../security/scram.ts";
import { authorizeCluster } from "./authorize.ts";
import { defineHandler } from "./handler.ts";

const BY_ID = new Map(
  Object.entries(SCRAM_MECHANISM_IDS).map(([m, id]) => [id, m as ScramMechanism]),
);

type Result = { user: string; errorCode: number; errorMessage: string | null };

export const alterUserScramCredentialsHandler = defineHandler({
  apiKey: ApiKey.AlterUserScramCredentials,
  minVersion: 0,
  maxVersion: 0,
  async handle(request, ctx) {
    const store = ctx.broker.saslAuthenticator?.credentials;
    const all = [
      ...request.deletions.map((d) => ({ ...d, upsert: null })),
      ...request.upsertions.map((u) => ({ ...u, upsert: u })),
    ];
    // ALTER on the cluster, as Kafka: every change is refused otherwise.
    if (!authorizeCluster(ctx, AclOperation.ALTER)) {
      const errorCode = ErrorCode.CLUSTER_AUTHORIZATION_FAILED;
      const errorMessage = "Cluster authorization failed.";
      return {
        throttleTimeMs: 0,
        results: all.map((c) => ({ user: c.name, errorCode, errorMessage })),
      };
    }
    const seen = new Set<string>();
    const results: Result[] = [];
    for (const change of all) {
      const result = (e: number, m: string | null) =>
        results.push({ user: change.name, errorCode: e, errorMessage: m });
      const mechanism = BY_ID.get(change.mechanism);
      const key = `${change.name}\u0000${change.mechanism}`;
      if (seen.has(key)) {
        result(
          ErrorCode.DUPLICATE_RESOURCE,
          "A user credential cannot be altered twice in the " + "same request",
        );
        continue;
      }
      seen.add(key);
      if (mechanism === undefined || store === undefined) {
        result(ErrorCode.UNSUPPORTED_SASL_MECHANISM, `Unknown SCRAM mechanism ${change.mechanism}`);
      } else if (change.name === "") {
        result(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty");
      } else if (change.upsert === null) {
        const deleted = await store.delete(change.name, mechanism);
        if (deleted) result(ErrorCode.NONE, null);
        else
          result(
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that " + "does not exist",
          );
      } else {
        const { iterations, salt, saltedPassword } = change.upsert;
        if (iterations < SCRAM_MIN_ITERATIONS || iterations > SCRAM_MAX_ITERATIONS) {
          result(
            ErrorCode.UNACCEPTABLE_CREDENTIAL,
            `Iterations ${iterations} not in ` +
              `${SCRAM_MIN_ITERATIONS}..${SCRAM_MAX_ITERATIONS} for ${mechanism}`,
          );
          continue;
        }
        const credential = credentialFromSalted(mechanism, saltedPassword, salt, iterations);
        await store.set(change.name, mechanism, credential);
        result(ErrorCode.NONE, null);
      }
    }
    return { throttleTimeMs: 0, results };
  },
});
