// ApiVersions: v0-5
//
// Version notes:
// * v1: ThrottleTimeMs.
// * v3: flexible; ClientSoftwareName/Version (KIP-511); SupportedFeatures and friends as tagged
//   fields. Quill has no feature flags, so those stay empty. As in Kafka, a name or version
//   that is not `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?` is answered with INVALID_REQUEST and
//   no API keys; a valid pair is kept on the connection, which names it in its log lines.
// * v4: as v3 (KAFKA-17011: features may have a min version of 0; Quill advertises none).
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
/** Kafka's ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN. */
const SOFTWARE_NAME_VERSION = /^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$/;

/** The advertised version range of every registered handler, in API key order. */
export function supportedApiVersions(handlers: readonly ImplementedApi[]) {
  return [...handlers]
    .sort((a, b) => a.apiKey - b.apiKey)
    .map((h) => ({ apiKey: h.apiKey, minVersion: h.minVersion, maxVersion: h.maxVersion }));
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
    return {
      errorCode: ErrorCode.NONE,
      apiKeys: supportedApiVersions(ctx.broker.handlers),
      throttleTimeMs: 0,
    };
  },
});
