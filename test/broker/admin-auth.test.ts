// admin.authentication=scram: the admin listener takes HTTP basic logins checked against the
// SCRAM users (a real credential file, a real broker); health checks stay open. With an
// authorizer, the console shows each user only what their ACLs allow a Kafka client.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import {
  type AclBinding,
  OPERATION_ALL,
  PATTERN_LITERAL,
  PERMISSION_ALLOW,
} from "../../src/security/acl.ts";
import { AclOperation, ResourceType } from "../../src/security/authorized-operations.ts";
import { scramCredential } from "../../src/security/scram.ts";
import { LocalScramCredentialStore } from "../../src/security/scram-credential-store.ts";
import { type InProcessBroker, startInProcessBroker, tempDir } from "../support/broker-harness.ts";

let broker: InProcessBroker;
let admin: string;

beforeAll(async () => {
  const dataDir = tempDir();
  const store = new LocalScramCredentialStore(dataDir);
  await store.set("alice", "SCRAM-SHA-256", scramCredential("SCRAM-SHA-256", "wonderland", 4096));
  await store.set("bob", "SCRAM-SHA-512", scramCredential("SCRAM-SHA-512", "builder", 4096));
  broker = await startInProcessBroker({
    dataDir,
    settings: { "admin.listeners": "127.0.0.1:0", "admin.authentication": "scram" },
  });
  admin = `http://127.0.0.1:${broker.broker.adminListeners[0]!.port}`;
}, 60_000);
afterAll(async () => {
  await broker.stop();
});

const basic = (user: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`,
});

test("health checks need no login; metrics and the console need a SCRAM user's password", async () => {
  expect((await fetch(`${admin}/health/live`)).status).toBe(200);
  expect((await fetch(`${admin}/health/ready`)).status).toBe(200);
  expect((await fetch(`${admin}/console`)).status).toBe(401);
  const console = await fetch(`${admin}/console`, { headers: basic("alice", "wonderland") });
  expect(console.status).toBe(200);
  expect(await console.text()).toContain("<h1>Cluster</h1>");
  const anonymous = await fetch(`${admin}/metrics`);
  expect(anonymous.status).toBe(401);
  expect(anonymous.headers.get("www-authenticate")).toStartWith("Basic ");
  const wrong = await fetch(`${admin}/metrics`, { headers: basic("alice", "looking-glass") });
  expect(wrong.status).toBe(401);
  const unknown = await fetch(`${admin}/metrics`, { headers: basic("mallory", "wonderland") });
  expect(unknown.status).toBe(401);
  const malformed = await fetch(`${admin}/metrics`, { headers: { authorization: "Basic %%%" } });
  expect(malformed.status).toBe(401);
  for (const [user, password] of [
    ["alice", "wonderland"],
    ["bob", "builder"],
  ] as const) {
    const ok = await fetch(`${admin}/metrics`, { headers: basic(user, password) });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain("quill_requests_total");
    // Remembered: the second request is answered the same without another PBKDF2.
    const again = await fetch(`${admin}/metrics`, { headers: basic(user, password) });
    expect(again.status).toBe(200);
  }
  // A remembered login is keyed by the password too: a wrong one still fails.
  expect((await fetch(`${admin}/metrics`, { headers: basic("alice", "x") })).status).toBe(401);
});

test("with an authorizer the console shows a user only what their ACLs let them read", async () => {
  const dataDir = tempDir();
  const store = new LocalScramCredentialStore(dataDir);
  await store.set("alice", "SCRAM-SHA-256", scramCredential("SCRAM-SHA-256", "wonderland", 4096));
  const acled = await startInProcessBroker({
    dataDir,
    settings: {
      "admin.listeners": "127.0.0.1:0",
      "admin.authentication": "scram",
      "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    },
  });
  try {
    const allow = (
      principal: string,
      resourceType: ResourceType,
      name: string,
      operation: number,
    ): AclBinding => ({
      pattern: { resourceType, name, patternType: PATTERN_LITERAL },
      entry: { principal, host: "*", operation, permissionType: PERMISSION_ALLOW },
    });
    // The test's producer is anonymous on PLAINTEXT; alice may read one topic only.
    await acled.broker.services.authorizer!.create([
      allow("User:ANONYMOUS", ResourceType.CLUSTER, "kafka-cluster", OPERATION_ALL),
      allow("User:ANONYMOUS", ResourceType.TOPIC, "*", OPERATION_ALL),
      allow("User:alice", ResourceType.TOPIC, "open", AclOperation.READ),
    ]);
    const kafka = new Kafka({ brokers: [acled.bootstrap], logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    await producer.connect();
    for (const topic of ["open", "secret"]) {
      await producer.send({ topic, messages: [{ value: `${topic}-record` }] });
    }
    await producer.disconnect();
    const url = `http://127.0.0.1:${acled.broker.adminListeners[0]!.port}`;
    const get = async (path: string) =>
      await (await fetch(`${url}${path}`, { headers: basic("alice", "wonderland") })).text();
    const topics = await get("/console/topics");
    expect(topics).toContain("/console/topics/open");
    expect(topics).not.toContain("secret");
    expect(await get("/console/topics/open?offset=0")).toContain("open-record");
    const secret = await get("/console/topics/secret?offset=0");
    expect(secret).not.toContain("secret-record");
    expect(secret).toContain("no such topic");
    expect(await get("/console/configs")).toContain("not authorized");
  } finally {
    await acled.stop();
  }
});
