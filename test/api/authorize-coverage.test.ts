/**
 * Every API handler authorizes its request (docs/security.md lists what each checks): a handler
 * added without a call into api/authorize.ts would let any principal use it once an authorizer
 * is configured. The exceptions answer before authentication or manage ACLs themselves.
 */
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const API_DIR = join(import.meta.dir, "..", "..", "src", "api");
/** Answered to anyone, as in Kafka: version discovery and the SASL exchange. */
const OPEN = new Set(["17-sasl-handshake.ts", "18-api-versions.ts", "36-sasl-authenticate.ts"]);
/** Handlers that check through a shared helper of their family instead of authorize.ts. */
const VIA_HELPER: ReadonlyMap<string, string> = new Map([
  // The ACL APIs check the cluster through acl-requests.ts.
  ["29-describe-acls.ts", "./acl-requests.ts"],
  ["30-create-acls.ts", "./acl-requests.ts"],
  ["31-delete-acls.ts", "./acl-requests.ts"],
  // The share coordinator's APIs (brokers only) check CLUSTER_ACTION in share-state-requests.ts.
  ["83-initialize-share-group-state.ts", "./share-state-requests.ts"],
  ["84-read-share-group-state.ts", "./share-state-requests.ts"],
  ["85-write-share-group-state.ts", "./share-state-requests.ts"],
  ["86-delete-share-group-state.ts", "./share-state-requests.ts"],
  ["87-read-share-group-state-summary.ts", "./share-state-requests.ts"],
]);

test("every API handler asks the authorizer, except the open ones", () => {
  const handlers = readdirSync(API_DIR).filter((f) => /^\d+-.*\.ts$/.test(f));
  expect(handlers.length).toBeGreaterThan(40);
  const unchecked = handlers.filter((f) => {
    if (OPEN.has(f)) return false;
    const source = readFileSync(join(API_DIR, f), "utf8");
    const helper = VIA_HELPER.get(f) ?? "./authorize.ts";
    return !source.includes(`from "${helper}"`);
  });
  expect(unchecked).toEqual([]);
  // And each such helper itself goes through authorize.ts.
  for (const helper of new Set(VIA_HELPER.values())) {
    const source = readFileSync(join(API_DIR, helper), "utf8");
    expect(source).toContain('from "./authorize.ts"');
  }
});
