/**
 * Arguments of the client commands (`quill topic …`, `quill group …`): positional words, long
 * flags with values (`--flag v`, `--flag=v`), short aliases (`-b v`), repeatable flags (`-c`,
 * `-X`, `-H`) and switches. Unknown flags are usage errors, so a typo is reported.
 */
import { UsageError } from "./args.ts";

export interface CommandSpec {
  /** Long names of flags that take a value. */
  readonly values: readonly string[];
  /** Long names of flags that take none. */
  readonly switches: readonly string[];
  /** Short alias to long name: `-b` to `--brokers`. */
  readonly aliases?: Readonly<Record<string, string>>;
}

const MAX_ARGS = 10_000;

export class CommandArgs {
  constructor(
    readonly positionals: readonly string[],
    private readonly flags: ReadonlyMap<string, readonly string[]>,
  ) {}

  /** The last value given for `name`. */
  get(name: string): string | undefined {
    return this.flags.get(name)?.at(-1);
  }

  all(name: string): readonly string[] {
    return this.flags.get(name) ?? [];
  }

  has(name: string): boolean {
    return this.flags.has(name);
  }

  /** An integer flag within [min, max], or `fallback` when absent. */
  int(name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
    const raw = this.get(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new UsageError(`${name} expects an integer from ${min} to ${max}, got "${raw}"`);
    }
    return value;
  }

  /** Exactly `count` positionals named by `names`, e.g. ["TOPIC"]. */
  expect(names: readonly string[]): string[] {
    if (this.positionals.length !== names.length) {
      const got = this.positionals.length === 0 ? "none" : `"${this.positionals.join(" ")}"`;
      throw new UsageError(`expected ${names.join(" ")}, got ${got}`);
    }
    return [...this.positionals];
  }
}

export function parseCommandArgs(argv: readonly string[], spec: CommandSpec): CommandArgs {
  if (argv.length > MAX_ARGS) throw new UsageError(`too many arguments (${argv.length})`);
  const values = new Set(spec.values);
  const switches = new Set(spec.switches);
  const positionals: string[] = [];
  const flags = new Map<string, string[]>();
  const add = (name: string, value: string) => flags.set(name, [...(flags.get(name) ?? []), value]);
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    if (word === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!word.startsWith("-") || word === "-" || /^-\d/.test(word)) {
      positionals.push(word);
      continue;
    }
    const eq = word.startsWith("--") ? word.indexOf("=") : -1;
    const written = eq > 0 ? word.slice(0, eq) : word;
    const name = spec.aliases?.[written] ?? written;
    if (switches.has(name)) {
      if (eq > 0) throw new UsageError(`${written} takes no value`);
      add(name, "");
    } else if (values.has(name)) {
      const value = eq > 0 ? word.slice(eq + 1) : argv[++i];
      if (value === undefined) throw new UsageError(`${written} needs a value`);
      add(name, value);
    } else {
      throw new UsageError(`unknown flag ${written}`);
    }
  }
  return new CommandArgs(positionals, flags);
}
