/** A command-line mistake (unknown flag, missing value); `quill` prints it and exits with 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** What a command accepts: flags that take a value, and flags that are switches. */
export interface FlagSpec {
  readonly valueFlags: ReadonlySet<string>;
  readonly switches: ReadonlySet<string>;
}

/** One flag occurrence, in command-line order; a repeated flag (`--set`) appears each time. */
export interface ParsedFlag {
  readonly name: string;
  readonly value: string;
}

/** Enough for any real command line; a longer one is a mistake or an attack on a wrapper. */
const MAX_ARGS = 10_000;

/**
 * Parses `--flag value`, `--flag=value` and `--switch`. No positional arguments are accepted:
 * every word must be a known flag or a flag's value, so a typo is reported instead of ignored.
 */
export function parseFlags(argv: readonly string[], spec: FlagSpec): ParsedFlag[] {
  if (argv.length > MAX_ARGS) {
    throw new UsageError(`too many arguments (${argv.length} > ${MAX_ARGS})`);
  }
  const flags: ParsedFlag[] = [];
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i];
    const eq = word.indexOf("=");
    const name = word.startsWith("--") && eq > 0 ? word.slice(0, eq) : word;
    if (spec.switches.has(name)) {
      if (name !== word) throw new UsageError(`${name} takes no value`);
      flags.push({ name, value: "" });
    } else if (spec.valueFlags.has(name)) {
      const value = name !== word ? word.slice(eq + 1) : argv[++i];
      if (value === undefined || (name === word && value.startsWith("--"))) {
        throw new UsageError(`${name} needs a value`);
      }
      flags.push({ name, value });
    } else {
      const isFlag = word.startsWith("-");
      throw new UsageError(isFlag ? `unknown flag ${name}` : `unexpected argument "${word}"`);
    }
  }
  return flags;
}
