import type { ConnectionContext, RequestHandler, Response } from "../network/request-handler.ts";
import { DecodeError, ErrorCode } from "../protocol/errors.ts";
import {
  ApiKey,
  type ApiKeyNumber,
  decodeRequest,
  decodeRequestHeader,
  encodeResponse,
  encodeResponseHeader,
  type RequestHeader,
} from "../protocol/generated/index.ts";
import { Reader } from "../protocol/reader.ts";
import { Writer } from "../protocol/writer.ts";
import type { BrokerMetrics } from "../server/broker-metrics.ts";
import type { Logger } from "../util/logger.ts";
import { SASL_RAW_TOKENS_STATE } from "./17-sasl-handshake.ts";
import { supportedApiVersions } from "./18-api-versions.ts";
import { rawSaslToken } from "./36-sasl-authenticate.ts";
import type { BrokerServices } from "./broker-services.ts";
import type { ApiHandler, RequestContext } from "./handler.ts";
import { quotaThrottleMs } from "./quota-throttle.ts";
import { forEachErrorCode } from "./response-errors.ts";

/**
 * Responses are encoded one after another into a shared slab (Writer.startNext) instead of a
 * writer each: with one produce request per record, allocating a writer per response (its
 * buffer, DataView and the ArrayBuffer JavaScriptCore makes for them) was about a tenth of the
 * broker's CPU. A slab is kept alive by the queued responses that view it, so a client that
 * stops reading pins at most the slabs its own queued responses sit in (bounded by the
 * connection's queued-bytes limit). A large response grows the slab as a writer always grew.
 */
const RESPONSE_SLAB_BYTES = 16 * 1024;
/** A response starts in a fresh slab when less than this is left, so most never grow one. */
const RESPONSE_SLAB_MIN_FREE_BYTES = 2 * 1024;

/**
 * Turns request frames into responses: reads the header, checks the API and version against the
 * registered handlers, decodes the body with the generated codecs, calls the handler and encodes
 * its answer behind the response header. As Kafka does, a request that cannot be read (unknown
 * API key, unsupported version, malformed bytes) closes the connection after one log line, with
 * one exception: ApiVersions of an unsupported version is answered in v0 with UNSUPPORTED_VERSION,
 * so a newer client can learn which versions this broker speaks.
 */
/** Raw SASL tokens (after SaslHandshake v0) have no header; this stands in for one. */
const RAW_TOKEN_HEADER: RequestHeader = {
  requestApiKey: ApiKey.SaslAuthenticate,
  requestApiVersion: 0,
  correlationId: -1,
  clientId: null,
};

const SASL_PHASE_APIS: ReadonlySet<number> = new Set([
  ApiKey.ApiVersions,
  ApiKey.SaslHandshake,
  ApiKey.SaslAuthenticate,
]);

export class RequestDispatcher implements RequestHandler {
  private readonly byKey = new Map<number, ApiHandler>();
  private slab = new Writer(RESPONSE_SLAB_BYTES);

  constructor(
    private readonly services: () => BrokerServices,
    handlers: readonly ApiHandler[],
    private readonly log: Logger,
  ) {
    for (const h of handlers) this.byKey.set(h.apiKey, h);
  }

  responseSent(apiKey: number, sendSeconds: number): void {
    this.services().metrics.recordSendTime(apiKey, sendSeconds);
  }

  handle(frame: Uint8Array, conn: ConnectionContext): Promise<Response> | Response {
    if (!conn.authenticated && conn.state.get(SASL_RAW_TOKENS_STATE) === true) {
      const ctx = { header: RAW_TOKEN_HEADER, apiVersion: 0, conn, broker: this.services() };
      return rawSaslToken(frame, ctx);
    }
    const r = new Reader(frame);
    let header: RequestHeader;
    try {
      header = decodeRequestHeader(r);
    } catch (e) {
      return this.refuse(conn, `unreadable request header: ${(e as Error).message}`);
    }
    const apiKey = header.requestApiKey;
    const apiVersion = header.requestApiVersion;
    const handler = this.byKey.get(apiKey);
    // Kafka's SaslServerAuthenticator: before authentication only these requests are read.
    if (!conn.authenticated && !SASL_PHASE_APIS.has(apiKey)) {
      return this.refuse(conn, `unexpected request (API key ${apiKey}) before SASL authentication`);
    }
    if (conn.sessionExpiresMs !== 0 && sessionExpired(conn, apiKey)) {
      return this.refuse(conn, "SASL session expired without re-authentication");
    }
    if (handler === undefined) {
      return this.refuse(conn, `unsupported API key ${apiKey} (version ${apiVersion})`);
    }
    if (apiVersion < handler.minVersion || apiVersion > handler.maxVersion) {
      if (apiKey === ApiKey.ApiVersions) return this.unsupportedApiVersions(header);
      return this.refuse(conn, `unsupported version ${apiVersion} of API key ${apiKey}`);
    }
    let request: unknown;
    try {
      request = decodeRequest(apiKey as ApiKeyNumber, apiVersion, r);
    } catch (e) {
      if (e instanceof DecodeError) return this.refuse(conn, `malformed request: ${e.message}`);
      throw e;
    }
    const ctx: RequestContext = { header, apiVersion, conn, broker: this.services() };
    const metrics = ctx.broker.metrics;
    metrics.recordRequest(apiKey, apiVersion);
    const startMs = performance.now();
    const result = handler.handle(request as never, ctx);
    const localEndMs = performance.now();
    if (result instanceof Promise) {
      return result.then((body) => {
        measure(metrics, apiKey, startMs, localEndMs, performance.now(), body);
        return this.answer(ctx, body, request, frame.length, localEndMs - startMs);
      });
    }
    measure(metrics, apiKey, startMs, localEndMs, localEndMs, result);
    return this.answer(ctx, result, request, frame.length, localEndMs - startMs);
  }

