// admin.authentication=scram: the admin listener takes HTTP basic logins checked against the
// SCRAM users (a real credential file, a real broker); health checks stay open.
import { afterAll, beforeAll, expect, test } from "bun:test";
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
});
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
