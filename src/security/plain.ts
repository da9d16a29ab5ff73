/**
 * SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer: `[authzid] NUL user NUL password`, checked
 * against the `user_<name>="<password>"` entries of the listener's PlainLoginModule JAAS config.
 */
import { timingSafeEqual } from "node:crypto";

export class PlainAuthenticationError extends Error {
  override readonly name = "PlainAuthenticationError";
}

/** Most bytes of a PLAIN token. */
const TOKEN_MAX_BYTES = 4096;

/** Returns the user name, or throws PlainAuthenticationError with Kafka's message. */
export function authenticatePlain(token: Uint8Array, users: ReadonlyMap<string, string>): string {
  const invalid = () =>
    new PlainAuthenticationError("Authentication failed: Invalid username or password");
  if (token.length > TOKEN_MAX_BYTES) throw invalid();
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(token);
  } catch {
    throw invalid();
  }
  const parts = text.split("\u0000");
  if (parts.length !== 3) throw invalid();
  const [authzid = "", user = "", password = ""] = parts;
  if (user === "" || password === "") throw invalid();
  const expected = users.get(user);
  if (expected === undefined || !sameText(expected, password)) throw invalid();
  if (authzid !== "" && authzid !== user) {
    throw new PlainAuthenticationError(
      "Authentication failed: Client requested an authorization id that is different from username",
    );
  }
  return user;
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const JAAS_OPTION = /([A-Za-z0-9_.-]+)\s*=\s*"((?:[^"\\]|\\.)*)"/g;

/** The options of a JAAS config line (`Module required key="value" ...;`). */
export function jaasOptions(jaasConfig: string): Map<string, string> {
  const options = new Map<string, string>();
  for (const m of jaasConfig.matchAll(JAAS_OPTION)) {
    options.set(m[1]!, m[2]!.replace(/\\(.)/g, "$1"));
  }
  return options;
}

/** The PLAIN users (`user_<name>` options) of a PlainLoginModule config. */
export function plainUsers(jaasConfig: string): Map<string, string> {
  const users = new Map<string, string>();
  for (const [k, v] of jaasOptions(jaasConfig)) if (k.startsWith("user_")) users.set(k.slice(5), v);
  return users;
}
