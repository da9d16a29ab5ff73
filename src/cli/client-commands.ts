/**
 * The client commands' table: for each `quill <command> <subcommand>`, its flags, short
 * aliases, help line and the function that runs it. `cli.ts` hands `topic`, `group`, `cluster`,
 * `bench` and `export` here.
 */
import { UsageError } from "./args.ts";
import { benchConsume, benchProduce } from "./bench-command.ts";
import { clusterConfig, clusterHealth, clusterInfo } from "./cluster-commands.ts";
import { type CommandArgs, parseCommandArgs } from "./command-args.ts";
import { CONNECTION_ALIASES, CONNECTION_HELP, CONNECTION_VALUES } from "./connection-options.ts";
import { exportTopics } from "./export-command.ts";
import { groupDelete, groupDescribe, groupList, groupSeek } from "./group-commands.ts";
import {
  topicAddPartitions,
  topicAlterConfig,
  topicCreate,
  topicDelete,
  topicDescribe,
  topicDescribeConfig,
  topicList,
} from "./topic-admin.ts";
import { topicConsume } from "./topic-consume.ts";
import { topicProduce } from "./topic-produce.ts";

export interface Subcommand {
  readonly usage: string;
  readonly values?: readonly string[];
  readonly switches?: readonly string[];
  readonly aliases?: Readonly<Record<string, string>>;
  readonly run: (args: CommandArgs) => Promise<number>;
}

export type CommandTable = Readonly<Record<string, Readonly<Record<string, Subcommand>>>>;

const TOPIC: Readonly<Record<string, Subcommand>> = {
  create: {
    usage: "create TOPIC [-p PARTITIONS] [-r REPLICATION] [-c KEY=VALUE]...",
    values: ["--partitions", "--replication-factor", "--config"],
    aliases: { "-p": "--partitions", "-r": "--replication-factor", "-c": "--config" },
    run: topicCreate,
  },
  list: { usage: "list [--internal]", switches: ["--internal"], run: topicList },
  describe: { usage: "describe TOPIC...", run: topicDescribe },
  delete: { usage: "delete TOPIC...", run: topicDelete },
  "add-partitions": {
    usage: "add-partitions TOPIC -p TOTAL",
    values: ["--partitions"],
    aliases: { "-p": "--partitions" },
    run: topicAddPartitions,
  },
  "alter-config": {
    usage: "alter-config TOPIC [--set KEY=VALUE]... [--delete KEY]...",
    values: ["--set", "--delete"],
    run: topicAlterConfig,
  },
  "describe-config": {
    usage: "describe-config TOPIC [--all]",
    switches: ["--all"],
    run: topicDescribeConfig,
  },
  produce: {
    usage:
      "produce TOPIC [--file F] [-K SEP] [-H K=V]... [-p N] [-z CODEC] [-a 0|1|all] [--rate N]",
    values: [
      "--file",
      "--key-separator",
      "--header",
      "--partition",
      "--compression",
      "--acks",
      "--rate",
    ],
    aliases: {
      "-l": "--file",
      "-K": "--key-separator",
      "-H": "--header",
      "-p": "--partition",
      "-z": "--compression",
      "-a": "--acks",
    },
    run: topicProduce,
  },
  consume: {
    usage:
      "consume TOPIC [-o beginning|end|N|-N|@TIME] [-p N] [-g GROUP] [-n COUNT] [-e] " +
      "[-f FMT|json] [--isolation-level read_committed]",
    values: ["--offset", "--partition", "--group", "--count", "--isolation-level"],
    switches: ["--exit"],
    aliases: {
      "-o": "--offset",
      "-p": "--partition",
      "-g": "--group",
      "-n": "--count",
      "-e": "--exit",
      "-f": "--format",
    },
    run: topicConsume,
  },
};

const GROUP: Readonly<Record<string, Subcommand>> = {
  list: { usage: "list", run: groupList },
  describe: { usage: "describe GROUP", run: groupDescribe },
  seek: {
    usage: "seek GROUP --to earliest|latest|OFFSET|@TIME [--topic T]... [--dry-run]",
    values: ["--to", "--topic"],
    switches: ["--dry-run"],
    aliases: { "-t": "--topic" },
    run: groupSeek,
  },
  delete: { usage: "delete GROUP...", run: groupDelete },
};

