// ApiVersions: v0-4
//
// Version notes:
// * v1: ThrottleTimeMs.
// * v3: flexible; ClientSoftwareName/Version (KIP-511); SupportedFeatures and friends as tagged
//   fields. Quill has no feature flags, so those stay empty.
// * An unsupported version is answered by the dispatcher in v0 with UNSUPPORTED_VERSION.
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import type { ImplementedApi } from "./broker-services.ts";
import { defineHandler } from "./handler.ts";

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
  handle(_request, ctx) {
    return {
      errorCode: ErrorCode.NONE,
      apiKeys: supportedApiVersions(ctx.broker.handlers),
      throttleTimeMs: 0,
    };
  },
});
