import { z } from "zod";

/**
 * Kafka's config value types, with the codes DescribeConfigs (v3+) reports as `config_type`.
 * Quill uses some of them; the numbers are Kafka's wire values.
 */
export const ConfigType = {
  UNKNOWN: 0,
  BOOLEAN: 1,
  STRING: 2,
  INT: 3,
  SHORT: 4,
  LONG: 5,
  DOUBLE: 6,
  LIST: 7,
  CLASS: 8,
  PASSWORD: 9,
} as const;
export type ConfigTypeName = "BOOLEAN" | "STRING" | "INT" | "LONG" | "DOUBLE" | "LIST" | "PASSWORD";

/** How one kind of value is read from its string form, described and written back. */
export interface ValueType<T> {
  readonly type: ConfigTypeName;
  /** Completes "expected …" in error messages, e.g. "an integer ≥ 14". */
  readonly expected: string;
  /** Every source (file, environment, flag, CreateTopics) hands values over as strings. */
  readonly schema: z.ZodType<T, string>;
  /** The string Kafka would show for this value (DescribeConfigs, `--print-config`). */
  format(value: T): string;
  /**
   * Why Kafka's ConfigDef refuses `text`: the value its ConfigException names (a list names the
   * bad item) and its reason ("Value must be at least 14"), for topic configs, whose errors
   * clients show as Kafka words them.
   */
  refusal(text: string): Refusal;
}

/** A value type as its factories write it: the schema as a function, built by `valueType`. */
export type ValueTypeSpec<T> = Omit<ValueType<T>, "schema"> & {
  readonly schema: () => z.ZodType<T, string>;
};

/**
 * A value type whose schema is built on first use. A zod 4 schema carries some forty methods
 * bound per instance, and a key's type chains about ten schemas (string, trim, regex, transform,
 * pipe, min, max...): built at start, the ~190 keys held 1,800 schemas, 58,000 closures and
 * about 4 MB of the heap, for the handful of keys a broker's config sets.
 */
export function valueType<T>(spec: ValueTypeSpec<T>): ValueType<T> {
  const build = spec.schema;
  let schema: z.ZodType<T, string> | undefined;
  return {
    ...spec,
    get schema() {
      schema ??= build();
      return schema;
    },
  };
}

export interface Refusal {
  readonly value: string;
  readonly reason: string;
}

/** Kafka's ConfigException text: `Invalid value 13 for configuration segment.bytes: ...`. */
export const kafkaConfigMessage = (name: string, { value, reason }: Refusal) =>
  `Invalid value ${value} for configuration ${name}: ${reason}`;

/** One config key: its value type, Kafka's default and a one-sentence meaning. */
export interface ConfigKey<T> {
  readonly valueType: ValueType<T>;
  readonly default: T;
  readonly doc: string;
}

export const key = <T>(valueType: ValueType<T>, defaultValue: T, doc: string): ConfigKey<T> => ({
  valueType,
  default: defaultValue,
  doc,
});

/** A key whose absence means something (for example "use the hours key instead"). */
export const nullableKey = <T>(valueType: ValueType<T>, doc: string): ConfigKey<T | null> => ({
  valueType: valueType as ValueType<T | null>,
  default: null,
  doc,
});

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

/** Kafka's ConfigDef.Range reasons. */
const rangeReason = <N extends number | bigint>(n: N, min: N, max: N) =>
  n < min ? `Value must be at least ${min}` : `Value must be no more than ${max}`;

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
  const typeMax = type === "INT" ? BigInt(INT_MAX) : LONG_MAX;
  return valueType<number>({
    type,
    expected: rangeText(type, min, max, typeMin),
    schema: () =>
      z
        .string()
        .trim()
        .regex(INTEGER_TEXT)
        .transform((text) => BigInt(text))
        .pipe(z.bigint().min(min).max(max))
        .transform(Number),
    format: (value) => (value >= LONG_MAX_AS_NUMBER ? LONG_MAX.toString() : String(value)),
    refusal(text) {
      const trimmed = text.trim();
      const n = INTEGER_TEXT.test(trimmed) ? BigInt(trimmed) : null;
      if (n === null || n < typeMin || n > typeMax) {
        return { value: text, reason: `Not a number of type ${type}` };
      }
      return { value: String(n), reason: rangeReason(n, min, max) };
    },
  });
}