const CLUSTER: Readonly<Record<string, Subcommand>> = {
  info: { usage: "info", run: clusterInfo },
  health: { usage: "health (exit code 5 when unhealthy)", run: clusterHealth },
  config: {
    usage: "config [--broker ID] [--all]",
    values: ["--broker"],
    switches: ["--all"],
    run: clusterConfig,
  },
};

const BENCH: Readonly<Record<string, Subcommand>> = {
  produce: {
    usage:
      "produce TOPIC [-n RECORDS] [-s RECORD_BYTES] [-z CODEC] [-a 0|1|all] " +
      "[--batch-bytes N] [--in-flight N] [--rate N]",
    values: [
      "--count",
      "--record-size",
      "--compression",
      "--acks",
      "--batch-bytes",
      "--in-flight",
      "--rate",
    ],
    aliases: { "-n": "--count", "-s": "--record-size", "-z": "--compression", "-a": "--acks" },
    run: benchProduce,
  },
  consume: {
    usage: "consume TOPIC [-n RECORDS]",
    values: ["--count"],
    aliases: { "-n": "--count" },
    run: benchConsume,
  },
};

export const CLIENT_COMMANDS: Record<string, Readonly<Record<string, Subcommand>>> = {
  topic: TOPIC,
  group: GROUP,
  cluster: CLUSTER,
  bench: BENCH,
};

export const EXIT_CODES_HELP = `Exit codes: 0 done, 1 unexpected failure, 2 usage error,
  3 the cluster answered with a Kafka error, 4 no broker reachable,
  5 unhealthy (cluster health) or incomplete (export).
`;

export function commandHelp(command: string, table: Readonly<Record<string, Subcommand>>): string {
  const lines = Object.values(table).map((s) => `  quill ${command} ${s.usage}`);
  return `Usage:\n${lines.join("\n")}\n\n${CONNECTION_HELP}\n${EXIT_CODES_HELP}`;
}

export const EXPORT: Subcommand = {
  usage:
    "TOPIC... --to DIR [--format jsonl|parquet] [--from beginning|OFFSET|@TIME] " +
    "[--to-time TIME] [--group NAME] [--parallel N] [--file-records N] [--file-mb N] " +
    "[--file-window hour|day] " +
    "[--key-as text|bytes] [--value-as text|bytes|json] [--progress-ms N] " +
    "[--isolation-level read_committed]",
  values: [
    "--to",
    "--from",
    "--to-time",
    "--group",
    "--parallel",
    "--file-records",
    "--file-mb",
    "--file-window",
    "--key-as",
    "--value-as",
    "--progress-ms",
    "--isolation-level",
  ],
  aliases: { "-g": "--group" },
  run: exportTopics,
};

/** Runs `quill export …`, a command without subcommands. */
export function runExport(argv: readonly string[]): Promise<number> {
  if (argv.length === 0 || argv.includes("--help") || argv.includes("-h")) {
    (argv.length === 0 ? process.stderr : process.stdout).write(
      `Usage: quill export ${EXPORT.usage}\n\n${CONNECTION_HELP}\n${EXIT_CODES_HELP}`,
    );
    return Promise.resolve(argv.length === 0 ? 2 : 0);
  }
  return EXPORT.run(parseArgsFor(EXPORT, argv));
}

function parseArgsFor(sub: Subcommand, argv: readonly string[]): CommandArgs {
  return parseCommandArgs(argv, {
    values: [...CONNECTION_VALUES, ...(sub.values ?? [])],
    switches: sub.switches ?? [],
    aliases: { ...CONNECTION_ALIASES, ...sub.aliases },
  });
}

/** Runs `quill <command> <subcommand> …`. */
export async function runClientCommand(command: string, argv: readonly string[]): Promise<number> {
  const table = CLIENT_COMMANDS[command]!;
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    (name === undefined ? process.stderr : process.stdout).write(commandHelp(command, table));
    return name === undefined ? 2 : 0;
  }
  const sub = table[name];
  if (sub === undefined) {
    throw new UsageError(`unknown subcommand "${command} ${name}" (try quill ${command} --help)`);
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    process.stdout.write(`Usage: quill ${command} ${sub.usage}\n\n${CONNECTION_HELP}`);
    return 0;
  }
  return sub.run(parseArgsFor(sub, rest));
}
