// admin.authentication=mtls: the admin listener speaks HTTPS and takes its user from the client
// certificate (ssl.principal.mapping.rules: CN=Alice,O=Quill is User:alice), with real
// certificates made by openssl and a real broker. Health checks need no certificate; everything
// else does; an untrusted certificate or plain HTTP gets no answer; with an authorizer the
// console shows the certificate's user only what the ACLs allow; a large page crosses the TLS
// front whole.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { Kafka, logLevel } from "kafkajs";
import { OPERATION_ALL } from "../../src/security/acl.ts";
import { AclOperation, ResourceType } from "../../src/security/authorized-operations.ts";
import { allowAcl } from "../support/acl-bindings.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { makeCertificates } from "../support/tls-certificates.ts";

let broker: InProcessBroker;
let admin: string;
let ca: string;
let alice: { cert: string; key: string };
let stranger: { cert: string; key: string };
const BIG_VALUE = "v".repeat(20_000);
const BIG_RECORDS = 40;

beforeAll(async () => {
  const certs = makeCertificates();
  const read = (path: string) => readFileSync(path, "utf8");
  ca = read(certs.caPem);
  const pem = (c: { cert: string; key: string }) => ({ cert: read(c.cert), key: read(c.key) });
  alice = pem(certs.client("alice", "/O=Quill/CN=Alice"));
  stranger = pem(certs.client("stranger", "/O=Quill/CN=Alice", { ca: "other" }));
  broker = await startInProcessBroker({
    settings: {
      "admin.listeners": "ADMIN://127.0.0.1:0",
      "admin.authentication": "mtls",
      "listener.name.admin.ssl.keystore.location": certs.serverKeystore,
      "listener.name.admin.ssl.truststore.location": certs.caPem,
      "listener.name.admin.ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/L,DEFAULT",
      "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    },
  });
  admin = `https://127.0.0.1:${broker.broker.adminListeners[0]!.port}`;
  await broker.broker.services.authorizer!.create([
    allowAcl("User:ANONYMOUS", ResourceType.CLUSTER, "kafka-cluster", OPERATION_ALL),
    allowAcl("User:ANONYMOUS", ResourceType.TOPIC, "*", OPERATION_ALL),
    allowAcl("User:alice", ResourceType.TOPIC, "open", AclOperation.READ),
  ]);
  const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic: "secret", messages: [{ value: "secret-record" }] });
  const big = Array.from({ length: BIG_RECORDS }, (_, i) => ({ value: `${i}:${BIG_VALUE}` }));
  await producer.send({ topic: "open", messages: big });
  await producer.disconnect();
}, 60_000);

afterAll(async () => {
  await broker.stop();
});

const get = (path: string, client?: { cert: string; key: string }) =>
  fetch(`${admin}${path}`, { tls: { ca, ...(client ?? {}) } });

test("health needs no certificate; the console and metrics need a trusted one", async () => {
  expect((await get("/health/live")).status).toBe(200);
  expect((await get("/health/ready")).status).toBe(200);
  const anonymous = await get("/console");
  expect(anonymous.status).toBe(403);
  expect(await anonymous.text()).toContain("client certificate required");
  expect((await get("/metrics")).status).toBe(403);
  const metrics = await get("/metrics", alice);
  expect(metrics.status).toBe(200);
  expect(await metrics.text()).toContain("quill_requests_total");
  // A certificate from another CA fails the handshake: no HTTP answer at all.
  await expect(get("/health/live", stranger)).rejects.toThrow();
  // Plain HTTP on the TLS port gets no answer either.
  const plain = admin.replace("https:", "http:");
  await expect(
    fetch(`${plain}/health/live`, { signal: AbortSignal.timeout(5_000) }),
  ).rejects.toThrow();
});

test("the certificate's principal sees only what the ACLs allow", async () => {
  const topics = await (await get("/console/topics", alice)).text();
  expect(topics).toContain("/console/topics/open");
  expect(topics).not.toContain("secret");
  const secret = await (await get("/console/topics/secret?offset=0", alice)).text();
  expect(secret).toContain("no such topic");
  expect(secret).not.toContain("secret-record");
  expect(await (await get("/console/configs", alice)).text()).toContain("not authorized");
});

test("a page larger than the socket buffers crosses the TLS front whole", async () => {
  const page = await get(`/console/topics/open?offset=0&count=${BIG_RECORDS}`, alice);
  expect(page.status).toBe(200);
  const body = await page.text();
  expect(body.length).toBeGreaterThan(BIG_RECORDS * BIG_VALUE.length);
  for (let i = 0; i < BIG_RECORDS; i++) expect(body).toContain(`${i}:${BIG_VALUE}`);
  expect(body).toEndWith("</html>");
});

test("mtls without trusted certificates stops the start with the key to set", async () => {
  const certs = makeCertificates();
  const start = startInProcessBroker({
    settings: {
      "admin.listeners": "ADMIN://127.0.0.1:0",
      "admin.authentication": "mtls",
      "listener.name.admin.ssl.keystore.location": certs.serverKeystore,
    },
  });
  await expect(start).rejects.toThrow("ssl.truststore.location");
});
