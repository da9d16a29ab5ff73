// ApiVersions: v0-5
//
// Version notes:
// * v1: ThrottleTimeMs.
// * v3: flexible; ClientSoftwareName/Version (KIP-511); SupportedFeatures and friends as tagged
//   fields. Quill's one feature is `transaction.version` (KIP-890 part 2), supported 0-2 and
//   finalized at 2: a Kafka 4 client then skips AddPartitionsToTxn and AddOffsetsToTxn and bumps
//   its epoch at every EndTxn (docs/transactions.md). The level never changes, so the features
//   epoch is constant. v3 leaves out supported features whose minimum is 0, as Kafka.
//   As in Kafka, a name or version that is not `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`
//   is answered with INVALID_REQUEST and no API keys; a valid pair is kept on the connection,
//   which names it in its log lines.
// * v4: as v3, with features whose minimum version is 0 (KAFKA-17011).
// * v5 (KIP-1242): the client may name the cluster id and node id it meant to reach, both or
//   neither (one alone is INVALID_REQUEST, as Kafka's ApiVersionsRequest.isValid). A broker of
//   another cluster or with another id answers REBOOTSTRAP_REQUIRED and no API keys: the client's
//   metadata is stale (a host now runs another broker), and a Java client with
//   metadata.recovery.strategy=rebootstrap then bootstraps again.
// * An unsupported version is answered by the dispatcher in v0 with UNSUPPORTED_VERSION.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey, type ApiVersionsRequest } from "../protocol/generated/index.ts";
import type { ImplementedApi } from "./broker-services.ts";
import { defineHandler, type RequestContext } from "./handler.ts";

const CLIENT_SOFTWARE_MIN_VERSION = 3;
const CLUSTER_CHECK_MIN_VERSION = 5;
/** The first version whose SupportedFeatures may list a feature with minimum version 0. */
const ZERO_MIN_FEATURES_MIN_VERSION = 4;
/** KIP-890 part 2's feature and its level: transactions v2 (server-side epoch bump). */
export const TRANSACTION_VERSION_FEATURE = "transaction.version";
export const TRANSACTION_VERSION = 2;
/** Constant: the finalized levels never change while a broker runs. */
const FINALIZED_FEATURES_EPOCH = 1n;
/** Kafka's ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN. */
const SOFTWARE_NAME_VERSION = /^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$/;

interface ApiVersionRange {
  readonly apiKey: number;
  readonly minVersion: number;
  readonly maxVersion: number;
}

/**
 * Each handler list's ranges, made once: every client opens with ApiVersions, and building the
 * list of ~75 objects per request left 5 KB of garbage per connection; 5,000 clients connecting
 * at once grew the heap by 20 MB before a collection came.
 */
const rangesOf = new WeakMap<readonly ImplementedApi[], readonly ApiVersionRange[]>();

/** The advertised version range of every registered handler, in API key order. */
export function supportedApiVersions(
  handlers: readonly ImplementedApi[],
): readonly ApiVersionRange[] {
  let ranges = rangesOf.get(handlers);
  if (ranges === undefined) {
    ranges = [...handlers]
      .sort((a, b) => a.apiKey - b.apiKey)
      .map((h) => ({ apiKey: h.apiKey, minVersion: h.minVersion, maxVersion: h.maxVersion }));
    rangesOf.set(handlers, ranges);
  }
  return ranges;
}

/** INVALID_REQUEST, REBOOTSTRAP_REQUIRED, or NONE for a request this broker answers. */
function requestError(request: ApiVersionsRequest, ctx: RequestContext): number {
  const v = ctx.apiVersion;
  if (v >= CLUSTER_CHECK_MIN_VERSION && (request.clusterId === null) !== (request.nodeId === -1)) {
    return ErrorCode.INVALID_REQUEST;
  }
  if (v >= CLIENT_SOFTWARE_MIN_VERSION) {
    const { clientSoftwareName: name, clientSoftwareVersion: version } = request;
    if (!SOFTWARE_NAME_VERSION.test(name) || !SOFTWARE_NAME_VERSION.test(version)) {
      return ErrorCode.INVALID_REQUEST;
    }
  }
  const { clusterId, nodeId } = request;
  if (v >= CLUSTER_CHECK_MIN_VERSION && clusterId !== null) {
    const services = ctx.broker;
    if (clusterId !== services.clusterId || nodeId !== services.brokerId) {
      return ErrorCode.REBOOTSTRAP_REQUIRED;
    }
  }
  return ErrorCode.NONE;
}

export const apiVersionsHandler = defineHandler({
  apiKey: ApiKey.ApiVersions,
  minVersion: 0,
  maxVersion: 5,
  handle(request, ctx) {
    const refusal = requestError(request, ctx);
    if (refusal !== ErrorCode.NONE) return { errorCode: refusal, apiKeys: [], throttleTimeMs: 0 };
    if (ctx.apiVersion >= CLIENT_SOFTWARE_MIN_VERSION) {
      ctx.conn.clientSoftware = `${request.clientSoftwareName}/${request.clientSoftwareVersion}`;
    }
    const name = TRANSACTION_VERSION_FEATURE;
    const level = TRANSACTION_VERSION;
    return {
      errorCode: ErrorCode.NONE,
      apiKeys: supportedApiVersions(ctx.broker.handlers),
      throttleTimeMs: 0,
      supportedFeatures:
        ctx.apiVersion >= ZERO_MIN_FEATURES_MIN_VERSION
          ? [{ name, minVersion: 0, maxVersion: level }]
          : [],
      finalizedFeaturesEpoch: FINALIZED_FEATURES_EPOCH,
      finalizedFeatures: [{ name, minVersionLevel: level, maxVersionLevel: level }],
    };
  },
});