export const int = ({ min = INT_MIN, max = INT_MAX }: { min?: number; max?: number } = {}) =>
  integer("INT", BigInt(min), BigInt(max), BigInt(INT_MIN));

export const long = ({ min = LONG_MIN, max = LONG_MAX }: { min?: bigint; max?: bigint } = {}) =>
  integer("LONG", min, max, LONG_MIN);

/** Kafka accepts "true"/"false" in any case, with blanks around. */
export const boolean = (): ValueType<boolean> =>
  valueType({
    type: "BOOLEAN",
    expected: "true or false",
    schema: () =>
      z
        .string()
        .trim()
        .toLowerCase()
        .pipe(z.enum(["true", "false"]))
        .transform((text) => text === "true"),
    format: String,
    refusal: (text) => ({ value: text, reason: "Expected value to be either true or false" }),
  });

const DOUBLE_TEXT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** A DOUBLE between `min` and `max`, formatted as Java's Double.toString ("0.5", "1.0"). */
export function double({ min, max }: { min: number; max: number }): ValueType<number> {
  return valueType({
    type: "DOUBLE",
    expected: `a number between ${min} and ${max}`,
    schema: () =>
      z.string().trim().regex(DOUBLE_TEXT).transform(Number).pipe(z.number().min(min).max(max)),
    format: (value) => (Number.isInteger(value) ? value.toFixed(1) : String(value)),
    refusal(text) {
      if (!DOUBLE_TEXT.test(text.trim())) {
        return { value: text, reason: "Not a number of type DOUBLE" };
      }
      const n = Number(text.trim());
      return { value: String(n), reason: rangeReason(n, min, max) };
    },
  });
}

export const string = (): ValueType<string> =>
  valueType({
    type: "STRING",
    expected: "a non-empty string",
    schema: () => z.string().trim().min(1),
    format: (value) => value,
    refusal: (text) => ({ value: text, reason: "String must be non-empty" }),
  });

/** A closed set of values, case-sensitive like Kafka's `ValidString.in`. */
/** One of `values`; with `ignoreCase`, in any case (Kafka's CaseInsensitiveValidString). */
export function oneOf<const T extends readonly [string, ...string[]]>(
  values: T,
  options: { ignoreCase?: boolean } = {},
) {
  const schema = () => {
    const text = z.string().trim();
    const normalized = options.ignoreCase === true ? text.toLowerCase() : text;
    return normalized.pipe(z.enum(values)) as unknown as z.ZodType<T[number], string>;
  };
  return valueType<T[number]>({
    type: "STRING",
    expected: `one of ${values.join(", ")}`,
    schema,
    format: (value) => value,
    refusal: (text) => ({
      value: text.trim(),
      reason: `String must be one of: ${values.join(", ")}`,
    }),
  });
}

const splitList = (text: string) => (text.trim() === "" ? [] : text.trim().split(/\s*,\s*/));

/** A comma-separated list (Kafka's LIST type); `allowed` restricts the items. */
export function list<T extends string>(
  what: string,
  { allowed, minItems = 0 }: { allowed?: readonly T[]; minItems?: number } = {},
) {
  const schema = () => {
    const item = allowed ? z.enum(allowed as unknown as [T, ...T[]]) : z.string().min(1);
    const items = z.array(item).min(minItems);
    return z.string().transform(splitList).pipe(items) as unknown as z.ZodType<T[], string>;
  };
  return valueType<T[]>({
    type: "LIST",
    expected: `a comma-separated list of ${allowed ? allowed.join(", ") : what}`,
    schema,
    format: (value) => value.join(","),
    refusal(text) {
      const items = splitList(text);
      const known: readonly string[] | undefined = allowed;
      const bad = known === undefined ? undefined : items.find((i) => !known.includes(i));
      if (bad !== undefined) {
        return { value: bad, reason: `String must be one of: ${allowed!.join(", ")}` };
      }
      return { value: `[${items.join(", ")}]`, reason: `must hold at least ${minItems} item(s)` };
    },
  });
}
