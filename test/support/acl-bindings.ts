/** ACL bindings for tests that set up an authorizer directly. */
import { type AclBinding, PATTERN_LITERAL, PERMISSION_ALLOW } from "../../src/security/acl.ts";
import type { ResourceType } from "../../src/security/authorized-operations.ts";

/** ALLOW `operation` on the literal resource `name` for `principal` from any host. */
export function allowAcl(
  principal: string,
  resourceType: ResourceType,
  name: string,
  operation: number,
): AclBinding {
  return {
    pattern: { resourceType, name, patternType: PATTERN_LITERAL },
    entry: { principal, host: "*", operation, permissionType: PERMISSION_ALLOW },
  };
}
