import { z } from "zod";

/**
 * Kafka's config value types, with the codes DescribeConfigs (v3+) reports as `config_type`.
 * Quill uses some of them; the numbers are Kafka's wire values.
 */
export const ConfigType = {
  UNKNOWN: 0, BOOLEAN: 1, STRING: 2, INT: 3, SHORT: 4, LONG: 5, DOUBLE: 6, LIST: 7, CLASS: 8,
  PASSWORD: 9,
} as const;
export type ConfigTypeName = "BOOLEAN" | "STRING" | "INT" | "LONG" | "LIST";

/** How one kind of value is read from its string form, described and written back. */
export interface ValueType<T> {
  readonly type: ConfigTypeName;
  /** Completes "expected …" in error messages, e.g. "an integer ≥ 14". */
  readonly expected: string;
  /** Every source (file, environment, flag, CreateTopics) hands values over as strings. */
  readonly schema: z.ZodType<T, string>;
  /** The string Kafka would show for this value (DescribeConfigs, `--print-config`). */
  format(value: T): string;
}

/** One config key: its value type, Kafka's default and a one-sentence meaning. */
export interface ConfigKey<T> {
  readonly valueType: ValueType<T>;
  readonly default: T;
  readonly doc: string;
}

export const key = <T>(valueType: ValueType<T>, defaultValue: T, doc: string): ConfigKey<T> =>
  ({ valueType, default: defaultValue, doc });

/** A key whose absence means something (for example "use the hours key instead"). */
export const nullableKey = <T>(valueType: ValueType<T>, doc: string): ConfigKey<T | null> =>
  ({ valueType: valueType as ValueType<T | null>, default: null, doc });

/** Formats a key's value; an unset nullable key stays null, as in DescribeConfigs. */
export const formatValue = <T>(k: ConfigKey<T>, value: T): string | null =>
  value === null ? null : k.valueType.format(value);

export const INT_MAX = 2 ** 31 - 1;
export const INT_MIN = -(2 ** 31);
const LONG_MAX = 2n ** 63n - 1n;
const LONG_MIN = -(2n ** 63n);
/** Long.MAX_VALUE is not a safe JS number: it reads back as 2^63, which formats as Kafka's. */
export const LONG_MAX_AS_NUMBER = Number(LONG_MAX);

const INTEGER_TEXT = /^[+-]?\d+$/;

/** Longs name only their chosen bounds; ints also name their 32-bit ceiling. */
function rangeText(type: "INT" | "LONG", min: bigint, max: bigint, typeMin: bigint): string {
  if (type === "INT" && min === typeMin && max === BigInt(INT_MAX)) return "a 32-bit integer";
  if (type === "INT" || max !== LONG_MAX) {
    return min === typeMin ? `an integer ≤ ${max}` : `an integer between ${min} and ${max}`;
  }
  return min === typeMin ? "an integer" : `an integer ≥ ${min}`;
}

/**
 * Integers are range-checked as bigints, so a long near 2^63 is checked exactly, then kept as
 * JS numbers: every long Quill uses (bytes, milliseconds) is far below 2^53, and the few
 * "infinite" defaults are Long.MAX_VALUE, which `format` writes back exactly.
 */
function integer(type: "INT" | "LONG", min: bigint, max: bigint, typeMin: bigint) {
  const valueType: ValueType<number> = {
    type,
    expected: rangeText(type, min, max, typeMin),
    schema: z.string().trim().regex(INTEGER_TEXT).transform((text) => BigInt(text))
      .pipe(z.bigint().min(min).max(max)).transform(Number),
    format: (value) => (value >= LONG_MAX_AS_NUMBER ? LONG_MAX.toString() : String(value)),
  };
  return valueType;
}

export const int = ({ min = INT_MIN, max = INT_MAX }: { min?: number; max?: number } = {}) =>
  integer("INT", BigInt(min), BigInt(max), BigInt(INT_MIN));

export const long = ({ min = LONG_MIN, max = LONG_MAX }: { min?: bigint; max?: bigint } = {}) =>
  integer("LONG", min, max, LONG_MIN);

/** Kafka accepts "true"/"false" in any case, with blanks around. */
export const boolean = (): ValueType<boolean> => ({
  type: "BOOLEAN",
  expected: "true or false",
  schema: z.string().trim().toLowerCase().pipe(z.enum(["true", "false"]))
    .transform((text) => text === "true"),
  format: String,
});

export const string = (): ValueType<string> => ({
  type: "STRING",
  expected: "a non-empty string",
  schema: z.string().trim().min(1),
  format: (value) => value,
});

/** A closed set of values, case-sensitive like Kafka's `ValidString.in`. */
export function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  const valueType: ValueType<T[number]> = {
    type: "STRING",
    expected: `one of ${values.join(", ")}`,
    schema: z.string().trim().pipe(z.enum(values)) as unknown as z.ZodType<T[number], string>,
    format: (value) => value,
  };
  return valueType;
}

const splitList = (text: string) => (text.trim() === "" ? [] : text.trim().split(/\s*,\s*/));

/** A comma-separated list (Kafka's LIST type); `allowed` restricts the items. */
export function list<T extends string>(
  what: string,
  { allowed, minItems = 0 }: { allowed?: readonly T[]; minItems?: number } = {},
) {
  const item = allowed ? z.enum(allowed as unknown as [T, ...T[]]) : z.string().min(1);
  const valueType: ValueType<T[]> = {
    type: "LIST",
    expected: `a comma-separated list of ${allowed ? allowed.join(", ") : what}`,
    schema: z.string().transform(splitList).pipe(z.array(item).min(minItems)) as
      unknown as z.ZodType<T[], string>,
    format: (value) => value.join(","),
  };
  return valueType;
}

/** Where a listener binds or what it advertises; an empty host means every interface. */
export interface Endpoint {
  readonly host: string;
  readonly port: number;
}

const ENDPOINT_TEXT = /^(?:plaintext:\/\/)?(\[[0-9a-fA-F:.]*\]|[^:[\]/,\s]*):(\d{1,5})$/i;

/**
 * One plaintext listener, written `HOST:PORT` (the flags) or `PLAINTEXT://HOST:PORT` (Kafka's
 * `listeners` syntax, so a server.properties line works). IPv6 hosts go in brackets.
 */
export const endpoint = (): ValueType<Endpoint> => ({
  type: "STRING",
  expected: "one listener HOST:PORT or PLAINTEXT://HOST:PORT with a port between 0 and 65535",
  schema: z.string().trim().regex(ENDPOINT_TEXT).transform((text) => {
    const [, host = "", port = ""] = ENDPOINT_TEXT.exec(text) ?? [];
    return { host: host.replace(/^\[(.*)\]$/, "$1"), port: Number(port) };
  }).refine((e) => e.port <= 65535),
  format: ({ host, port }) => `PLAINTEXT://${host.includes(":") ? `[${host}]` : host}:${port}`,
});
