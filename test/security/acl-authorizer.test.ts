/**
 * The authorizer's decisions as Kafka 3.9's AclAuthorizer makes them (literal, `*` and prefixed
 * patterns, implied DESCRIBE, DENY first, hosts, super users, no ACL at all), and the local
 * store: ACLs survive a restart in acls.json.
 */
import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AclBinding,
  ANY_CODE,
  OPERATION_ALL,
  PATTERN_LITERAL,
  PATTERN_MATCH,
  PATTERN_PREFIXED,
  PERMISSION_ALLOW,
  PERMISSION_DENY,
} from "../../src/security/acl.ts";
import { AclAuthorizer } from "../../src/security/acl-authorizer.ts";
import { AclOperation, ResourceType } from "../../src/security/authorized-operations.ts";
import { LocalAclStore } from "../../src/security/local-acl-store.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";

const { READ, WRITE, DESCRIBE, ALTER_CONFIGS, DESCRIBE_CONFIGS, CREATE } = AclOperation;
const { TOPIC, GROUP } = ResourceType;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function authorizerIn(dir: string, allowEveryone = false) {
  const config = { superUsers: ["User:admin"], allowEveryoneIfNoAclFound: allowEveryone };
  const a = new AclAuthorizer(new LocalAclStore(dir), config, SILENT_LOGGER);
  await a.start();
  return a;
}

function acl(
  name: string,
  operation: number,
  permission: typeof PERMISSION_ALLOW | typeof PERMISSION_DENY = PERMISSION_ALLOW,
  options: { principal?: string; host?: string; patternType?: 3 | 4; type?: ResourceType } = {},
): AclBinding {
  return {
    pattern: {
      resourceType: options.type ?? TOPIC,
      name,
      patternType: options.patternType ?? PATTERN_LITERAL,
    },
    entry: {
      principal: options.principal ?? "User:alice",
      host: options.host ?? "*",
      operation,
      permissionType: permission,
    },
  };
}

const newDir = () => {
  const d = mkdtempSync(join(tmpdir(), "quill-acl-"));
  dirs.push(d);
  return d;
};

test("literal, wildcard and prefixed ACLs; implied DESCRIBE; DENY wins; hosts", async () => {
  const a = await authorizerIn(newDir());
  const can = (op: number, name: string, principal = "User:alice", host = "10.0.0.1") =>
    a.authorize(principal, host, op, TOPIC, name);
  expect(can(READ, "orders")).toBe(false); // no ACL and allow.everyone.if.no.acl.found=false
  expect(can(READ, "orders", "User:admin")).toBe(true); // super user
  await a.create([
    acl("orders", READ),
    acl("*", WRITE, PERMISSION_ALLOW, { principal: "User:bob" }),
    acl("logs-", OPERATION_ALL, PERMISSION_ALLOW, { patternType: PATTERN_PREFIXED }),
    acl("logs-secret", READ, PERMISSION_DENY),
    acl("pinned", READ, PERMISSION_ALLOW, { host: "10.0.0.2" }),
    acl("orders", ALTER_CONFIGS),
  ]);
  expect(can(READ, "orders")).toBe(true);
  expect(can(DESCRIBE, "orders")).toBe(true); // READ implies DESCRIBE
  expect(can(DESCRIBE_CONFIGS, "orders")).toBe(true); // ALTER_CONFIGS implies DESCRIBE_CONFIGS
  expect(can(WRITE, "orders")).toBe(false);
  expect(can(WRITE, "anything", "User:bob")).toBe(true); // the * literal
  expect(can(CREATE, "logs-app")).toBe(true); // prefixed ALL
  expect(can(READ, "logs-secret")).toBe(false); // DENY wins over the prefixed ALL
  expect(can(WRITE, "logs-secret")).toBe(true); // a DENY of READ denies only READ
  expect(can(READ, "pinned")).toBe(false);
  expect(can(READ, "pinned", "User:alice", "10.0.0.2")).toBe(true);
  expect(a.authorize("User:alice", "h", READ, GROUP, "orders")).toBe(false); // other type
});

test("allow.everyone.if.no.acl.found opens resources without any ACL only", async () => {
  const a = await authorizerIn(newDir(), true);
  expect(a.authorize("User:x", "h", READ, TOPIC, "open")).toBe(true);
  await a.create([acl("closed", READ)]);
  expect(a.authorize("User:x", "h", READ, TOPIC, "closed")).toBe(false);
  expect(a.authorize("User:alice", "h", READ, TOPIC, "closed")).toBe(true);
});

test("describe and delete by filter; ACLs survive a restart in acls.json", async () => {
  const dir = newDir();
  const a = await authorizerIn(dir);
  await a.create([acl("t1", READ), acl("t1", WRITE), acl("t", READ, 3, { patternType: 4 })]);
  const any = {
    resourceType: ANY_CODE,
    name: null,
    patternType: ANY_CODE,
    principal: null,
    host: null,
    operation: ANY_CODE,
    permissionType: ANY_CODE,
  };
  expect(a.describe(any)).toHaveLength(3);
  const match = { ...any, name: "t1", patternType: PATTERN_MATCH };
  expect(a.describe(match)).toHaveLength(3); // t1 literal twice and the prefix t
  expect(a.describe({ ...any, patternType: PATTERN_PREFIXED })).toHaveLength(1);
  const [removed] = await a.delete([{ ...any, operation: WRITE }]);
  expect(removed!.map((b) => b.entry.operation)).toEqual([WRITE]);
  const json = JSON.parse(readFileSync(join(dir, "acls.json"), "utf8"));
  expect(json.resources).toContainEqual({
    resourceType: "Topic",
    patternType: "LITERAL",
    name: "t1",
    acls: {
      version: 1,
      acls: [{ principal: "User:alice", permissionType: "Allow", operation: "Read", host: "*" }],
    },
  });
  const again = await authorizerIn(dir);
  expect(again.aclCount).toBe(2);
  expect(again.authorize("User:alice", "h", READ, TOPIC, "t1")).toBe(true);
  expect(again.authorize("User:alice", "h", WRITE, TOPIC, "t1")).toBe(false);
});
