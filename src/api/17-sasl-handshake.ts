// SaslHandshake: v0-1
//
// Version notes:
// * v0 is followed by raw SASL tokens, each in a size-prefixed frame without a request header
//   (the dispatcher hands them to rawSaslToken); v1 by SaslAuthenticate requests.
// * The chosen mechanism is kept on the connection for SaslAuthenticate. A mechanism the
//   listener does not offer is UNSUPPORTED_SASL_MECHANISM with the ones it does; a second
//   handshake, or one on a listener without SASL, is ILLEGAL_SASL_STATE, as in Kafka.
// * Re-authentication (KIP-368): on a connection authenticated through SaslAuthenticate v1+, a
//   v1 handshake starts a new exchange while the connection keeps its principal; it must end
//   with the same principal and mechanism (36-sasl-authenticate.ts).
import type { SaslMechanism } from "../config/sasl-config-keys.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { defineHandler } from "./handler.ts";

/** conn.state key set by a v0 handshake: the next frames are raw SASL tokens. */
export const SASL_RAW_TOKENS_STATE = "sasl.raw-tokens";

/** conn.state key of the mechanism a handshake chose, until its exchange completes. */
export const SASL_MECHANISM_STATE = "sasl.mechanism";

/** conn.state key of the authenticated session (SaslSession). */
export const SASL_SESSION_STATE = "sasl.session";

export interface SaslSession {
  readonly principal: string;
  readonly mechanism: SaslMechanism;
  /** Authenticated with SaslAuthenticate v1+: the client knows the session lifetime. */
  readonly reauthenticable: boolean;
}

export const saslHandshakeHandler = defineHandler({
  apiKey: ApiKey.SaslHandshake,
  minVersion: 0,
  maxVersion: 1,
  handle(request, ctx) {
    const offered = ctx.broker.saslAuthenticator?.mechanismsFor(ctx.conn.listenerName) ?? [];
    const sasl = ctx.conn.securityProtocol.startsWith("SASL_");
    const session = ctx.conn.state.get(SASL_SESSION_STATE) as SaslSession | undefined;
    const reauthentication = session?.reauthenticable === true && ctx.apiVersion >= 1;
    const refused = ctx.conn.authenticated && !reauthentication;
    if (!sasl || refused || ctx.conn.state.has(SASL_MECHANISM_STATE)) {
      ctx.closeAfterResponse = true;
      return { errorCode: ErrorCode.ILLEGAL_SASL_STATE, mechanisms: [...offered] };
    }
    if (!(offered as readonly string[]).includes(request.mechanism)) {
      ctx.closeAfterResponse = true;
      return { errorCode: ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms: [...offered] };
    }
    ctx.conn.state.set(SASL_MECHANISM_STATE, request.mechanism as SaslMechanism);
    if (ctx.apiVersion === 0) ctx.conn.state.set(SASL_RAW_TOKENS_STATE, true);
    return { errorCode: ErrorCode.NONE, mechanisms: [...offered] };
  },
});
