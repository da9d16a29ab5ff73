/**
 * Regular expressions from requests (ListTransactions' TransactionalIdPattern, KIP-1152), which
 * Kafka compiles with RE2/J: linear time whatever the pattern. JavaScript's engine backtracks, so
 * a pattern such as `(a*)*b` could hold the event loop for minutes. Patterns are therefore
 * refused when they use what RE2 lacks (backreferences, lookaround) or what makes backtracking
 * blow up: a repeated group that itself repeats or alternates (star height above one). What is
 * left matches in time polynomial in the input, and inputs here are short names.
 */

/** Longer patterns are refused; Kafka's names are at most 249 (topics) or a few hundred bytes. */
export const SAFE_PATTERN_MAX_CHARS = 1_000;

const QUANTIFIER_AFTER_GROUP = /^(?:[*+?]|\{\d+(?:,\d*)?\})/;

/** RE2's leading inline flags that JavaScript spells as RegExp flags: `(?i)`, `(?s)`, `(?m)`. */
const LEADING_FLAGS = /^\(\?([ims]+)\)/;

/**
 * An RE2 pattern (KIP-848's SubscribedTopicRegex): leading inline flags become RegExp flags; the
 * rest must mean the same in both syntaxes. RE2 forms JavaScript lacks (`\Q..\E`, `(?P<n>`,
 * `[[:alpha:]]`, `\pL`, `\z`) are syntax errors with the `u` flag, so they are refused rather
 * than matched differently.
 */
export function compileRe2Pattern(source: string): RegExp | string {
  const flags = LEADING_FLAGS.exec(source);
  if (flags === null) return compileSafePattern(source);
  return compileSafePattern(source.slice(flags[0].length), [...new Set(flags[1]!)].join(""));
}

/** The compiled full-match pattern, or the reason it is refused. */
export function compileSafePattern(source: string, flags = ""): RegExp | string {
  if (source.length > SAFE_PATTERN_MAX_CHARS) {
    return `pattern longer than ${SAFE_PATTERN_MAX_CHARS} characters`;
  }
  if (/\\[1-9]|\\k<|\(\?<?[=!]/.test(source)) {
    return "backreferences and lookaround are not supported (RE2 syntax)";
  }
  if (repeatsComplexGroup(source)) {
    return "a repeated group may not itself repeat or alternate";
  }
  try {
    return new RegExp(`^(?:${source})$`, `u${flags}`);
  } catch (e) {
    return (e as Error).message;
  }
}

/** True when a quantified group holds a quantifier or an alternation. */
function repeatsComplexGroup(source: string): boolean {
  /** Per open group: whether it holds a quantifier or `|` so far. */
  const open: boolean[] = [];
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === "\\") {
      i++;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      continue;
    }
    if (c === "[") inClass = true;
    else if (c === "(") open.push(false);
    else if (c === "|" || c === "*" || c === "+" || c === "?" || c === "{") {
      // `(?:` and `(?<name>` open a group, not a quantifier.
      if (c === "?" && source[i - 1] === "(") continue;
      if (open.length > 0) open[open.length - 1] = true;
    } else if (c === ")") {
      const complex = open.pop() ?? false;
      const repeated = QUANTIFIER_AFTER_GROUP.test(source.slice(i + 1, i + 12));
      if (complex && repeated) return true;
      if (complex && open.length > 0) open[open.length - 1] = true;
    }
  }
  return false;
}
