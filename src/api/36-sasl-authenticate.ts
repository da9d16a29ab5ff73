// SaslAuthenticate: v0-2
//
// Version notes:
// * v1: SessionLifetimeMs (0: no re-authentication, connections.max.reauth.ms is not
//   implemented). v2: flexible.
// * Each request carries one client token of the mechanism SaslHandshake chose; the answer is
//   the server's challenge. A failed authentication is SASL_AUTHENTICATION_FAILED with Kafka's
//   message, then the connection is closed; a request without a handshake before it is
//   ILLEGAL_SASL_STATE, closed too.

import type { SaslMechanism } from "../config/sasl-config-keys.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { SaslAuthenticationError, type SaslExchange } from "../security/sasl-authenticator.ts";
import { SASL_MECHANISM_STATE, SASL_RAW_TOKENS_STATE } from "./17-sasl-handshake.ts";
import { defineHandler, type RequestContext } from "./handler.ts";

const EXCHANGE_STATE = "sasl.exchange";
const EMPTY = new Uint8Array(0);

export const saslAuthenticateHandler = defineHandler({
  apiKey: ApiKey.SaslAuthenticate,
  minVersion: 0,
  maxVersion: 2,
  async handle(request, ctx) {
    const exchange = exchangeOf(ctx);
    if (exchange === null) {
      ctx.closeAfterResponse = true;
      return failure(
        ErrorCode.ILLEGAL_SASL_STATE,
        "Unexpected SaslAuthenticate: no SaslHandshake chose a mechanism",
      );
    }
    try {
      const { challenge, user } = await exchange.evaluate(request.authBytes);
      if (user !== null) {
        ctx.conn.state.delete(EXCHANGE_STATE);
        ctx.conn.authenticate(`User:${user}`);
      }
      return {
        errorCode: ErrorCode.NONE,
        errorMessage: null,
        authBytes: challenge,
        sessionLifetimeMs: 0n,
      };
    } catch (error) {
      if (!(error instanceof SaslAuthenticationError)) throw error;
      ctx.closeAfterResponse = true;
      return failure(ErrorCode.SASL_AUTHENTICATION_FAILED, error.message);
    }
  },
});

/**
 * A raw SASL token after a v0 SaslHandshake: the answer is the raw challenge; a failure closes
 * the connection, as Kafka does for v0 clients (they have no error field to read).
 */
export async function rawSaslToken(token: Uint8Array, ctx: RequestContext) {
  const exchange = exchangeOf(ctx);
  if (exchange === null) return "close" as const;
  try {
    const { challenge, user } = await exchange.evaluate(token);
    if (user !== null) {
      ctx.conn.state.delete(EXCHANGE_STATE);
      ctx.conn.state.delete(SASL_RAW_TOKENS_STATE);
      ctx.conn.authenticate(`User:${user}`);
    }
    return { chunks: [challenge] };
  } catch (error) {
    if (!(error instanceof SaslAuthenticationError)) throw error;
    return "close" as const;
  }
}

function exchangeOf(ctx: RequestContext): SaslExchange | null {
  const existing = ctx.conn.state.get(EXCHANGE_STATE) as SaslExchange | undefined;
  if (existing !== undefined) return existing;
  const mechanism = ctx.conn.state.get(SASL_MECHANISM_STATE) as SaslMechanism | undefined;
  const authenticator = ctx.broker.saslAuthenticator;
  if (mechanism === undefined || authenticator === null || ctx.conn.authenticated) return null;
  const exchange = authenticator.start(ctx.conn.listenerName, mechanism);
  ctx.conn.state.set(EXCHANGE_STATE, exchange);
  return exchange;
}

const failure = (errorCode: number, errorMessage: string) => ({
  errorCode,
  errorMessage,
  authBytes: EMPTY,
  sessionLifetimeMs: 0n,
});
