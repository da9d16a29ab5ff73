// The SASL_SSL listener both brokers get for the TLS rows (workload ids ending in `-tls`): one
// throwaway CA and server certificate for 127.0.0.1, made with openssl at the start of the run,
// the same listener keys on both brokers, and one SCRAM-SHA-512 user that every TLS client logs
// in as. SCRAM-SHA-512 rather than PLAIN because it is what a SASL_SSL deployment uses (the
// password never crosses the wire, the mechanism the security tests run every client with), and
// its cost is per connection only: the rows measure TLS on the data path either way.
import { mkdirSync, rmSync } from "node:fs";
import { scramCredential } from "../../src/security/scram.ts";
import { LocalScramCredentialStore } from "../../src/security/scram-credential-store.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { makeCertificates } from "../../test/support/tls-certificates.ts";
import { runCommand } from "../bench-common.ts";

export const SASL_SSL_MECHANISM = "SCRAM-SHA-512";
/** kafka-configs.sh's default iteration count, given explicitly to both brokers. */
const SCRAM_ITERATIONS = 4096;
const CONFIG_COMMAND_TIMEOUT_MS = 120_000;

/** What the brokers serve and the clients trust and log in with. */
export interface SaslSsl {
  readonly caPem: string;
  /** Server key and certificate chain in one PEM file (ssl.keystore.type=PEM). */
  readonly keystore: string;
  readonly username: string;
  readonly password: string;
  /** Removes the certificates. */
  remove(): void;
}

/** A CA and a server certificate for 127.0.0.1/localhost in a temp dir (openssl). */
export function makeSaslSsl(): SaslSsl {
  const certs = makeCertificates();
  return {
    caPem: certs.caPem,
    keystore: certs.serverKeystore,
    username: "bench",
    password: "bench-secret",
    remove: () => rmSync(certs.dir, { recursive: true, force: true }),
  };
}

/**
 * The keys of the SASL_SSL listener, the same for Kafka and Quill (the caller adds it to
 * `listeners`). The PLAINTEXT listener stays for the harness's probes and topic creation and
 * carries Kafka's inter-broker traffic (none with one broker).
 */
export function saslSslBrokerSettings(s: SaslSsl): Record<string, string> {
  return {
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.name.sasl_ssl.sasl.enabled.mechanisms": SASL_SSL_MECHANISM,
    "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
      "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    "listener.name.sasl_ssl.ssl.keystore.type": "PEM",
    "listener.name.sasl_ssl.ssl.keystore.location": s.keystore,
    "listener.name.sasl_ssl.ssl.client.auth": "none",
  };
}

/**
 * Kafka's way for a ZooKeeper-mode broker: `kafka-configs.sh --zookeeper ... --alter
 * --add-config 'SCRAM-SHA-512=[...]' --entity-type users` before the broker starts, so the
 * credential is loaded at start-up. The tool does not create the chroot; the broker would.
 */
export async function addKafkaUser(
  s: SaslSsl,
  classpath: string,
  zookeeperConnect: string,
  chroot: string,
): Promise<void> {
  const zk = await ZooKeeperClient.connect(zookeeperConnect, {
    sessionTimeoutMs: 10_000,
    connectTimeoutMs: 10_000,
  });
  try {
    await zk.create(`/${chroot}`).catch(() => {});
  } finally {
    await zk.close();
  }
  await runCommand(
    [
      "java",
      "-Xmx256m",
      "-cp",
      classpath,
      "kafka.admin.ConfigCommand",
      "--zookeeper",
      `${zookeeperConnect}/${chroot}`,
      "--alter",
      "--add-config",
      `${SASL_SSL_MECHANISM}=[iterations=${SCRAM_ITERATIONS},password=${s.password}]`,
      "--entity-type",
      "users",
      "--entity-name",
      s.username,
    ],
    CONFIG_COMMAND_TIMEOUT_MS,
  );
}

/** Quill's embedded store: `scram-credentials.json` in the first log dir, before the start. */
export async function addQuillUser(s: SaslSsl, dataDir: string): Promise<void> {
  const credential = scramCredential(SASL_SSL_MECHANISM, s.password, SCRAM_ITERATIONS);
  mkdirSync(dataDir, { recursive: true });
  await new LocalScramCredentialStore(dataDir).set(s.username, SASL_SSL_MECHANISM, credential);
}

/** librdkafka settings of a SASL_SSL client. */
export function rdkafkaSaslSslSettings(s: SaslSsl): string[] {
  return [
    "security.protocol=SASL_SSL",
    `sasl.mechanisms=${SASL_SSL_MECHANISM}`,
    `sasl.username=${s.username}`,
    `sasl.password=${s.password}`,
    `ssl.ca.location=${s.caPem}`,
  ];
}

/** Java client properties of a SASL_SSL client (a --producer.config / --consumer.config file). */
export function javaSaslSslProperties(s: SaslSsl): string {
  return [
    "security.protocol=SASL_SSL",
    `sasl.mechanism=${SASL_SSL_MECHANISM}`,
    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required " +
      `username="${s.username}" password="${s.password}";`,
    "ssl.truststore.type=PEM",
    `ssl.truststore.location=${s.caPem}`,
    "",
  ].join("\n");
}
