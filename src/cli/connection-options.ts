/**
 * Where a client command connects, from (highest first): `-b/--brokers`, `-X bootstrap.servers=`,
 * `QUILL_BROKERS`, the profile file, then 127.0.0.1:9092. The profile file
 * (`~/.config/quill/quill.properties`, or `QUILL_CONFIG`) holds named clusters as
 * `<profile>.<client key>=value` lines; `--profile NAME` (or `QUILL_PROFILE`) picks one, and
 * `default.` keys apply without one. `--command-config FILE` (Kafka tools' flag) adds a
 * properties file above the profile. Client keys are Kafka's client config names.
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { type ClientConfig, ClusterClient, parseBrokerList } from "../client/cluster-client.ts";
import { DEFAULT_GROUP_MEMBER_OPTIONS, type GroupMemberOptions } from "../client/group-member.ts";
import { parseProperties } from "../config/properties.ts";
import { UsageError } from "./args.ts";
import type { CommandArgs } from "./command-args.ts";
import { SECURITY_KEYS, securityConfig } from "./security-options.ts";

/** Flags every client command takes, long names (with -b and -X as short forms). */
export const CONNECTION_VALUES = [
  "--brokers",
  "-X",
  "--profile",
  "--command-config",
  "--format",
] as const;
export const CONNECTION_ALIASES = { "-b": "--brokers" } as const;

export const CONNECTION_HELP = `Connection options (every command):
  -b, --brokers HOST:PORT,...  bootstrap brokers (default $QUILL_BROKERS or 127.0.0.1:9092)
  -X KEY=VALUE                 a Kafka client setting: bootstrap.servers, client.id,
                               request.timeout.ms, socket.connection.setup.timeout.ms,
                               security.protocol, sasl.*, ssl.* (docs/cli.md)
  --command-config FILE        client settings in a properties file, as Kafka's tools take
  --profile NAME               a cluster from ~/.config/quill/quill.properties ($QUILL_CONFIG)
  --format table|json          output for people (default) or for scripts
`;

/** Kafka consumer keys a group member (`topic consume -g`) takes from -X or the files. */
const GROUP_MEMBER_KEYS = ["session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms"];

/** Kafka producer keys `topic produce` and `bench produce` take. */
const PRODUCER_KEYS = ["enable.idempotence", "delivery.timeout.ms", "retry.backoff.ms"];

const CLIENT_KEYS = new Set<string>([
  "bootstrap.servers",
  "client.id",
  "request.timeout.ms",
  "socket.connection.setup.timeout.ms",
  ...GROUP_MEMBER_KEYS,
  ...PRODUCER_KEYS,
  ...SECURITY_KEYS,
]);

function profileSettings(profile: string | undefined): Map<string, string> {
  const file = process.env.QUILL_CONFIG ?? join(homedir(), ".config", "quill", "quill.properties");
  const out = new Map<string, string>();
  if (!existsSync(file)) {
    if (profile !== undefined) throw new UsageError(`--profile ${profile}: no file ${file}`);
    return out;
  }
  const name = profile ?? "default";
  const props = parseProperties(readFileSync(file, "utf8"));
  for (const { key, value } of props) {
    if (key.startsWith(`${name}.`)) out.set(key.slice(name.length + 1), value);
  }
  if (profile !== undefined && out.size === 0) {
    throw new UsageError(`profile "${profile}" has no keys in ${file}`);
  }
  return out;
}

/** The client settings the command line, environment and profile give. */
export function clientSettings(args: CommandArgs): Map<string, string> {
  const settings = profileSettings(args.get("--profile") ?? process.env.QUILL_PROFILE);
  if (process.env.QUILL_BROKERS) settings.set("bootstrap.servers", process.env.QUILL_BROKERS);
  const commandConfig = args.get("--command-config");
  if (commandConfig !== undefined) {
    if (!existsSync(commandConfig))
      throw new UsageError(`--command-config: no file ${commandConfig}`);
    for (const { key, value } of parseProperties(readFileSync(commandConfig, "utf8"))) {
      settings.set(key, value);
    }
  }
  for (const x of args.all("-X")) {
    const eq = x.indexOf("=");
    if (eq <= 0) throw new UsageError(`-X expects KEY=VALUE, got "${x}"`);
    settings.set(x.slice(0, eq).trim(), x.slice(eq + 1));
  }
  const brokers = args.get("--brokers");
  if (brokers !== undefined) settings.set("bootstrap.servers", brokers);
  for (const key of settings.keys()) {
    if (!CLIENT_KEYS.has(key)) throw new UsageError(`unknown client setting "${key}"`);
  }
  return settings;
}

function positiveInt(settings: Map<string, string>, key: string, fallback: number): number {
  const raw = settings.get(key);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`${key} must be a positive integer`);
  return n;
}

export function groupMemberOptions(settings: Map<string, string>): GroupMemberOptions {
  const d = DEFAULT_GROUP_MEMBER_OPTIONS;
  const options = {
    sessionTimeoutMs: positiveInt(settings, "session.timeout.ms", d.sessionTimeoutMs),
    heartbeatIntervalMs: positiveInt(settings, "heartbeat.interval.ms", d.heartbeatIntervalMs),
    rebalanceTimeoutMs: positiveInt(settings, "max.poll.interval.ms", d.rebalanceTimeoutMs),
  };
  if (options.heartbeatIntervalMs >= options.sessionTimeoutMs) {
    throw new UsageError("heartbeat.interval.ms must be lower than session.timeout.ms");
  }
  return options;
}

/**
 * Idempotence and retries of the producer: idempotent by default with acks=all, as Kafka 3.x;
 * `enable.idempotence=true` with other acks is refused, as Kafka's ConfigException does.
 */
export function producerRetryOptions(args: CommandArgs, acks: number) {
  const settings = clientSettings(args);
  const raw = settings.get("enable.idempotence");
  if (raw !== undefined && raw !== "true" && raw !== "false") {
    throw new UsageError(`enable.idempotence expects true or false, got "${raw}"`);
  }
  if (raw === "true" && acks !== -1) {
    throw new UsageError("enable.idempotence=true needs acks=all (-a all)");
  }
  const delivery = settings.get("delivery.timeout.ms");
  return {
    idempotent: raw === undefined ? acks === -1 : raw === "true",
    deliveryTimeoutMs: delivery === "0" ? 0 : positiveInt(settings, "delivery.timeout.ms", 120_000),
    retryBackoffMs: positiveInt(settings, "retry.backoff.ms", 100),
  };
}

export function clientConfig(args: CommandArgs): ClientConfig {
  const settings = clientSettings(args);
  const list = settings.get("bootstrap.servers") ?? "127.0.0.1:9092";
  let bootstrap: ClientConfig["bootstrap"];
  try {
    bootstrap = parseBrokerList(list);
  } catch (error) {
    throw new UsageError(`bad broker list: ${(error as Error).message}`);
  }
  return {
    bootstrap,
    clientId: settings.get("client.id") ?? "quill-cli",
    requestTimeoutMs: positiveInt(settings, "request.timeout.ms", 30_000),
    connectTimeoutMs: positiveInt(settings, "socket.connection.setup.timeout.ms", 10_000),
    ...securityConfig(settings),
  };
}

/** Connects as the arguments say, runs `body`, and closes the connections whatever happens. */
export async function withClient<T>(
  args: CommandArgs,
  body: (client: ClusterClient) => Promise<T>,
): Promise<T> {
  const client = await ClusterClient.connect(clientConfig(args));
  try {
    return await body(client);
  } finally {
    client.close();
  }
}
