/**
 * SASL on the SASL_PLAINTEXT and SASL_SSL listeners: which mechanisms each offers and one
 * exchange per connection (Kafka's SaslServerAuthenticator, after SaslHandshake chose the
 * mechanism). A failure carries the message Kafka sends in SaslAuthenticate.
 */
import { ConfigError } from "../config/config-error.ts";
import type { SaslMechanism } from "../config/sasl-config-keys.ts";
import { authenticatePlain, PlainAuthenticationError, plainUsers } from "./plain.ts";
import { ScramError, type ScramMechanism, ScramServer } from "./scram.ts";
import type { ScramCredentialStore } from "./scram-credential-store.ts";

export class SaslAuthenticationError extends Error {
  override readonly name = "SaslAuthenticationError";
}

export interface SaslListenerConfig {
  readonly mechanisms: readonly SaslMechanism[];
  /** PLAIN's users from the listener's PlainLoginModule JAAS config. */
  readonly plainUsers: ReadonlyMap<string, string>;
}

/** One connection's exchange: each client token gets a challenge, until a user is named. */
export interface SaslExchange {
  evaluate(token: Uint8Array): Promise<{ challenge: Uint8Array; user: string | null }>;
}

/** Checks a SASL listener's settings at start; a mistake names the key to fix. */
export function saslListenerConfig(
  listenerName: string,
  mechanisms: readonly SaslMechanism[],
  plainJaasConfig: string | null,
): SaslListenerConfig {
  const prefix = `listener.name.${listenerName.toLowerCase()}.`;
  if (mechanisms.length === 0) {
    throw new ConfigError(
      `listener ${listenerName} speaks SASL but sasl.enabled.mechanisms ` +
        `(or ${prefix}sasl.enabled.mechanisms) names no mechanism (PLAIN, SCRAM-SHA-256, ` +
        "SCRAM-SHA-512)",
    );
  }
  const users = plainUsers(plainJaasConfig ?? "");
  if (mechanisms.includes("PLAIN") && users.size === 0) {
    throw new ConfigError(
      `listener ${listenerName} offers PLAIN but ${prefix}plain.sasl.jaas.config ` +
        'names no user (user_<name>="<password>" options of PlainLoginModule)',
    );
  }
  return { mechanisms, plainUsers: users };
}

export class SaslAuthenticator {
  constructor(
    private readonly listeners: ReadonlyMap<string, SaslListenerConfig>,
    readonly credentials: ScramCredentialStore,
  ) {}

  mechanismsFor(listenerName: string): readonly SaslMechanism[] {
    return this.listeners.get(listenerName)?.mechanisms ?? [];
  }

  /** The exchange for a mechanism the listener offers (checked by the caller). */
  start(listenerName: string, mechanism: SaslMechanism): SaslExchange {
    if (mechanism === "PLAIN") {
      const users = this.listeners.get(listenerName)?.plainUsers ?? new Map<string, string>();
      return { evaluate: async (token) => plainExchange(token, users) };
    }
    return scramExchange(mechanism, this.credentials);
  }
}

function plainExchange(token: Uint8Array, users: ReadonlyMap<string, string>) {
  try {
    return { challenge: new Uint8Array(0), user: authenticatePlain(token, users) };
  } catch (error) {
    if (!(error instanceof PlainAuthenticationError)) throw error;
    throw new SaslAuthenticationError(error.message);
  }
}

function scramExchange(mechanism: ScramMechanism, store: ScramCredentialStore): SaslExchange {
  const server = new ScramServer(mechanism, (user) => store.get(user, mechanism));
  return {
    async evaluate(token) {
      try {
        const challenge = await server.evaluate(token);
        return { challenge, user: server.complete ? server.authorizationId : null };
      } catch (error) {
        if (!(error instanceof ScramError) && !(error instanceof TypeError)) throw error;
        // Kafka's SaslServerAuthenticator words every SCRAM failure this way.
        throw new SaslAuthenticationError(
          "Authentication failed during authentication due to " +
            `invalid credentials with SASL mechanism ${mechanism}`,
        );
      }
    },
  };
}