  /** The response, with the throttle time of a client over its quota (none set: no cost). */
  private answer(
    ctx: RequestContext,
    body: object | null,
    request: unknown,
    frameBytes: number,
    handlerMs: number,
  ): Response {
    const quotas = ctx.broker.clientQuotas;
    const throttleMs = quotas.active
      ? quotaThrottleMs(quotas, ctx, request, frameBytes, handlerMs)
      : 0;
    if (throttleMs === 0) return this.respond(ctx.header, body, ctx.closeAfterResponse);
    if (body === null) return { chunks: [], throttleMs };
    // Handlers may leave throttleTimeMs out (0); responses without the field ignore it.
    const answered = (body as { throttleTimeMs?: number }).throttleTimeMs ?? 0;
    const throttled = { ...body, throttleTimeMs: Math.max(answered, throttleMs) };
    const response = this.respond(ctx.header, throttled, ctx.closeAfterResponse);
    return response === null || response === "close" ? response : { ...response, throttleMs };
  }

  private respond(header: RequestHeader, body: object | null, closeAfter = false): Response {
    if (body === null) return null;
    const w = this.nextResponseWriter();
    const { requestApiKey: apiKey, requestApiVersion: apiVersion } = header;
    encodeResponseHeader(w, apiKey, apiVersion, header.correlationId);
    encodeResponse(apiKey, apiVersion, w, body);
    return closeAfter ? { chunks: w.finish(), closeAfter, apiKey } : { chunks: w.finish(), apiKey };
  }

  private nextResponseWriter(): Writer {
    if (this.slab.freeBytes < RESPONSE_SLAB_MIN_FREE_BYTES) {
      this.slab = new Writer(RESPONSE_SLAB_BYTES);
      return this.slab;
    }
    return this.slab.startNext();
  }

  private unsupportedApiVersions(header: RequestHeader): Response {
    const body = {
      errorCode: ErrorCode.UNSUPPORTED_VERSION,
      apiKeys: supportedApiVersions(this.services().handlers),
    };
    return this.respond({ ...header, requestApiVersion: 0 }, body);
  }

  private refuse(conn: ConnectionContext, reason: string): Response {
    this.log.warn(
      `Closing connection ${conn.id} from ${conn.remoteAddress}:${conn.remotePort}` +
        `${conn.clientSoftware === null ? "" : ` (${conn.clientSoftware})`}: ${reason}`,
    );
    return "close";
  }
}

/**
 * KIP-368: once the session is over, only a re-authentication (SaslHandshake, then
 * SaslAuthenticate) may follow; anything else closes the connection, as Kafka's Processor does.
 */
function sessionExpired(conn: ConnectionContext, apiKey: number): boolean {
  if (apiKey === ApiKey.SaslHandshake || apiKey === ApiKey.SaslAuthenticate) return false;
  return Date.now() > conn.sessionExpiresMs;
}

/**
 * Request times (see RequestTimes) and the response's error codes, once it is answered. Each
 * clock read costs about 0.1 µs, so a handler answering synchronously reads it twice, not 3 times.
 */
function measure(
  metrics: BrokerMetrics,
  apiKey: number,
  startMs: number,
  localEndMs: number,
  endMs: number,
  body: object | null,
): void {
  metrics.recordRequestTime(apiKey, (localEndMs - startMs) / 1000, (endMs - localEndMs) / 1000);
  if (body !== null) forEachErrorCode(body, (code) => metrics.recordError(apiKey, code));
}
