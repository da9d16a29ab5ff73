/**
 * `--isolation-level read_uncommitted|read_committed`, the flag of Kafka's console consumer,
 * for `topic consume` and `export`: Fetch's isolation level (read_committed reads up to the
 * last stable offset and leaves out aborted transactions).
 */
import type { IsolationLevel } from "../client/consumer.ts";
import { UsageError } from "./args.ts";
import type { CommandArgs } from "./command-args.ts";

export function isolationLevel(args: CommandArgs): IsolationLevel {
  const raw = args.get("--isolation-level") ?? "read_uncommitted";
  if (raw === "read_uncommitted") return 0;
  if (raw === "read_committed") return 1;
  throw new UsageError(
    `--isolation-level expects read_uncommitted or read_committed, got "${raw}"`,
  );
}
