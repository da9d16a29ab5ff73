import type { ConnectionContext } from "../network/request-handler.ts";
import type {
  ApiKeyNumber,
  ApiMessages,
  Init,
  RequestHeader,
} from "../protocol/generated/index.ts";
import { apiSpec } from "../protocol/generated/index.ts";
import { assert } from "../util/assert.ts";
import type { BrokerServices } from "./broker-services.ts";

/** What a handler knows about the request beyond its body. */
export interface RequestContext {
  readonly header: RequestHeader;
  readonly apiVersion: number;
  readonly conn: ConnectionContext;
  readonly broker: BrokerServices;
  /** Set by a handler whose response must be the connection's last (failed SASL). */
  closeAfterResponse?: boolean;
  /** Set by a handler that measured a quota itself (a consumer fetch's bytes): its throttle. */
  throttleMs?: number;
  /** Set by a handler whose request is exempt from request quotas (a follower's fetch). */
  quotaExempt?: boolean;
}

/** The response body to encode, or null for no response at all (produce with acks=0). */
export type HandlerResult<K extends ApiKeyNumber> = Init<ApiMessages[K]["response"]> | null;

/**
 * One API's handler, in the shape Redpanda and franz-go's kfake use: decode is done for it, it
 * validates, delegates to `server/` or `coordinator/`, and returns the response body. A failure
 * of one partition is an error code inside the response; only a bug throws.
 */
export interface ApiHandler<K extends ApiKeyNumber = ApiKeyNumber> {
  readonly apiKey: K;
  /** The versions Quill implements and advertises in ApiVersions. */
  readonly minVersion: number;
  readonly maxVersion: number;
  handle(
    request: ApiMessages[K]["request"],
    ctx: RequestContext,
  ): HandlerResult<K> | Promise<HandlerResult<K>>;
}

/** Declares a handler, checking its version range against what the generated codecs handle. */
export function defineHandler<K extends ApiKeyNumber>(handler: ApiHandler<K>): ApiHandler<K> {
  const spec = apiSpec(handler.apiKey);
  assert(spec !== undefined, `no spec for API key ${handler.apiKey}`);
  assert(handler.minVersion >= spec.minVersion, `${spec.name} min ${handler.minVersion} < spec`);
  assert(handler.maxVersion <= spec.maxVersion, `${spec.name} max ${handler.maxVersion} > spec`);
  assert(handler.minVersion <= handler.maxVersion, `${spec.name} has an empty version range`);
  return handler;
}
