/**
 * SASL authentication of a client connection, as Kafka's SaslClientAuthenticator: SaslHandshake
 * v1 names the mechanism, then SaslAuthenticate carries the tokens (PLAIN: one; SCRAM: two round
 * trips). A refusal is a ClusterError with Kafka's error (SASL_AUTHENTICATION_FAILED,
 * UNSUPPORTED_SASL_MECHANISM, ...) and the broker's message.
 */
import type { SaslChannel } from "../network/inter-broker-client.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { ScramClient, ScramClientError } from "../security/scram-client.ts";
import { ClusterError, check } from "./client-errors.ts";

export type SaslMechanism = "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512";
export const SASL_MECHANISMS: readonly SaslMechanism[] = [
  "PLAIN",
  "SCRAM-SHA-256",
  "SCRAM-SHA-512",
];

export interface SaslCredentials {
  readonly mechanism: SaslMechanism;
  readonly username: string;
  readonly password: string;
}

/** SaslAuthenticate v0-2 carry the same fields for a client; v1+ add the session lifetime. */
const AUTHENTICATE_VERSION_MAX = 2;

/**
 * Authenticates `connection`; `authenticateVersion` is the negotiated SaslAuthenticate one.
 * Resolves with the session lifetime the broker answered (v1+; 0: none), after which the
 * connection must authenticate again (InterBrokerClient renews it before then).
 */
export async function authenticate(
  connection: SaslChannel,
  sasl: SaslCredentials,
  authenticateVersion: number,
  timeoutMs: number,
): Promise<number> {
  const handshake = await connection.request(
    ApiKey.SaslHandshake,
    1,
    { mechanism: sasl.mechanism },
    timeoutMs,
  );
  check(
    handshake.errorCode,
    `in SaslHandshake for ${sasl.mechanism}`,
    handshake.errorCode === ErrorCode.UNSUPPORTED_SASL_MECHANISM
      ? `the broker offers ${handshake.mechanisms.join(", ") || "no mechanism"}`
      : null,
  );
  const version = Math.min(authenticateVersion, AUTHENTICATE_VERSION_MAX);
  let lifetimeMs = 0;
  const send = async (token: Uint8Array): Promise<Uint8Array> => {
    const r = await connection.request(
      ApiKey.SaslAuthenticate,
      version,
      { authBytes: token },
      timeoutMs,
    );
    check(r.errorCode, `authenticating as "${sasl.username}"`, r.errorMessage);
    lifetimeMs = Number(r.sessionLifetimeMs);
    return r.authBytes;
  };
  if (sasl.mechanism === "PLAIN") {
    await send(new TextEncoder().encode(`\0${sasl.username}\0${sasl.password}`));
    return lifetimeMs;
  }
  const scram = new ScramClient(sasl.mechanism, sasl.username, sasl.password);
  try {
    const serverFirst = await send(scram.clientFirst());
    scram.verifyServerFinal(await send(await scram.clientFinal(serverFirst)));
    return lifetimeMs;
  } catch (error) {
    if (!(error instanceof ScramClientError)) throw error;
    throw new ClusterError(
      ErrorCode.SASL_AUTHENTICATION_FAILED,
      `authenticating as "${sasl.username}"`,
      error.message,
    );
  }
}
