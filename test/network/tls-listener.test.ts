/**
 * A broker with an SSL listener (client certificates required, PEM key store) beside a PLAINTEXT
 * one: kcat with a client certificate and kafkajs over TLS produce and consume (a fetch larger
 * than the 1 MiB copy buffer, since TLS cannot use sendfile); every bad handshake is a clean
 * refusal while others are served; certificates are reloaded without a restart.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { Kafka, logLevel } from "kafkajs";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { kcat, kcatOk, stdoutText } from "../e2e/kcat-process.ts";
import {
  type InProcessBroker,
  removeDir,
  startInProcessBroker,
} from "../support/broker-harness.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { makeCertificates, type TestCertificates } from "../support/tls-certificates.ts";

let certs: TestCertificates;
let broker: InProcessBroker;
let sslPort: number;
let plainPort: number;

beforeAll(async () => {
  certs = makeCertificates();
  broker = await startInProcessBroker({
    settings: {
      listeners: "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
      "ssl.keystore.type": "PEM",
      "ssl.keystore.location": certs.serverKeystore,
      "ssl.truststore.location": certs.caPem,
      "ssl.client.auth": "required",
      "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/L,DEFAULT",
      "num.partitions": "1",
    },
  });
  plainPort = broker.broker.listeners[0]!.port;
  sslPort = broker.broker.listeners[1]!.port;
}, 60_000);

afterAll(async () => {
  await broker.stop();
  removeDir(certs.dir);
});

const sslArgs = (client: { cert: string; key: string }) => [
  "-X",
  "security.protocol=ssl",
  "-X",
  `ssl.ca.location=${certs.caPem}`,
  "-X",
  `ssl.certificate.location=${client.cert}`,
  "-X",
  `ssl.key.location=${client.key}`,
];

/** openssl s_client against a TLS port; resolves with its exit code and output. */
async function sClient(port: number, args: string[]): Promise<{ code: number; output: string }> {
  const proc = Bun.spawn(
    ["openssl", "s_client", "-connect", `127.0.0.1:${port}`, "-CAfile", certs.caPem, ...args],
    { stdin: "ignore", stdout: "pipe", stderr: "pipe" },
  );
  const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  return { code, output: out + err };
}

async function stillServes(): Promise<void> {
  const answer = await requestOnce(plainPort, ApiKey.Metadata, 12, { topics: [] });
  expect(answer.brokers.length).toBe(1);
}

