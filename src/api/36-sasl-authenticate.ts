// SaslAuthenticate: v0-2
//
// Version notes:
// * v1: SessionLifetimeMs, connections.max.reauth.ms (0: sessions never expire; per listener and
//   mechanism with listener.name.<l>.<mechanism>.connections.max.reauth.ms); the client
//   re-authenticates before then with a new handshake (KIP-368), which must name the same
//   principal and mechanism, or fails as Kafka's does. v2: flexible.
// * Every authenticated session, of any version, expires after connections.max.reauth.ms:
//   the dispatcher closes the connection at its next request other than a re-authentication.
// * Each request carries one client token of the mechanism SaslHandshake chose; the answer is
//   the server's challenge. A failed authentication is SASL_AUTHENTICATION_FAILED with Kafka's
//   message, then the connection is closed; a request without a handshake before it is
//   ILLEGAL_SASL_STATE, closed too.

import { reauthMsFor } from "../config/listener-config.ts";
import type { SaslMechanism } from "../config/sasl-config-keys.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { SaslAuthenticationError, type SaslExchange } from "../security/sasl-authenticator.ts";
import {
  SASL_MECHANISM_STATE,
  SASL_RAW_TOKENS_STATE,
  SASL_SESSION_STATE,
  type SaslSession,
} from "./17-sasl-handshake.ts";
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
      const lifetimeMs = user === null ? 0 : completeAuthentication(ctx, user, ctx.apiVersion >= 1);
      return {
        errorCode: ErrorCode.NONE,
        errorMessage: null,
        authBytes: challenge,
        sessionLifetimeMs: BigInt(lifetimeMs),
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
    if (user !== null) completeAuthentication(ctx, user, false);
    return { chunks: [challenge] };
  } catch (error) {
    if (!(error instanceof SaslAuthenticationError)) throw error;
    return "close" as const;
  }
}

/**
 * Marks the connection authenticated as `user` and starts its session; returns the session
 * lifetime in ms (0: unlimited). A re-authentication must keep the principal and mechanism.
 */
function completeAuthentication(ctx: RequestContext, user: string, reauthenticable: boolean) {
  const { conn } = ctx;
  const principal = `User:${user}`;
  const mechanism = conn.state.get(SASL_MECHANISM_STATE) as SaslMechanism;
  const previous = conn.state.get(SASL_SESSION_STATE) as SaslSession | undefined;
  if (conn.authenticated && previous !== undefined) {
    if (previous.principal !== principal) {
      throw new SaslAuthenticationError(
        `Cannot change principals during re-authentication from ${previous.principal}: ` +
          principal,
      );
    }
    if (previous.mechanism !== mechanism) {
      throw new SaslAuthenticationError(
        `SASL mechanism changed during re-authentication from ${previous.mechanism} to ` +
          mechanism,
      );
    }
  }
  for (const key of [EXCHANGE_STATE, SASL_MECHANISM_STATE, SASL_RAW_TOKENS_STATE]) {
    conn.state.delete(key);
  }
  conn.authenticate(principal);
  conn.state.set(SASL_SESSION_STATE, { principal, mechanism, reauthenticable });
  const lifetimeMs = reauthMsFor(ctx.broker.config, conn.listenerName, mechanism);
  conn.sessionExpiresMs = lifetimeMs > 0 ? Date.now() + lifetimeMs : 0;
  return lifetimeMs;
}

function exchangeOf(ctx: RequestContext): SaslExchange | null {
  const existing = ctx.conn.state.get(EXCHANGE_STATE) as SaslExchange | undefined;
  if (existing !== undefined) return existing;
  const mechanism = ctx.conn.state.get(SASL_MECHANISM_STATE) as SaslMechanism | undefined;
  const authenticator = ctx.broker.saslAuthenticator;
  // A handshake sets the mechanism; completion clears it, so an authenticated connection has
  // one only while it re-authenticates.
  if (mechanism === undefined || authenticator === null) return null;
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
