/**
 * A configuration problem the operator must fix: a bad value, an unreadable file, a flag that
 * does not exist. The message is complete on its own (key, source, value and what was
 * expected), because `quill serve` prints exactly this one line and exits before binding.
 */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/**
 * A dynamic config that names key material which cannot be used (a key store that does not load,
 * a certificate for another identity): Kafka's AlterConfigs answers it INVALID_CONFIG.
 */
export class InvalidKeyStoreError extends ConfigError {}

/** Where a config value came from, for error messages and DescribeConfigs' config source. */
export interface ConfigOrigin {
  readonly kind: "default" | "file" | "env" | "flag";
  /** Label used in messages: `--set`, `QUILL_LOG_DIRS`, `server.properties:12`, `default`. */
  readonly label: string;
}

export const DEFAULT_ORIGIN: ConfigOrigin = { kind: "default", label: "default" };

/** The one message for every bad value, so each names the key, the value and its source. */
export function invalidValue(key: string, value: string, source: string, expected: string) {
  const quoted = JSON.stringify(value);
  return new ConfigError(`invalid config ${key}=${quoted} (from ${source}): expected ${expected}`);
}
