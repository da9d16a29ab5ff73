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
export const SUPPORTED_SECURITY_PROTOCOLS: ReadonlySet<string> = new Set(["PLAINTEXT"]);

const KAFKA_SECURITY_PROTOCOLS = new Set(["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]);

/** Key prefixes that only mean something with TLS, SASL or delegation tokens. */
const SECURITY_PREFIXES = ["ssl.", "sasl.", "listener.name.", "delegation.token."] as const;

/** Whole keys of Kafka's authentication and authorization settings. */
const SECURITY_KEYS: ReadonlySet<string> = new Set([
  "authorizer.class.name", "super.users", "allow.everyone.if.no.acl.found",
  "principal.builder.class", "connections.max.reauth.ms", "security.providers",
  "listener.security.protocol.map", "security.inter.broker.protocol",
  "inter.broker.listener.name",
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
  const { key, value } = setting;
  const text = value.trim();
  if (text === "") return;
  switch (key) {
    case "listener.security.protocol.map":
      return checkProtocolMap(setting);
    case "security.inter.broker.protocol":
      return checkProtocol(setting, text);
    case "inter.broker.listener.name":
      // Listener names other than PLAINTEXT need a protocol map entry, which is checked there.
      if (text === "PLAINTEXT") return;
      throw refusal(setting, "names a listener this broker does not have (only PLAINTEXT)");
    default:
      throw refusal(setting, `asks for ${feature(key)}, which this build of Quill does not ` +
        "provide");
  }
}

function checkProtocolMap(setting: SecuritySetting): void {
  for (const entry of setting.value.split(",")) {
    const parts = entry.trim().split(":");
    const [name = "", protocol = ""] = parts;
    if (parts.length !== 2 || name.trim() === "") {
      throw refusal(setting, "expected LISTENER_NAME:PROTOCOL pairs separated by commas");
    }
    checkProtocol(setting, protocol.trim());
  }
}

function checkProtocol(setting: SecuritySetting, protocol: string): void {
  if (SUPPORTED_SECURITY_PROTOCOLS.has(protocol)) return;
  if (!KAFKA_SECURITY_PROTOCOLS.has(protocol)) {
    throw refusal(setting, `names the unknown security protocol ${protocol} ` +
      `(Kafka's are ${[...KAFKA_SECURITY_PROTOCOLS].join(", ")})`);
  }
  throw refusal(setting, `asks for the ${protocol} security protocol, which this build of ` +
    `Quill does not provide (it has ${[...SUPPORTED_SECURITY_PROTOCOLS].join(", ")})`);
}

function feature(key: string): string {
  if (key.startsWith("ssl.")) return "TLS";
  if (key.startsWith("sasl.") || key === "connections.max.reauth.ms") return "SASL authentication";
  if (key.startsWith("delegation.token.")) return "delegation tokens";
  if (key.startsWith("listener.name.")) return "per-listener security settings";
  if (key === "principal.builder.class" || key === "security.providers") {
    return "a pluggable security class";
  }
  return "authorization (ACLs)";
}

function refusal(setting: SecuritySetting, why: string): ConfigError {
  const quoted = JSON.stringify(setting.value);
  return new ConfigError(`refusing to start: security config ${setting.key}=${quoted} ` +
    `(from ${setting.source}) ${why}; remove it, or the broker would run unprotected`);
}
