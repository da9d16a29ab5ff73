import { ConfigError } from "./config-error.ts";

/** One `key=value` pair of a .properties file; `line` (1-based) starts its logical line. */
export interface PropertyEntry {
  readonly key: string;
  readonly value: string;
  readonly line: number;
}

/** A Kafka `server.properties` is small; this bounds the work spent on a wrong file. */
const MAX_PROPERTIES_TEXT_CHARS = 16 * 1024 * 1024;

const isBlank = (c: string | undefined) => c === " " || c === "\t" || c === "\f";

/**
 * Parses Java `.properties` text exactly as `java.util.Properties.load` does, so a Kafka
 * `server.properties` means the same thing here: `#`/`!` comments, `key=value`, `key: value`
 * and `key value`, backslash escapes (`\t \n \r \f \uXXXX`, `\` before any other character
 * keeps that character), and lines continued by an odd number of trailing backslashes.
 * Entries come back in file order; a repeated key appears twice and the later one wins.
 *
 * @example parseProperties("log.dirs = /var/quill\n# note\nnum.partitions: 3")
 */
export function parseProperties(text: string): PropertyEntry[] {
  if (text.length > MAX_PROPERTIES_TEXT_CHARS) {
    throw new ConfigError(`config file is larger than ${MAX_PROPERTIES_TEXT_CHARS} characters`);
  }
  const entries: PropertyEntry[] = [];
  for (const { text: logical, line } of logicalLines(text.split(/\r\n|\r|\n/))) {
    entries.push(parseLogicalLine(logical, line));
  }
  return entries;
}

/** Joins continued lines and drops blank and comment lines, remembering where each started. */
function* logicalLines(lines: string[]): Generator<{ text: string; line: number }> {
  for (let index = 0; index < lines.length; index++) {
    const first = stripLeadingBlanks(lines[index]);
    // A comment is never continued, even when it ends with a backslash (as in Java).
    if (first === "" || first[0] === "#" || first[0] === "!") continue;
    const line = index + 1;
    let text = first;
    while (endsWithOddBackslashes(text)) {
      text = text.slice(0, -1);
      index++;
      if (index >= lines.length) break;
      text += stripLeadingBlanks(lines[index]);
    }
    yield { text, line };
  }
}

function stripLeadingBlanks(s: string): string {
  let i = 0;
  while (isBlank(s[i])) i++;
  return s.slice(i);
}

function endsWithOddBackslashes(s: string): boolean {
  let count = 0;
  for (let i = s.length - 1; i >= 0 && s[i] === "\\"; i--) count++;
  return count % 2 === 1;
}

/** Splits at the first unescaped `=`, `:` or blank; blanks around one separator are dropped. */
function parseLogicalLine(text: string, line: number): PropertyEntry {
  let keyEnd = 0;
  while (keyEnd < text.length) {
    const c = text[keyEnd];
    if (c === "\\") keyEnd += 2;
    else if (c === "=" || c === ":" || isBlank(c)) break;
    else keyEnd++;
  }
  keyEnd = Math.min(keyEnd, text.length);
  let valueStart = keyEnd;
  while (isBlank(text[valueStart])) valueStart++;
  if (text[valueStart] === "=" || text[valueStart] === ":") valueStart++;
  while (isBlank(text[valueStart])) valueStart++;
  return {
    key: unescapeProperty(text.slice(0, keyEnd), line),
    value: unescapeProperty(text.slice(valueStart), line),
    line,
  };
}

const SIMPLE_ESCAPES: Record<string, string> = { t: "\t", n: "\n", r: "\r", f: "\f" };

function unescapeProperty(s: string, line: number): string {
  if (!s.includes("\\")) return s;
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c !== "\\") {
      out += c;
      continue;
    }
    const next = s[++i];
    if (next === undefined) break;
    if (next === "u") {
      const hex = s.slice(i + 1, i + 5);
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) {
        throw new ConfigError(`config file line ${line}: malformed \\uxxxx escape "\\u${hex}"`);
      }
      out += String.fromCharCode(parseInt(hex, 16));
      i += 4;
    } else {
      out += SIMPLE_ESCAPES[next] ?? next;
    }
  }
  return out;
}
