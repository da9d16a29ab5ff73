/**
 * A TLS listener's certificate changed through the admin API, as Kafka does it: Kafka 3.9's own
 * `kafka-configs.sh --entity-type brokers --alter --add-config
 * listener.name.ssl.ssl.keystore.location=…` (over the PLAINTEXT listener) makes new TLS
 * connections get the new certificate without a restart; a key store that cannot be loaded, or
 * whose certificate names another subject, is refused with INVALID_CONFIG and the old one stays;
 * the PEM forms (`ssl.keystore.certificate.chain`, `ssl.keystore.key`) work through
 * IncrementalAlterConfigs too.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as tls from "node:tls";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import {
  type InProcessBroker,
  removeDir,
  startInProcessBroker,
} from "../support/broker-harness.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { makeCertificates, type TestCertificates } from "../support/tls-certificates.ts";
import { kafkaClasspath, runKafkaTool } from "./kafka-tool.ts";

let certs: TestCertificates;
let broker: InProcessBroker;
let sslPort: number;
let plainPort: number;

/** A copy of the server key store as it is now (renewServer writes over the files). */
function keepKeystore(name: string): { path: string; key: string; cert: string } {
  const path = join(certs.dir, `${name}-keystore.pem`);
  writeFileSync(path, readFileSync(certs.serverKeystore));
  return {
    path,
    key: readFileSync(certs.serverKey, "utf8"),
    cert: readFileSync(certs.serverCert, "utf8"),
  };
}

let first: ReturnType<typeof keepKeystore>;

beforeAll(async () => {
  certs = makeCertificates();
  first = keepKeystore("first");
  await kafkaClasspath();
  broker = await startInProcessBroker({
    settings: {
      listeners: "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
      "listener.name.ssl.ssl.keystore.type": "PEM",
      "listener.name.ssl.ssl.keystore.certificate.chain": first.cert,
      "listener.name.ssl.ssl.keystore.key": first.key,
    },
  });
  plainPort = broker.broker.listeners[0]!.port;
  sslPort = broker.broker.listeners[1]!.port;
}, 120_000);

afterAll(async () => {
  await broker?.stop();
  removeDir(certs.dir);
});

/** The serial number of the certificate a new TLS connection to the SSL listener is shown. */
function servedSerial(): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: "127.0.0.1", port: sslPort, rejectUnauthorized: false });
    socket.once("secureConnect", () => {
      const serial = socket.getPeerCertificate().serialNumber;
      socket.destroy();
      resolve(serial.toUpperCase());
    });
    socket.once("error", reject);
  });
}

function serialOf(certPem: string): string {
  return new X509Certificate(certPem).serialNumber.toUpperCase();
}

/** kafka-configs.sh --alter on this broker, over its PLAINTEXT listener. */
function alter(config: string) {
  return runKafkaTool("kafka.admin.ConfigCommand", [
    "--bootstrap-server",
    `127.0.0.1:${plainPort}`,
    "--entity-type",
    "brokers",
    "--entity-name",
    String(broker.broker.services.brokerId),
    "--alter",
    "--add-config",
    config,
  ]);
}

test("kafka-configs.sh changes a listener's key store: new connections get the new certificate", async () => {
  expect(await servedSerial()).toBe(serialOf(first.cert));
  certs.renewServer("localhost");
  const second = keepKeystore("second");
  expect(serialOf(second.cert)).not.toBe(serialOf(first.cert));
  const run = await alter(`listener.name.ssl.ssl.keystore.location=${second.path}`);
  expect(run.stdout + run.stderr).toContain("Completed updating config for broker");
  expect(run.code).toBe(0);
  expect(await servedSerial()).toBe(serialOf(second.cert));

  // A key store that cannot be loaded is refused; the one in use stays.
  const broken = join(certs.dir, "broken-keystore.pem");
  writeFileSync(broken, "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n");
  const bad = await alter(`listener.name.ssl.ssl.keystore.location=${broken}`);
  expect(bad.code).not.toBe(0);
  expect(bad.stdout + bad.stderr).toContain("InvalidConfigurationException");
  expect(await servedSerial()).toBe(serialOf(second.cert));

  // So is a certificate for another subject (Kafka's SslFactory keeps the identity).
  certs.renewServer("someone-else");
  const other = keepKeystore("other");
  const refused = await alter(`listener.name.ssl.ssl.keystore.location=${other.path}`);
  expect(refused.code).not.toBe(0);
  expect(refused.stdout + refused.stderr).toContain("do not match");
  expect(await servedSerial()).toBe(serialOf(second.cert));
}, 120_000);

test("the PEM forms change the certificate too, and a key that does not fit it is refused", async () => {
  certs.renewServer("localhost");
  const third = keepKeystore("third");
  const prefix = "listener.name.ssl.ssl.keystore.";
  const alterPem = (key: string, cert: string) =>
    requestOnce(plainPort, ApiKey.IncrementalAlterConfigs, 1, {
      resources: [
        {
          resourceType: 4,
          resourceName: String(broker.broker.services.brokerId),
          configs: [
            { name: `${prefix}location`, configOperation: 1, value: null },
            { name: `${prefix}key`, configOperation: 0, value: key },
            { name: `${prefix}certificate.chain`, configOperation: 0, value: cert },
          ],
        },
      ],
      validateOnly: false,
    });
  const mismatched = await alterPem(first.key, third.cert);
  expect(mismatched.responses[0]!.errorCode).toBe(ErrorCode.INVALID_CONFIG);
  expect(await servedSerial()).not.toBe(serialOf(third.cert));
  const done = await alterPem(third.key, third.cert);
  expect(done.responses[0]!.errorCode).toBe(ErrorCode.NONE);
  expect(await servedSerial()).toBe(serialOf(third.cert));
  // The private key is never shown (DescribeConfigs, as Kafka hides password keys).
  const described = await requestOnce(plainPort, ApiKey.DescribeConfigs, 4, {
    resources: [
      {
        resourceType: 4,
        resourceName: String(broker.broker.services.brokerId),
        configurationKeys: null,
      },
    ],
    includeSynonyms: false,
    includeDocumentation: false,
  });
  const entry = described.results[0]!.configs.find((c) => c.name === `${prefix}key`);
  expect(entry).toMatchObject({ value: null, isSensitive: true });
}, 60_000);
