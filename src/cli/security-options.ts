/**
 * TLS and SASL settings of the client commands, named as Kafka's clients name them (the keys of
 * a `--command-config` file for kafka-topics.sh and friends), plus librdkafka's names for the
 * same things so a kcat configuration works too. Key material is PEM only: a JKS or PKCS12
 * store is refused with the command that converts it, never read wrongly.
 */
import { existsSync, readFileSync } from "node:fs";
import type { ClientConfig } from "../client/cluster-client.ts";
import { SASL_MECHANISMS, type SaslMechanism } from "../client/sasl-authenticator.ts";
import { UsageError } from "./args.ts";

/** Keys read here; other modules read the rest of the client keys. */
export const SECURITY_KEYS = [
  "security.protocol",
  "sasl.mechanism",
  "sasl.jaas.config",
  "ssl.truststore.location",
  "ssl.truststore.type",
  "ssl.truststore.certificates",
  "ssl.truststore.password",
  "ssl.keystore.location",
  "ssl.keystore.type",
  "ssl.keystore.key",
  "ssl.keystore.certificate.chain",
  "ssl.keystore.password",
  "ssl.key.password",
  "ssl.endpoint.identification.algorithm",
  // librdkafka's (kcat's) names
  "sasl.mechanisms",
  "sasl.username",
  "sasl.password",
  "ssl.ca.location",
  "ssl.certificate.location",
  "ssl.key.location",
] as const;

const PROTOCOLS = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] as const;
const JAAS_MODULES: Readonly<Record<string, string>> = {
  PLAIN: "org.apache.kafka.common.security.plain.PlainLoginModule",
  "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
  "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
};

type Security = Pick<ClientConfig, "tls" | "sasl">;

/** TLS and SASL from the settings; {} for PLAINTEXT. */
export function securityConfig(settings: ReadonlyMap<string, string>): Security {
  const protocol = (settings.get("security.protocol") ?? "PLAINTEXT").toUpperCase();
  if (!(PROTOCOLS as readonly string[]).includes(protocol)) {
    throw new UsageError(
      `security.protocol=${settings.get("security.protocol")}: expected one of ` +
        PROTOCOLS.join(", "),
    );
  }
  const out: { tls?: ClientConfig["tls"]; sasl?: ClientConfig["sasl"] } = {};
  if (protocol === "SSL" || protocol === "SASL_SSL") out.tls = tlsOptions(settings);
  if (protocol.startsWith("SASL_")) out.sasl = saslCredentials(settings);
  return out;
}

function readPem(key: string, path: string): string {
  if (!existsSync(path)) throw new UsageError(`${key}: no file ${path}`);
  const text = readFileSync(path, "utf8");
  if (!text.includes("-----BEGIN ")) {
    throw new UsageError(
      `${key}=${path} is not a PEM file: the quill client reads PEM key material only; ` +
        "convert a JKS or PKCS12 store with `keytool -exportcert -rfc` or " +
        "`openssl pkcs12 -nodes`",
    );
  }
  return text;
}

function checkPemType(settings: ReadonlyMap<string, string>, key: string): void {
  const type = settings.get(key);
  if (type !== undefined && type.toUpperCase() !== "PEM") {
    throw new UsageError(`${key}=${type}: only PEM is supported; convert the store to PEM`);
  }
}

function trustedCertificates(settings: ReadonlyMap<string, string>): string | undefined {
  checkPemType(settings, "ssl.truststore.type");
  if (settings.get("ssl.truststore.password")) {
    throw new UsageError("ssl.truststore.password cannot be given for a PEM trust store");
  }
  const inline = settings.get("ssl.truststore.certificates");
  if (inline !== undefined) return inline;
  for (const key of ["ssl.truststore.location", "ssl.ca.location"]) {
    const path = settings.get(key);
    if (path !== undefined && path !== "") return readPem(key, path);
  }
  return undefined;
}

