/**
 * Kafka's SslPrincipalMapper: `ssl.principal.mapping.rules` turns a client certificate's subject
 * (RFC 2253 form, e.g. `CN=alice,OU=eng,O=Example`) into a user name. Rules are tried in order;
 * `DEFAULT` keeps the whole subject; `RULE:pattern/replacement/` applies when the pattern matches
 * the entire subject, with `$1`-style groups, and a trailing `L` or `U` changes the case.
 * A subject no rule matches is refused, as Kafka refuses it.
 */

type Rule =
  | { readonly kind: "default" }
  | {
      readonly kind: "rule";
      readonly pattern: RegExp;
      readonly replacement: string;
      readonly caseChange: "" | "L" | "U";
    };

/** At most this many rules: each connection tries them in turn. */
const RULES_MAX = 100;

const RULE_TEXT = /\s*(?:(DEFAULT)|RULE:((?:\\\/|[^/])*)\/((?:\\\/|[^/])*)\/([LU]?))\s*(?:,|$)/y;

export class PrincipalMappingError extends Error {
  override readonly name = "PrincipalMappingError";
}

export class SslPrincipalMapper {
  private constructor(private readonly rules: readonly Rule[]) {}

  /** Parses the rules; a malformed list throws PrincipalMappingError naming what is wrong. */
  static fromRules(text: string): SslPrincipalMapper {
    const rules: Rule[] = [];
    RULE_TEXT.lastIndex = 0;
    const trimmed = text.trim();
    while (RULE_TEXT.lastIndex < trimmed.length) {
      const at = RULE_TEXT.lastIndex;
      const match = RULE_TEXT.exec(trimmed);
      if (match === null) {
        throw new PrincipalMappingError(`invalid rule at "${trimmed.slice(at)}"`);
      }
      if (match[1] !== undefined) {
        rules.push({ kind: "default" });
      } else {
        const unescaped = (s: string) => s.replaceAll("\\/", "/");
        rules.push({
          kind: "rule",
          pattern: new RegExp(`^(?:${unescaped(match[2]!)})$`),
          replacement: javaReplacement(unescaped(match[3]!)),
          caseChange: match[4] as "" | "L" | "U",
        });
      }
      if (rules.length > RULES_MAX) throw new PrincipalMappingError(`more than ${RULES_MAX} rules`);
    }
    if (rules.length === 0) throw new PrincipalMappingError("no rules");
    return new SslPrincipalMapper(rules);
  }

  /** The user name for a subject; throws PrincipalMappingError when no rule applies. */
  name(subject: string): string {
    for (const rule of this.rules) {
      if (rule.kind === "default") return subject;
      if (!rule.pattern.test(subject)) continue;
      const result = subject.replace(rule.pattern, rule.replacement);
      if (rule.caseChange === "L") return result.toLowerCase();
      if (rule.caseChange === "U") return result.toUpperCase();
      return result;
    }
    throw new PrincipalMappingError(`no rule applies to the certificate subject ${subject}`);
  }
}

/** Java writes groups as `$1` and escapes `$` as `\$`; JavaScript escapes it as `$$`. */
function javaReplacement(replacement: string): string {
  return replacement.replace(/\\\$|\$(\d)|\$/g, (_match, group: string | undefined) =>
    group !== undefined ? `$${group}` : "$$",
  );
}

const RFC2253_SPECIAL = /[,+"\\<>;]/g;

/**
 * The subject in RFC 2253 form as Java's X500Principal.getName() writes it: the most specific
 * name first (the reverse of the certificate's order), special characters escaped.
 * `lines` is node:crypto's X509Certificate.subject: `NAME=value` per line, certificate order.
 */
export function rfc2253Subject(lines: string): string {
  const parts = lines
    .split("\n")
    .filter((l) => l.length > 0)
    .map((line) => {
      const eq = line.indexOf("=");
      const value = line.slice(eq + 1).replace(RFC2253_SPECIAL, (c) => `\\${c}`);
      return `${line.slice(0, eq)}=${value.replace(/^[ #]/, (c) => `\\${c}`)}`;
    });
  return parts.reverse().join(",");
}
