// confluent-kafka (librdkafka, Python) over SASL PLAIN against a broker with Kafka's
// AclAuthorizer: a principal without ACLs sees no topic and is refused creating, producing and
// joining a group with Kafka's error names; with exactly the needed ACLs (WRITE and READ on the
// topic, READ on the group) it produces and consumes.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import {
  AclOperationTypes,
  AclPermissionTypes,
  AclResourceTypes,
  Kafka,
  logLevel,
  ResourcePatternTypes,
} from "kafkajs";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { compatPython } from "../support/python-venv.ts";

const SCRIPT = join(import.meta.dir, "acls-confluent.py");
let broker: InProcessBroker;
let sasl: string;

beforeAll(async () => {
  broker = await startInProcessBroker({
    settings: {
      listeners: "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
      "sasl.enabled.mechanisms": "PLAIN",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config":
        "org.apache.kafka.common.security.plain.PlainLoginModule required " +
        'user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";',
      "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
      "super.users": "User:admin",
      "num.partitions": "1",
    },
  });
  const port = broker.broker.listeners.find((l) => l.listenerName === "SASL_PLAINTEXT")!.port;
  sasl = `127.0.0.1:${port}`;
}, 60_000);

afterAll(async () => {
  await broker?.stop();
});

async function runAs(user: string, topic: string, group: string) {
  const python = await compatPython("confluent-kafka-python");
  const proc = Bun.spawn([python, SCRIPT, sasl, user, `${user}-secret`, topic, group], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([
    proc.exited,
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
  ]);
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout);
}

test("confluent-kafka: refused without ACLs, allowed with exactly the needed ones", async () => {
  const kafka = new Kafka({
    brokers: [sasl],
    logLevel: logLevel.NOTHING,
    sasl: { mechanism: "plain", username: "admin", password: "admin-secret" },
  });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: "ledger" }] });
  expect(await runAs("bob", "ledger", "bob-group")).toEqual({
    topics: [],
    create_error: "TOPIC_AUTHORIZATION_FAILED",
    produce_error: "TOPIC_AUTHORIZATION_FAILED",
    consumed: 0,
    consume_error: "GROUP_AUTHORIZATION_FAILED",
  });
  const acl = (resourceType: AclResourceTypes, resourceName: string, op: AclOperationTypes) => ({
    resourceType,
    resourceName,
    resourcePatternType: ResourcePatternTypes.LITERAL,
    principal: "User:alice",
    host: "*",
    operation: op,
    permissionType: AclPermissionTypes.ALLOW,
  });
  const { TOPIC, GROUP } = AclResourceTypes;
  const { READ, WRITE } = AclOperationTypes;
  await admin.createAcls({
    acl: [acl(TOPIC, "ledger", WRITE), acl(TOPIC, "ledger", READ), acl(GROUP, "alice-g", READ)],
  });
  await admin.disconnect();
  expect(await runAs("alice", "ledger", "alice-g")).toEqual({
    topics: ["ledger"],
    create_error: "TOPIC_AUTHORIZATION_FAILED",
    produce_error: null,
    consumed: 3,
    consume_error: null,
  });
}, 120_000);
