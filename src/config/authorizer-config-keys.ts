import { z } from "zod";
import { boolean, type ConfigKey, key, type ValueType, valueType } from "./config-key.ts";

/**
 * Kafka's authorizer keys. `authorizer.class.name` accepts Kafka's ZooKeeper-mode AclAuthorizer
 * (the only authorizer Quill has) or blank, Kafka's default of none; any other class refuses
 * the start, since the operator asked for protection Quill cannot give.
 */
export const ACL_AUTHORIZER_CLASS_NAME = "kafka.security.authorizer.AclAuthorizer";

const authorizerClass = (): ValueType<string> =>
  valueType({
    type: "STRING",
    expected: `${ACL_AUTHORIZER_CLASS_NAME} or blank`,
    schema: () =>
      z
        .string()
        .trim()
        .refine((s) => s === "" || s === ACL_AUTHORIZER_CLASS_NAME),
    format: (value) => value,
    refusal: (text) => ({ value: text, reason: `Authorizer must be ${ACL_AUTHORIZER_CLASS_NAME}` }),
  });

/** `User:admin;User:broker`: Kafka separates super users with semicolons. */
const principalList = (): ValueType<string[]> =>
  valueType({
    type: "STRING",
    expected: "principals (User:<name>) separated by semicolons",
    schema: () =>
      z
        .string()
        .transform((s) =>
          s
            .split(";")
            .map((p) => p.trim())
            .filter((p) => p !== ""),
        )
        .pipe(z.array(z.string().regex(/^[^:]+:.+$/))),
    format: (value) => value.join(";"),
    refusal: (text) => ({ value: text, reason: "Each principal must be <type>:<name>" }),
  });

export const AUTHORIZER_CONFIG_KEYS = {
  "authorizer.class.name": key(
    authorizerClass(),
    "",
    "The authorizer: kafka.security.authorizer.AclAuthorizer (ACLs in ZooKeeper, or in acls.json " +
      "of the first log dir when embedded), or blank for none.",
  ),
  "super.users": key(
    principalList(),
    [],
    "Principals the authorizer allows everything, separated by semicolons (User:admin;User:b).",
  ),
  "allow.everyone.if.no.acl.found": key(
    boolean(),
    false,
    "With an authorizer: whether a resource without any ACL is open to everyone.",
  ),
} satisfies Record<string, ConfigKey<unknown>>;
