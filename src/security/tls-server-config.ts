/**
 * What a TLS listener needs, built from Kafka's ssl.* keys as they apply to that listener: the
 * PEM key and certificate chain, the trusted CAs, the TLS versions, whether client certificates
 * are asked for, and the principal mapping. Files are read here, once per start or reload, so
 * a missing or unreadable file stops the start with a message naming the key.
 */
import { readFileSync } from "node:fs";
import type { TLSOptions } from "bun";
import { ConfigError } from "../config/config-error.ts";
import type { SslSettings } from "../config/listener-config.ts";
import type { SslClientAuth } from "../config/ssl-config-keys.ts";
import { PrincipalMappingError, SslPrincipalMapper } from "./ssl-principal-mapper.ts";

export interface TlsServerConfig {
  readonly options: TLSOptions;
  readonly clientAuth: SslClientAuth;
  readonly principalMapper: SslPrincipalMapper;
}

/** OpenSSL's SSL_OP_NO_* bits, so only the versions in ssl.enabled.protocols are offered. */
const SSL_OP_NO_TLSv1 = 0x04000000;
const SSL_OP_NO_TLSv1_1 = 0x10000000;
const SSL_OP_NO_TLSv1_2 = 0x08000000;
const SSL_OP_NO_TLSv1_3 = 0x20000000;

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;

function pemBlocks(text: string, kind: (label: string) => boolean): string {
  return [...text.matchAll(PEM_BLOCK)]
    .filter((m) => kind(m[1]!))
    .map((m) => m[0])
    .join("\n");
}

const isKey = (label: string) => label.endsWith("PRIVATE KEY");
const isCertificate = (label: string) => label === "CERTIFICATE";

function readPem(key: string, path: string, listenerName: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new ConfigError(`cannot read ${key}=${path} for listener ${listenerName}: ${reason}`);
  }
}

/** Throws a ConfigError naming the key when the settings cannot make a TLS listener. */
export function tlsServerConfig(ssl: SslSettings, listenerName: string): TlsServerConfig {
  const missing = (what: string) =>
    new ConfigError(
      `listener ${listenerName} speaks TLS but ` +
        `${what}; set ssl.keystore.location, or ssl.keystore.certificate.chain and ` +
        "ssl.keystore.key " +
        `(or their listener.name.${listenerName.toLowerCase()}. forms)`,
    );
  let key: string;
  let cert: string;
  if (ssl["ssl.keystore.location"] !== null) {
    const text = readPem("ssl.keystore.location", ssl["ssl.keystore.location"], listenerName);
    key = pemBlocks(text, isKey);
    cert = pemBlocks(text, isCertificate);
    if (key === "" || cert === "") {
      throw missing(`${ssl["ssl.keystore.location"]} lacks a PEM private key or certificate`);
    }
  } else {
    key = pemBlocks(ssl["ssl.keystore.key"] ?? "", isKey);
    cert = pemBlocks(ssl["ssl.keystore.certificate.chain"] ?? "", isCertificate);
    if (key === "" || cert === "") throw missing("no key store is configured");
  }
  const trustText =
    ssl["ssl.truststore.location"] !== null
      ? readPem("ssl.truststore.location", ssl["ssl.truststore.location"], listenerName)
      : (ssl["ssl.truststore.certificates"] ?? "");
  const ca = pemBlocks(trustText, isCertificate);
  const clientAuth = ssl["ssl.client.auth"];
  if (clientAuth !== "none" && ca === "") {
    throw new ConfigError(
      `listener ${listenerName} has ssl.client.auth=${clientAuth} but no ` +
        "trusted certificates (ssl.truststore.location or ssl.truststore.certificates)",
    );
  }
  const protocols = ssl["ssl.enabled.protocols"];
  const secureOptions =
    SSL_OP_NO_TLSv1 |
    SSL_OP_NO_TLSv1_1 |
    (protocols.includes("TLSv1.2") ? 0 : SSL_OP_NO_TLSv1_2) |
    (protocols.includes("TLSv1.3") ? 0 : SSL_OP_NO_TLSv1_3);
  let principalMapper: SslPrincipalMapper;
  try {
    principalMapper = SslPrincipalMapper.fromRules(ssl["ssl.principal.mapping.rules"]);
  } catch (error) {
    if (!(error instanceof PrincipalMappingError)) throw error;
    throw new ConfigError(
      `invalid config ssl.principal.mapping.rules for listener ` +
        `${listenerName}: ${error.message}`,
    );
  }
  const options: TLSOptions = {
    key,
    cert,
    secureOptions,
    ...(ssl["ssl.key.password"] === null ? {} : { passphrase: ssl["ssl.key.password"] }),
    ...(ca === "" ? {} : { ca }),
    // The certificate is checked in the handshake callback, so each auth mode can decide.
    requestCert: clientAuth !== "none",
    rejectUnauthorized: false,
  };
  return { options, clientAuth, principalMapper };
}
