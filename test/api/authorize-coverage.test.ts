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
/** The ACL APIs check the cluster through acl-requests.ts. */
const VIA_ACL_REQUESTS = new Set(["29-describe-acls.ts", "30-create-acls.ts", "31-delete-acls.ts"]);

test("every API handler asks the authorizer, except the open ones", () => {
  const handlers = readdirSync(API_DIR).filter((f) => /^\d+-.*\.ts$/.test(f));
  expect(handlers.length).toBeGreaterThan(40);
  const unchecked = handlers.filter((f) => {
    if (OPEN.has(f)) return false;
    const source = readFileSync(join(API_DIR, f), "utf8");
    const helper = VIA_ACL_REQUESTS.has(f) ? "./acl-requests.ts" : "./authorize.ts";
    return !source.includes(`from "${helper}"`);
  });
  expect(unchecked).toEqual([]);
});
