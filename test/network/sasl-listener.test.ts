/**
 * SASL_PLAINTEXT (PLAIN and SCRAM-SHA-512) and SASL_SSL (SCRAM-SHA-512) listeners: kafkajs and
 * kcat authenticate, produce and consume in a group; wrong passwords, random tokens, requests
 * before authentication and a missing handshake are each refused with a closed connection while
 * the broker serves others.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { pbkdf2Sync } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Kafka, logLevel, type SASLOptions } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { scramCredential } from "../../src/security/scram.ts";
import { LocalScramCredentialStore } from "../../src/security/scram-credential-store.ts";
import { kcat, kcatOk, stdoutText } from "../e2e/kcat-process.ts";
import {
  type InProcessBroker,
  removeDir,
  startInProcessBroker,
} from "../support/broker-harness.ts";
import { KafkaClient, requestOnce } from "../support/kafka-client.ts";
import { makeCertificates, type TestCertificates } from "../support/tls-certificates.ts";

let certs: TestCertificates;
let broker: InProcessBroker;
const port = (name: string) => broker.broker.listeners.find((l) => l.listenerName === name)!.port;

beforeAll(async () => {
  certs = makeCertificates();
  const dataDir = mkdtempSync(join(tmpdir(), "quill-sasl-"));
  // As kafka-configs.sh --alter --add-config 'SCRAM-SHA-512=[password=…]' would store it.
  await new LocalScramCredentialStore(dataDir).set(
    "alice",
    "SCRAM-SHA-512",
    scramCredential("SCRAM-SHA-512", "alice-secret", 4096),
  );
  broker = await startInProcessBroker({
    dataDir,
    settings: {
      listeners: "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
      "sasl.enabled.mechanisms": "SCRAM-SHA-512",
      "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config":
        "org.apache.kafka.common.security.plain.PlainLoginModule required " +
        'username="admin" password="admin-secret" user_admin="admin-secret" user_bob="bob-secret";',
      "ssl.keystore.location": certs.serverKeystore,
      "num.partitions": "2",
    },
  });
}, 60_000);

afterAll(async () => {
  await broker.stop();
  removeDir(broker.dataDir);
  removeDir(certs.dir);
});

async function produceAndConsume(listener: string, sasl: SASLOptions, topic: string, tls = false) {
  const kafka = new Kafka({
    clientId: "sasl-test",
    brokers: [`127.0.0.1:${port(listener)}`],
    logLevel: logLevel.NOTHING,
    sasl,
    ssl: tls ? { ca: [readFileSync(certs.caPem, "utf8")], servername: "localhost" } : false,
  });
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({
    topic,
    acks: -1,
    messages: Array.from({ length: 20 }, (_, i) => ({ key: `k${i}`, value: `v${i}` })),
  });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: `${topic}-group` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = new Set<string>();
  await new Promise<void>((resolve) => {
    void consumer.run({
      eachMessage: async ({ message }) => {
        seen.add(String(message.value));
        if (seen.size === 20) resolve();
      },
    });
  });
  await consumer.disconnect();
  expect(seen.size).toBe(20);
}

describe("SASL listeners", () => {
  test("kafkajs: PLAIN and SCRAM-SHA-512 on SASL_PLAINTEXT, SCRAM-SHA-512 on SASL_SSL", async () => {
    await produceAndConsume(
      "SASL_PLAINTEXT",
      { mechanism: "plain", username: "bob", password: "bob-secret" },
      "sasl-plain",
    );
    await produceAndConsume(
      "SASL_PLAINTEXT",
      { mechanism: "scram-sha-512", username: "alice", password: "alice-secret" },
      "sasl-scram",
    );
    await produceAndConsume(
      "SASL_SSL",
      { mechanism: "scram-sha-512", username: "alice", password: "alice-secret" },
      "sasl-ssl-scram",
      true,
    );
  }, 90_000);

  test("kcat with SCRAM-SHA-512 over SASL_SSL produces and consumes", async () => {
    const args = [
      "-X",
      "security.protocol=sasl_ssl",
      "-X",
      `ssl.ca.location=${certs.caPem}`,
      "-X",
      "sasl.mechanisms=SCRAM-SHA-512",
      "-X",
      "sasl.username=alice",
      "-X",
      "sasl.password=alice-secret",
    ];
    const bootstrap = `127.0.0.1:${port("SASL_SSL")}`;
    await kcatOk(bootstrap, [...args, "-t", "kcat-scram", "-P"], { stdin: "one\ntwo\nthree\n" });
    const out = await kcatOk(bootstrap, [...args, "-t", "kcat-scram", "-C", "-e", "-f", "%s\n"]);
    expect(
      stdoutText(out)
        .split("\n")
        .filter((l) => l !== "")
        .sort(),
    ).toEqual(["one", "three", "two"]);
    const wrong = args.map((a) => (a === "sasl.password=alice-secret" ? "sasl.password=nope" : a));
    const refused = await kcat(bootstrap, [...wrong, "-L", "-m", "3"]);
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain(
      "Authentication failed during authentication due to invalid " +
        "credentials with SASL mechanism SCRAM-SHA-512",
    );
  }, 60_000);

  test("wrong password, random tokens, no handshake, requests before authentication: refused", async () => {
    const saslPort = port("SASL_PLAINTEXT");
    const handshake = async (client: KafkaClient, mechanism: string) =>
      client.request(ApiKey.SaslHandshake, 1, { mechanism });
    const wrong = await KafkaClient.connect(saslPort);
    expect((await handshake(wrong, "PLAIN")).errorCode).toBe(ErrorCode.NONE);
    const answer = await wrong.request(ApiKey.SaslAuthenticate, 2, {
      authBytes: new TextEncoder().encode("\u0000bob\u0000wrong"),
    });
    expect(answer.errorCode).toBe(ErrorCode.SASL_AUTHENTICATION_FAILED);
    expect(answer.errorMessage).toBe("Authentication failed: Invalid username or password");
    await expect(wrong.request(ApiKey.Metadata, 12, { topics: [] })).rejects.toThrow();

    for (const mechanism of ["PLAIN", "SCRAM-SHA-512"]) {
      const random = await KafkaClient.connect(saslPort);
      await handshake(random, mechanism);
      const junk = await random.request(ApiKey.SaslAuthenticate, 2, {
        authBytes: crypto.getRandomValues(new Uint8Array(200)),
      });
      expect(junk.errorCode).toBe(ErrorCode.SASL_AUTHENTICATION_FAILED);
    }
    const unsupported = await KafkaClient.connect(saslPort);
    const gssapi = await handshake(unsupported, "GSSAPI");
    expect(gssapi.errorCode).toBe(ErrorCode.UNSUPPORTED_SASL_MECHANISM);
    expect(gssapi.mechanisms).toEqual(["PLAIN", "SCRAM-SHA-512"]);

    const early = await KafkaClient.connect(saslPort);
    await expect(early.request(ApiKey.Metadata, 12, { topics: [] })).rejects.toThrow();
    const noHandshake = await KafkaClient.connect(saslPort);
    const illegal = await noHandshake.request(ApiKey.SaslAuthenticate, 2, {
      authBytes: new Uint8Array(3),
    });
    expect(illegal.errorCode).toBe(ErrorCode.ILLEGAL_SASL_STATE);
    // A plaintext client on the SASL_SSL port.
    await expect(
      requestOnce(port("SASL_SSL"), ApiKey.Metadata, 12, { topics: [] }),
    ).rejects.toThrow();
    expect(broker.logger.lines.join("\n")).toContain("before SASL authentication");
    const others = await requestOnce(port("PLAINTEXT"), ApiKey.Metadata, 12, { topics: [] });
    expect(others.brokers.length).toBe(1);
  }, 60_000);

  test("Alter/DescribeUserScramCredentials: a user made over the wire authenticates, then is deleted", async () => {
    const plain = port("PLAINTEXT");
    const salt = crypto.getRandomValues(new Uint8Array(24));
    const saltedPassword = new Uint8Array(pbkdf2Sync("carol-secret", salt, 8192, 64, "sha512"));
    const upsert = { name: "carol", mechanism: 2, iterations: 8192, salt, saltedPassword };
    const altered = await requestOnce(plain, ApiKey.AlterUserScramCredentials, 0, {
      deletions: [{ name: "nobody", mechanism: 2 }],
      upsertions: [upsert, { ...upsert, name: "dave", iterations: 100 }],
    });
    expect(altered.results.map((r) => [r.user, r.errorCode])).toEqual([
      ["nobody", ErrorCode.RESOURCE_NOT_FOUND],
      ["carol", ErrorCode.NONE],
      ["dave", ErrorCode.UNACCEPTABLE_CREDENTIAL],
    ]);
    const described = await requestOnce(plain, ApiKey.DescribeUserScramCredentials, 0, {
      users: [{ name: "carol" }, { name: "dave" }],
    });
    expect(described.results.map((r) => [r.user, r.errorCode, r.credentialInfos])).toEqual([
      ["carol", ErrorCode.NONE, [{ mechanism: 2, iterations: 8192 }]],
      ["dave", ErrorCode.RESOURCE_NOT_FOUND, []],
    ]);
    await produceAndConsume(
      "SASL_PLAINTEXT",
      { mechanism: "scram-sha-512", username: "carol", password: "carol-secret" },
      "sasl-carol",
    );
    const deleted = await requestOnce(plain, ApiKey.AlterUserScramCredentials, 0, {
      deletions: [{ name: "carol", mechanism: 2 }],
      upsertions: [],
    });
    expect(deleted.results[0]!.errorCode).toBe(ErrorCode.NONE);
    const kafka = new Kafka({
      clientId: "gone",
      brokers: [`127.0.0.1:${port("SASL_PLAINTEXT")}`],
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
      sasl: { mechanism: "scram-sha-512", username: "carol", password: "carol-secret" },
    });
    const admin = kafka.admin();
    await expect(admin.connect()).rejects.toThrow();
  }, 60_000);
});
