/**
 * The `quill` client commands over TLS and SASL against a Quill broker with SASL_SSL
 * (SCRAM-SHA-256/512), SASL_PLAINTEXT (PLAIN) and SSL (client certificates required)
 * listeners: settings from a `--command-config` file as Kafka's tools take them, from `-X` and
 * in librdkafka's names; wrong passwords, untrusted servers and JKS stores refused cleanly.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { scramCredential } from "../../src/security/scram.ts";
import { LocalScramCredentialStore } from "../../src/security/scram-credential-store.ts";
import {
  type InProcessBroker,
  removeDir,
  startInProcessBroker,
} from "../support/broker-harness.ts";
import { makeCertificates, type TestCertificates } from "../support/tls-certificates.ts";
import { quill } from "./quill-client.ts";

let certs: TestCertificates;
let broker: InProcessBroker;
const port = (name: string) => broker.broker.listeners.find((l) => l.listenerName === name)!.port;
const bootstrap = (listener: string) => ["-b", `127.0.0.1:${port(listener)}`];

/** A properties file as kafka-topics.sh --command-config reads it. */
function commandConfig(name: string, lines: string[]): string {
  const file = join(certs.dir, `${name}.properties`);
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

const scram = (mechanism: string, user: string, password: string) => [
  "security.protocol=SASL_SSL",
  `sasl.mechanism=${mechanism}`,
  "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\",
  `    username="${user}" password="${password}";`,
  "ssl.truststore.type=PEM",
];

beforeAll(async () => {
  certs = makeCertificates();
  const dataDir = mkdtempSync(join(tmpdir(), "quill-cli-sasl-"));
  const store = new LocalScramCredentialStore(dataDir);
  await store.set("alice", "SCRAM-SHA-512", scramCredential("SCRAM-SHA-512", "alice-pw", 4096));
  await store.set("sam", "SCRAM-SHA-256", scramCredential("SCRAM-SHA-256", "sam-pw", 4096));
  broker = await startInProcessBroker({
    dataDir,
    settings: {
      listeners:
        "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0," +
        "SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
      "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
      "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config":
        "org.apache.kafka.common.security.plain.PlainLoginModule required " +
        'username="admin" password="admin-pw" user_bob="bob-pw";',
      "listener.name.ssl.ssl.client.auth": "required",
      "ssl.keystore.location": certs.serverKeystore,
      "ssl.truststore.location": certs.caPem,
      "ssl.truststore.type": "PEM",
      "num.partitions": "2",
    },
  });
}, 60_000);

afterAll(async () => {
  await broker.stop();
  removeDir(broker.dataDir);
  removeDir(certs.dir);
});

describe("quill client over TLS and SASL", () => {
  test("SASL_SSL with SCRAM-SHA-512 from --command-config: topic, produce, consume, group, cluster, export", async () => {
    const file = commandConfig("alice", [
      ...scram("SCRAM-SHA-512", "alice", "alice-pw"),
      `ssl.truststore.location=${certs.caPem}`,
    ]);
    const c = [...bootstrap("SASL_SSL"), "--command-config", file];
    const run = async (args: string[], stdin?: string) => {
      const r = await quill([...args, ...c], { stdin });
      expect(r.stderr).not.toContain("quill:");
      expect(r.code).toBe(0);
      return r.stdout;
    };
    await run(["topic", "create", "secure", "-p", "2"]);
    await run(["topic", "produce", "secure", "-K", ":"], "a:1\nb:2\nc:3\n");
    const lines = await run(["topic", "consume", "secure", "-e", "-g", "g1", "-f", "%k=%s\n"]);
    expect(lines.trim().split("\n").sort()).toEqual(["a=1", "b=2", "c=3"]);
    const described = JSON.parse(await run(["topic", "describe", "secure", "--format", "json"]));
    expect(described.partitions.length).toBe(2);
    const group = JSON.parse(await run(["group", "describe", "g1", "--format", "json"]));
    expect(group.totalLag).toBe(0);
    const info = JSON.parse(await run(["cluster", "info", "--format", "json"]));
    expect(info.brokers[0].port).toBe(port("SASL_SSL"));
    const out = join(certs.dir, "export");
    const exported = JSON.parse(await run(["export", "secure", "--to", out]));
    const manifest = await Bun.file(exported.manifest).json();
    expect(manifest.files.reduce((n: number, f: { records: number }) => n + f.records, 0)).toBe(3);
  }, 90_000);

  test("SCRAM-SHA-256 with an inline truststore, PLAIN on SASL_PLAINTEXT in librdkafka's names", async () => {
    const pem = (await Bun.file(certs.caPem).text()).trim().replaceAll("\n", "\\n");
    const file = commandConfig("sam", [
      ...scram("SCRAM-SHA-256", "sam", "sam-pw"),
      `ssl.truststore.certificates=${pem}`,
    ]);
    const sam = await quill(["topic", "list", ...bootstrap("SASL_SSL"), "--command-config", file]);
    expect(sam.stderr).toBe("");
    expect(sam.code).toBe(0);
    const plain = ["-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanisms=PLAIN"];
    const bob = ["-X", "sasl.username=bob", "-X", "sasl.password=bob-pw"];
    const r = await quill(["topic", "list", ...bootstrap("SASL_PLAINTEXT"), ...plain, ...bob]);
    expect(r.stderr).toBe("");
    expect(r.stdout).toContain("secure");
  }, 60_000);

  test("SSL with a client certificate (ssl.client.auth=required)", async () => {
    const alice = certs.client("cli-alice", "/CN=alice");
    const keystore = join(certs.dir, "cli-alice-keystore.pem");
    writeFileSync(
      keystore,
      (await Bun.file(alice.key).text()) + (await Bun.file(alice.cert).text()),
    );
    const ssl = ["-X", "security.protocol=SSL", "-X", `ssl.truststore.location=${certs.caPem}`];
    const r = await quill([
      "cluster",
      "info",
      ...bootstrap("SSL"),
      ...ssl,
      "-X",
      `ssl.keystore.location=${keystore}`,
    ]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const without = await quill(["cluster", "info", ...bootstrap("SSL"), ...ssl]);
    expect(without.code).toBe(4);
  }, 60_000);

  test("wrong password, untrusted server, JKS store, no mechanism: clean refusals", async () => {
    const trust = `ssl.truststore.location=${certs.caPem}`;
    const wrong = commandConfig("wrong", [...scram("SCRAM-SHA-512", "alice", "nope"), trust]);
    const denied = await quill([
      "topic",
      "list",
      ...bootstrap("SASL_SSL"),
      "--command-config",
      wrong,
    ]);
    expect(denied.code).toBe(3);
    expect(denied.stderr).toContain("SASL_AUTHENTICATION_FAILED (58)");
    expect(denied.stderr).toContain("what to do: check the user name and password");

    // No truststore: the system's roots do not include the test CA.
    const untrusted = commandConfig("untrusted", scram("SCRAM-SHA-512", "alice", "alice-pw"));
    const refused = await quill([
      "topic",
      "list",
      ...bootstrap("SASL_SSL"),
      "--command-config",
      untrusted,
    ]);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain("TLS handshake with 127.0.0.1");

    const jks = join(certs.dir, "store.jks");
    writeFileSync(jks, new Uint8Array([0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2]));
    const jksRun = await quill([
      "topic",
      "list",
      ...bootstrap("SASL_SSL"),
      "-X",
      "security.protocol=SSL",
      "-X",
      `ssl.truststore.location=${jks}`,
    ]);
    expect(jksRun.code).toBe(2);
    expect(jksRun.stderr).toContain("is not a PEM file");

    const gssapi = await quill(["topic", "list", "-X", "security.protocol=SASL_SSL"]);
    expect(gssapi.code).toBe(2);
    expect(gssapi.stderr).toContain("Kafka's default is GSSAPI");
  }, 60_000);
});