describe("SSL listener", () => {
  test("kcat with a client certificate produces and consumes 3 MB through TLS", async () => {
    const alice = certs.client("alice", "/O=Quill/CN=Alice");
    const value = "x".repeat(1000);
    const lines = Array.from({ length: 3000 }, (_, i) => `${i}:${value}`).join("\n") + "\n";
    await kcatOk(`127.0.0.1:${sslPort}`, [...sslArgs(alice), "-t", "tls-kcat", "-P", "-z", "lz4"], {
      stdin: lines,
      timeoutMs: 60_000,
    });
    const consumed = await kcatOk(
      `127.0.0.1:${sslPort}`,
      [...sslArgs(alice), "-t", "tls-kcat", "-C", "-e", "-o", "beginning", "-f", "%s\n"],
      { timeoutMs: 60_000 },
    );
    expect(stdoutText(consumed)).toBe(lines);
    // Metadata through the SSL listener names the SSL endpoint.
    const listing = stdoutText(await kcatOk(`127.0.0.1:${sslPort}`, [...sslArgs(alice), "-L"]));
    expect(listing).toContain(`127.0.0.1:${sslPort}`);
    expect(listing).not.toContain(`127.0.0.1:${plainPort}`);
  }, 120_000);

  test("kafkajs over TLS produces and consumes in a group", async () => {
    const bob = certs.client("bob", "/CN=bob");
    const kafka = new Kafka({
      clientId: "tls-test",
      brokers: [`127.0.0.1:${sslPort}`],
      logLevel: logLevel.NOTHING,
      ssl: {
        ca: [readFileSync(certs.caPem, "utf8")],
        cert: readFileSync(bob.cert, "utf8"),
        key: readFileSync(bob.key, "utf8"),
        servername: "localhost",
      },
    });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic: "tls-kafkajs",
      acks: -1,
      messages: Array.from({ length: 50 }, (_, i) => ({ key: `k${i}`, value: `v${i}` })),
    });
    await producer.disconnect();
    const consumer = kafka.consumer({ groupId: "tls-group" });
    await consumer.connect();
    await consumer.subscribe({ topic: "tls-kafkajs", fromBeginning: true });
    const seen: string[] = [];
    const done = new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          seen.push(String(message.value));
          if (seen.length === 50) resolve();
        },
      });
    });
    await done;
    await consumer.disconnect();
    expect(seen).toEqual(Array.from({ length: 50 }, (_, i) => `v${i}`));
  }, 60_000);

  test("refused cleanly: no, untrusted or expired client certificate; plaintext on TLS; TLS on plaintext", async () => {
    const none = await kcat(`127.0.0.1:${sslPort}`, [
      "-X",
      "security.protocol=ssl",
      "-X",
      `ssl.ca.location=${certs.caPem}`,
      "-L",
      "-m",
      "3",
    ]);
    expect(none.exitCode).not.toBe(0);
    const untrusted = certs.client("mallory", "/CN=mallory", { ca: "other" });
    expect(
      (await kcat(`127.0.0.1:${sslPort}`, [...sslArgs(untrusted), "-L", "-m", "3"])).exitCode,
    ).not.toBe(0);
    const expired = certs.client("old", "/CN=old", { expired: true });
    await Bun.sleep(1100);
    expect(
      (await kcat(`127.0.0.1:${sslPort}`, [...sslArgs(expired), "-L", "-m", "3"])).exitCode,
    ).not.toBe(0);
    // A plaintext Kafka client on the TLS port, a TLS client on the plaintext port.
    await expect(requestOnce(sslPort, ApiKey.Metadata, 12, { topics: [] })).rejects.toThrow();
    const alice = certs.client("alice2", "/CN=alice");
    const tlsOnPlain = await kcat(`127.0.0.1:${plainPort}`, [...sslArgs(alice), "-L", "-m", "3"]);
    expect(tlsOnPlain.exitCode).not.toBe(0);
    const log = broker.logger.lines.join("\n");
    expect(log).toContain("no client certificate (required)");
    expect(log).toContain("client certificate not trusted");
    expect(log).toContain("TLS handshake failed");
    await stillServes();
  }, 60_000);

  test("certificates reload on request: new connections get the new one, the port keeps serving", async () => {
    const alice = certs.client("alice3", "/CN=alice");
    const before = await sClient(sslPort, ["-cert", alice.cert, "-key", alice.key]);
    expect(before.output).toContain("subject=CN = localhost");
    certs.renewServer("renewed.localhost");
    expect(broker.broker.reloadCertificates()).toEqual(["SSL"]);
    const after = await sClient(sslPort, ["-cert", alice.cert, "-key", alice.key]);
    expect(after.output).toContain("subject=CN = renewed.localhost");
    await kcatOk(`127.0.0.1:${sslPort}`, [...sslArgs(alice), "-L"]);
  }, 60_000);
});

test("listener.name.<l>. settings: TLS 1.2 only and no client certificates on one listener", async () => {
  const other = await startInProcessBroker({
    settings: {
      listeners: "SSL://127.0.0.1:0",
      "listener.name.ssl.ssl.keystore.location": certs.serverKeystore,
      "listener.name.ssl.ssl.enabled.protocols": "TLSv1.2",
    },
  });
  try {
    const port = other.broker.listeners[0]!.port;
    const tls13 = await sClient(port, ["-tls1_3"]);
    expect(tls13.output).not.toContain("New, TLSv1.3");
    const tls12 = await sClient(port, ["-tls1_2"]);
    expect(tls12.output).toContain("New, TLSv1.2");
    await kcatOk(`127.0.0.1:${port}`, [
      "-X",
      "security.protocol=ssl",
      "-X",
      `ssl.ca.location=${certs.caPem}`,
      "-L",
    ]);
  } finally {
    await other.stop();
  }
}, 60_000);
