import { ConfigError } from "./config-error.ts";

/**
 * Kafka security settings this build cannot honour. A broker given one refuses to start (exit 2,
 * one message naming the key) instead of starting open: an operator who wrote
 * `sasl.enabled.mechanisms` or `authorizer.class.name` believes the port is protected, and an
 * "unknown key" warning would leave it readable and writable by anyone who can reach it.
 *
 * As security features land, the keys they honour move out of here into the config schema, so
 * this guard only ever narrows. A blank value means "none" in Kafka and is harmless.
 */

/** The protocols a listener can speak in this build. */
export const SUPPORTED_SECURITY_PROTOCOLS: ReadonlySet<string> = new Set([
  "PLAINTEXT",
  "SSL",
  "SASL_PLAINTEXT",
  "SASL_SSL",
]);

/** Key prefixes that only mean something with TLS, SASL or delegation tokens. */
const SECURITY_PREFIXES = ["ssl.", "sasl.", "listener.name.", "delegation.token."] as const;

/** Whole keys of Kafka's authentication and authorization settings. */
const SECURITY_KEYS: ReadonlySet<string> = new Set([
  "principal.builder.class",
  "security.providers",
]);

/** One setting as the loader sees it: the key, its raw value and where it came from. */
export interface SecuritySetting {
  readonly key: string;
  readonly value: string;
  /** `server.properties:12`, `QUILL_SSL_KEYSTORE_LOCATION`, `--set`. */
  readonly source: string;
}

/** True for every Kafka key about authentication, authorization or listener protocols. */
export function isSecurityKey(key: string): boolean {
  return SECURITY_KEYS.has(key) || SECURITY_PREFIXES.some((prefix) => key.startsWith(prefix));
}

/**
 * Throws a ConfigError naming the setting when it asks for protection this build cannot give;
 * returns quietly when it is honoured as written (PLAINTEXT everywhere, or blank).
 */
export function checkSecuritySetting(setting: SecuritySetting): void {
  if (setting.value.trim() === "") return;
  throw refusal(
    setting,
    `asks for ${feature(setting.key)}, which this build of Quill does not ` + "provide",
  );
}

/** A listener whose protocol this build cannot speak. */
export function refuseProtocol(key: string, value: string, source: string, protocol: string) {
  return refusal(
    { key, value, source },
    `asks for the ${protocol} security protocol, which ` +
      `this build of Quill does not provide (it has ${[...SUPPORTED_SECURITY_PROTOCOLS].join(", ")})`,
  );
}

function feature(key: string): string {
  if (key.startsWith("ssl.")) return "a TLS setting";
  if (key.startsWith("sasl.")) return "a SASL setting";
  if (key.startsWith("delegation.token.")) return "delegation tokens";
  if (key.startsWith("listener.name.")) return "per-listener security settings";
  if (key === "principal.builder.class" || key === "security.providers") {
    return "a pluggable security class";
  }
  return "authorization (ACLs)";
}

function refusal(setting: SecuritySetting, why: string): ConfigError {
  const quoted = JSON.stringify(setting.value);
  return new ConfigError(
    `refusing to start: security config ${setting.key}=${quoted} ` +
      `(from ${setting.source}) ${why}; remove it, or the broker would run unprotected`,
  );
}
