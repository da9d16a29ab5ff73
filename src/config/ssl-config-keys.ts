import { z } from "zod";
import {
  type ConfigKey,
  key,
  list,
  nullableKey,
  oneOf,
  string,
  type ValueType,
  valueType,
} from "./config-key.ts";

/**
 * Kafka's TLS keys for listeners of the SSL and SASL_SSL protocols. Each may also be set for one
 * listener with Kafka's `listener.name.<listener>.` prefix. Only PEM key and trust stores are
 * read (Kafka's default store type is JKS, which needs a Java key store reader).
 */

export const SSL_PROTOCOLS = ["TLSv1.2", "TLSv1.3"] as const;
export const SSL_CLIENT_AUTH = ["none", "requested", "required"] as const;
export type SslClientAuth = (typeof SSL_CLIENT_AUTH)[number];

/** Key material or a password: DescribeConfigs reports it as sensitive, with no value. */
export const password = (): ValueType<string> =>
  valueType({
    type: "PASSWORD",
    expected: "a non-empty string",
    schema: () => z.string().min(1),
    format: () => "[hidden]",
    refusal: () => ({ value: "[hidden]", reason: "String must be non-empty" }),
  });

export const SSL_CONFIG_KEYS = {
  "ssl.keystore.type": key(
    oneOf(["PEM"]),
    "PEM",
    "Format of the key store: PEM only (Kafka's default is JKS).",
  ),
  "ssl.keystore.location": nullableKey(
    string(),
    "PEM file with the private key and its certificate chain.",
  ),
  "ssl.keystore.certificate.chain": nullableKey(
    password(),
    "The certificate chain in PEM, instead of ssl.keystore.location.",
  ),
  "ssl.keystore.key": nullableKey(
    password(),
    "The private key in PEM, with ssl.keystore.certificate.chain.",
  ),
  "ssl.key.password": nullableKey(password(), "Password of an encrypted private key."),
  "ssl.truststore.type": key(
    oneOf(["PEM"]),
    "PEM",
    "Format of the trust store: PEM only (Kafka's default is JKS).",
  ),
  "ssl.truststore.location": nullableKey(
    string(),
    "PEM file of the CA certificates client certificates are checked against.",
  ),
  "ssl.truststore.certificates": nullableKey(
    password(),
    "The trusted CA certificates in PEM, instead of ssl.truststore.location.",
  ),
  "ssl.enabled.protocols": key(
    list("protocols", { allowed: SSL_PROTOCOLS, minItems: 1 }),
    [...SSL_PROTOCOLS],
    "TLS versions the listener accepts.",
  ),
  "ssl.protocol": key(
    oneOf(["TLSv1.3", "TLSv1.2", "TLS"]),
    "TLSv1.3",
    "Kafka's SSLContext protocol; the versions accepted are ssl.enabled.protocols.",
  ),
  "ssl.client.auth": key(
    oneOf(SSL_CLIENT_AUTH),
    "none",
    "Client certificates: none, requested (checked when sent) or required.",
  ),
  "ssl.principal.mapping.rules": key(
    string(),
    "DEFAULT",
    "Rules (DEFAULT, RULE:pattern/replacement/[LU]) turning a certificate's subject into a " +
      "user name.",
  ),
  "ssl.endpoint.identification.algorithm": key(
    oneOf(["https", ""] as const),
    "https",
    "Host name check of a server certificate by clients of this broker's own connections.",
  ),
} satisfies Record<string, ConfigKey<unknown>>;

export type SslConfigKey = keyof typeof SSL_CONFIG_KEYS;

export const isSslConfigKey = (name: string): name is SslConfigKey =>
  Object.hasOwn(SSL_CONFIG_KEYS, name);
