// ApiVersions: v0-4
//
// Version notes:
// * v1: ThrottleTimeMs.
// * v3: flexible; ClientSoftwareName/Version (KIP-511); SupportedFeatures and friends as tagged
//   fields. Quill has no feature flags, so those stay empty. As in Kafka, a name or version
//   that is not `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?` is answered with INVALID_REQUEST and
//   no API keys; a valid pair is kept on the connection, which names it in its log lines.
// * An unsupported version is answered by the dispatcher in v0 with UNSUPPORTED_VERSION.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import type { ImplementedApi } from "./broker-services.ts";
import { defineHandler } from "./handler.ts";

const CLIENT_SOFTWARE_MIN_VERSION = 3;
/** Kafka's ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN. */
const SOFTWARE_NAME_VERSION = /^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$/;

/** The advertised version range of every registered handler, in API key order. */
export function supportedApiVersions(handlers: readonly ImplementedApi[]) {
  return [...handlers]
    .sort((a, b) => a.apiKey - b.apiKey)
    .map((h) => ({ apiKey: h.apiKey, minVersion: h.minVersion, maxVersion: h.maxVersion }));
}

export const apiVersionsHandler = defineHandler({
  apiKey: ApiKey.ApiVersions,
  minVersion: 0,
  maxVersion: 4,
  handle(request, ctx) {
    if (ctx.apiVersion >= CLIENT_SOFTWARE_MIN_VERSION) {
      const { clientSoftwareName: name, clientSoftwareVersion: version } = request;
      if (!SOFTWARE_NAME_VERSION.test(name) || !SOFTWARE_NAME_VERSION.test(version)) {
        return { errorCode: ErrorCode.INVALID_REQUEST, apiKeys: [], throttleTimeMs: 0 };
      }
      ctx.conn.clientSoftware = `${name}/${version}`;
    }
    return {
      errorCode: ErrorCode.NONE,
      apiKeys: supportedApiVersions(ctx.broker.handlers),
      throttleTimeMs: 0,
    };
  },
});
