// Kafka's own `kafka-acls.sh` (kafka.admin.AclCommand 3.9, from Maven Central) adds, lists and
// removes ACLs on Quill through a SASL_PLAINTEXT listener with SCRAM-SHA-512, as an operator
// runs it: CreateAcls, DescribeAcls and DeleteAcls on the wire, and the ACLs take effect.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensureKafkaDist } from "../../scripts/bench-vs-kafka/kafka-dist.ts";
import { AclOperation, ResourceType } from "../../src/security/authorized-operations.ts";
import { scramCredential } from "../../src/security/scram.ts";
import { LocalScramCredentialStore } from "../../src/security/scram-credential-store.ts";
import {
  type InProcessBroker,
  removeDir,
  startInProcessBroker,
  tempDir,
} from "../support/broker-harness.ts";
import { runToolInJvm } from "../support/tool-jvm.ts";

let broker: InProcessBroker;
let classpath: string;
let commandConfig: string;
let dataDir: string;

beforeAll(async () => {
  const dist = await ensureKafkaDist();
  if ("missing" in dist) throw new Error(`Kafka's tools are not available: ${dist.missing}`);
  classpath = dist.classpath;
  dataDir = tempDir("quill-acl-tool-");
  const admin = scramCredential("SCRAM-SHA-512", "admin-secret", 4096);
  await new LocalScramCredentialStore(dataDir).set("admin", "SCRAM-SHA-512", admin);
  broker = await startInProcessBroker({
    dataDir,
    settings: {
      listeners: "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
      "sasl.enabled.mechanisms": "SCRAM-SHA-512",
      "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
      "super.users": "User:admin",
    },
  });
  commandConfig = join(dataDir, "admin.properties");
  writeFileSync(
    commandConfig,
    "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n" +
      "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required " +
      'username="admin" password="admin-secret";\n',
  );
}, 180_000);

afterAll(async () => {
  await broker?.stop();
  removeDir(dataDir);
});

async function aclCommand(...args: string[]): Promise<string> {
  const port = broker.broker.listeners.find((l) => l.listenerName === "SASL_PLAINTEXT")!.port;
  const { code, stdout, stderr } = await runToolInJvm(classpath, "kafka.admin.AclCommand", [
    "--bootstrap-server",
    `127.0.0.1:${port}`,
    "--command-config",
    commandConfig,
    ...args,
  ]);
  if (code !== 0) throw new Error(`kafka-acls ${args.join(" ")}: ${stderr}${stdout}`);
  return stdout;
}

const aliceMay = (operation: AclOperation, type: ResourceType, name: string) =>
  broker.broker.services.authorizer!.authorize("User:alice", "10.1.1.1", operation, type, name);

test("kafka-acls.sh adds, lists and removes literal and prefixed ACLs", async () => {
  await aclCommand(
    "--add",
    "--allow-principal",
    "User:alice",
    "--operation",
    "Read",
    "--operation",
    "Write",
    "--topic",
    "orders",
  );
  await aclCommand(
    "--add",
    "--allow-principal",
    "User:alice",
    "--operation",
    "Read",
    "--group",
    "app-",
    "--resource-pattern-type",
    "prefixed",
  );
  const listed = await aclCommand("--list");
  expect(listed).toContain(
    "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, " +
      "patternType=LITERAL)`:",
  );
  expect(listed).toContain("(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)");
  expect(listed).toContain("ResourcePattern(resourceType=GROUP, name=app-, patternType=PREFIXED)");
  expect(aliceMay(AclOperation.WRITE, ResourceType.TOPIC, "orders")).toBe(true);
  expect(aliceMay(AclOperation.READ, ResourceType.GROUP, "app-1")).toBe(true);
  await aclCommand(
    "--remove",
    "--force",
    "--allow-principal",
    "User:alice",
    "--operation",
    "Write",
    "--topic",
    "orders",
  );
  const after = await aclCommand("--list", "--topic", "orders");
  expect(after).toContain("operation=READ");
  expect(after).not.toContain("operation=WRITE");
  expect(aliceMay(AclOperation.WRITE, ResourceType.TOPIC, "orders")).toBe(false);
  expect(aliceMay(AclOperation.DESCRIBE, ResourceType.TOPIC, "orders")).toBe(true);
}, 120_000);
