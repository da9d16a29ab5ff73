/**
 * How `quill topic consume` prints records: kcat's `-f` format strings, or one JSON object per
 * record. A format string is compiled once into parts, so a malformed one fails before any
 * record is read.
 *
 *   %t topic  %p partition  %o offset  %T timestamp (ms)  %k key  %s value
 *   %K key length  %S value length  %h headers (k=v,k=v)  %%  and \n \t \r \\ escapes
 */
import type { ConsumedRecord } from "../client/fetched-records.ts";
import { UsageError } from "./args.ts";

type Part = string | ((r: ConsumedRecord) => string);

const decoder = new TextDecoder();
const text = (b: Uint8Array | null) => (b === null ? "" : decoder.decode(b));

const FIELDS: Readonly<Record<string, (r: ConsumedRecord) => string>> = {
  t: (r) => r.topic,
  p: (r) => String(r.partition),
  o: (r) => String(r.offset),
  T: (r) => String(r.timestampMs),
  k: (r) => text(r.key),
  s: (r) => text(r.value),
  K: (r) => String(r.key?.length ?? -1),
  S: (r) => String(r.value?.length ?? -1),
  h: (r) => r.headers.map((h) => `${h.key}=${text(h.value)}`).join(","),
};

const ESCAPES: Readonly<Record<string, string>> = {
  n: "\n",
  t: "\t",
  r: "\r",
  "\\": "\\",
  "0": "\0",
};

/** Replaces `\n`, `\t`, `\r`, `\\`, `\0` with their characters (for -f and -K). */
export function unescapeFlag(raw: string, flag: string): string {
  let out = "";
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] !== "\\") {
      out += raw[i];
      continue;
    }
    const next = raw[++i];
    const replacement = next === undefined ? undefined : ESCAPES[next];
    if (replacement === undefined) {
      throw new UsageError(`${flag}: unknown escape "\\${next ?? ""}" at position ${i - 1}`);
    }
    out += replacement;
  }
  return out;
}

export type RecordFormatter = (r: ConsumedRecord) => string;

export function compileFormat(format: string): RecordFormatter {
  const raw = unescapeFlag(format, "-f");
  const parts: Part[] = [];
  let literal = "";
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] !== "%") {
      literal += raw[i];
      continue;
    }
    const code = raw[++i];
    if (code === "%") {
      literal += "%";
      continue;
    }
    const field = code === undefined ? undefined : FIELDS[code];
    if (field === undefined) {
      throw new UsageError(
        `malformed format string: "%${code ?? ""}" at position ${i - 1} ` +
          "(known: %t %p %o %T %k %s %K %S %h %%)",
      );
    }
    if (literal !== "") parts.push(literal);
    literal = "";
    parts.push(field);
  }
  if (literal !== "") parts.push(literal);
  return (r) => {
    let out = "";
    for (const part of parts) out += typeof part === "string" ? part : part(r);
    return out;
  };
}

/** Key, value and headers as text; timestamp and offset as numbers; one object per line. */
export function recordJson(r: ConsumedRecord): Record<string, unknown> {
  return {
    topic: r.topic,
    partition: r.partition,
    offset: r.offset,
    timestamp: r.timestampMs,
    key: r.key === null ? null : decoder.decode(r.key),
    value: r.value === null ? null : decoder.decode(r.value),
    headers: Object.fromEntries(
      r.headers.map((h) => [h.key, h.value === null ? null : text(h.value)]),
    ),
  };
}
