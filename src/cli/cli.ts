import { ClusterError, UnreachableError } from "../client/client-errors.ts";
import { ConfigError } from "../config/config-error.ts";
import { brokerLogger } from "../util/logger.ts";
import { VERSION, versionLine } from "../version.ts";
import { UsageError } from "./args.ts";
import { runClientCommand, runExport } from "./client-commands.ts";
import { configKeysMarkdown } from "./config-keys.ts";
import { type StartBroker, serve } from "./serve.ts";

export const MAIN_HELP = `Quill ${VERSION}: a Kafka-compatible log broker in one executable.

Usage: quill <command> [options]

Commands:
  serve          start the broker (\`quill serve --help\` for its options)
  topic          create, list, describe, delete, alter topics; produce and consume records
  group          list, describe (with lag), seek and delete consumer groups
  cluster        brokers, controller and cluster id; health; broker configs
  bench          produce or consume load with live figures (records/s, MB/s, latency)
  export         copy topics to JSON-lines or Parquet files, partitions in parallel
  config-keys    list every config key with its default and meaning (Markdown)
  version        print the version, git commit and build date

Options:
  -h, --help     show this help
  -V, --version  print the version, git commit and build date
`;

/**
 * Exit codes: 0 done, 1 unexpected failure, 2 the operator must fix the command line or config,
 * 3 the cluster answered with a Kafka error, 4 no broker reachable, 5 unhealthy or incomplete.
 */
export const EXIT_USAGE = 2;
export const EXIT_CLUSTER_ERROR = 3;
export const EXIT_UNREACHABLE = 4;

/**
 * Runs one `quill` invocation and returns its exit code; mistakes are one line on stderr.
 * `start` is what `quill serve` runs once the configuration is valid.
 */
export async function runCli(argv: readonly string[], start: StartBroker): Promise<number> {
  try {
    return await dispatch(argv, start);
  } catch (error) {
    // A mistake in the command line or config is one plain line, before any broker runs.
    if (error instanceof UsageError || error instanceof ConfigError) {
      process.stderr.write(`quill: ${error.message}\n`);
      return EXIT_USAGE;
    }
    if (error instanceof ClusterError || error instanceof UnreachableError) {
      process.stderr.write(`quill: ${error.message}\n`);
      return error instanceof ClusterError ? EXIT_CLUSTER_ERROR : EXIT_UNREACHABLE;
    }
    const detail = error instanceof Error ? error.stack : String(error);
    brokerLogger({ "log.format": "text", "log.level": "INFO" }).error(
      `unexpected failure: ${detail}`,
    );
    return 1;
  }
}

async function dispatch(argv: readonly string[], start: StartBroker): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "serve":
      return serve(rest, start);
    case "topic":
    case "group":
    case "cluster":
    case "bench":
      return runClientCommand(command, rest);
    case "export":
      return runExport(rest);
    case "config-keys":
      if (rest.length > 0) throw new UsageError(`config-keys takes no arguments, got "${rest[0]}"`);
      process.stdout.write(configKeysMarkdown());
      return 0;
    case "-h":
    case "--help":
    case "help":
      process.stdout.write(MAIN_HELP);
      return 0;
    case "-V":
    case "--version":
    case "version":
      process.stdout.write(`${versionLine()}\n`);
      return 0;
    case undefined:
      process.stderr.write(MAIN_HELP);
      return EXIT_USAGE;
    default:
      throw new UsageError(`unknown command "${command}" (try quill --help)`);
  }
}