/** The client's own key and chain (mTLS): one PEM file with both, or inline, or two files. */
function clientKeyPair(settings: ReadonlyMap<string, string>) {
  checkPemType(settings, "ssl.keystore.type");
  const passphrase = settings.get("ssl.key.password") || undefined;
  const location = settings.get("ssl.keystore.location");
  if (location !== undefined && location !== "") {
    const pem = readPem("ssl.keystore.location", location);
    return { cert: pem, key: pem, passphrase };
  }
  const inlineKey = settings.get("ssl.keystore.key");
  const inlineChain = settings.get("ssl.keystore.certificate.chain");
  if (inlineKey !== undefined || inlineChain !== undefined) {
    if (inlineKey === undefined || inlineChain === undefined) {
      throw new UsageError("ssl.keystore.key and ssl.keystore.certificate.chain go together");
    }
    return { cert: inlineChain, key: inlineKey, passphrase };
  }
  const cert = settings.get("ssl.certificate.location");
  const key = settings.get("ssl.key.location");
  if (cert === undefined && key === undefined) return {};
  if (cert === undefined || key === undefined) {
    throw new UsageError("ssl.certificate.location and ssl.key.location go together");
  }
  const keyPem = readPem("ssl.key.location", key);
  return { cert: readPem("ssl.certificate.location", cert), key: keyPem, passphrase };
}

function tlsOptions(settings: ReadonlyMap<string, string>): NonNullable<ClientConfig["tls"]> {
  const algorithm = settings.get("ssl.endpoint.identification.algorithm") ?? "https";
  if (algorithm !== "" && algorithm.toLowerCase() !== "https") {
    throw new UsageError(`ssl.endpoint.identification.algorithm=${algorithm}: use https or ""`);
  }
  return {
    ca: trustedCertificates(settings),
    ...clientKeyPair(settings),
    verifyHostname: algorithm !== "",
  };
}

function saslCredentials(settings: ReadonlyMap<string, string>): NonNullable<Security["sasl"]> {
  const raw = settings.get("sasl.mechanism") ?? settings.get("sasl.mechanisms") ?? "GSSAPI";
  const mechanism = raw.toUpperCase() as SaslMechanism;
  if (!SASL_MECHANISMS.includes(mechanism)) {
    throw new UsageError(
      `sasl.mechanism=${raw}: the quill client speaks ${SASL_MECHANISMS.join(", ")}` +
        (settings.has("sasl.mechanism") ? "" : " (Kafka's default is GSSAPI: set one)"),
    );
  }
  const jaas = settings.get("sasl.jaas.config");
  if (jaas === undefined) {
    const username = settings.get("sasl.username");
    const password = settings.get("sasl.password");
    if (username === undefined || password === undefined) {
      throw new UsageError(`SASL ${mechanism} needs sasl.jaas.config with username and password`);
    }
    return { mechanism, username, password };
  }
  const { module, options } = parseJaasConfig(jaas);
  if (module !== JAAS_MODULES[mechanism]) {
    throw new UsageError(`sasl.jaas.config: ${mechanism} needs ${JAAS_MODULES[mechanism]}`);
  }
  const username = options.get("username");
  const password = options.get("password");
  if (username === undefined || password === undefined) {
    throw new UsageError("sasl.jaas.config: username and password are required");
  }
  return { mechanism, username, password };
}

const JAAS = /^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\b(.*?);?\s*$/s;
const JAAS_OPTION = /\s*([\w.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s";]+))/gy;

/** One login module entry: `Module required key="value" key=value;`, as Kafka's JaasConfig. */
export function parseJaasConfig(text: string): { module: string; options: Map<string, string> } {
  const entry = JAAS.exec(text);
  if (entry === null) {
    throw new UsageError('sasl.jaas.config: expected `LoginModule required key="value" ...;`');
  }
  const options = new Map<string, string>();
  const rest = entry[3]!;
  JAAS_OPTION.lastIndex = 0;
  let match: RegExpExecArray | null;
  let end = 0;
  while ((match = JAAS_OPTION.exec(rest)) !== null) {
    options.set(match[1]!, match[2]?.replace(/\\(.)/g, "$1") ?? match[3]!);
    end = JAAS_OPTION.lastIndex;
  }
  if (rest.slice(end).trim() !== "") {
    throw new UsageError(`sasl.jaas.config: cannot read "${rest.slice(end).trim()}"`);
  }
  return { module: entry[1]!, options };
}
