import {
  BROKER_CONFIG_KEYS,
  type BrokerConfig,
  type BrokerConfigKey,
} from "../config/broker-config.ts";
import { ConfigError } from "../config/config-error.ts";
import { type ConfigKey, formatValue } from "../config/config-key.ts";
import { listenerValue } from "../config/listener-config.ts";
import { type FlagSetting, loadConfig } from "../config/load-config.ts";
import { ClusterStartupError } from "../metadata/zookeeper-connection.ts";
import { brokerLogger, type Logger } from "../util/logger.ts";
import { parseFlags, UsageError } from "./args.ts";

export const SERVE_HELP = `Usage: quill serve [options]

Starts a Kafka-compatible broker. Without --zookeeper it is one self-contained
broker that keeps its topics, logs and metadata under --data-dir. With
--zookeeper it keeps topic metadata in ZooKeeper in Kafka's znode layout and
registers itself at /brokers/ids/<broker id>.

Options:
  --listen HOST:PORT     Where clients connect (default 127.0.0.1:9092).
                         Sets listeners.
  --advertise HOST:PORT  The address Metadata returns (default: the --listen
                         address). Sets advertised.listeners.
  --admin HOST:PORT      Serves /health/live, /health/ready and /metrics over
                         HTTP (default: off). Sets admin.listeners.
  --data-dir DIR         Where logs and metadata are kept (default ./data).
                         Sets log.dirs.
  --broker-id N          This broker's id (default 0). Sets broker.id.
  --config FILE          A Java .properties file; a Kafka server.properties works.
  --set KEY=VALUE        Sets any config key; repeatable.
  --zookeeper CONNECT    host:port[,host:port...][/chroot] of a ZooKeeper
                         ensemble. Sets zookeeper.connect.
  --print-config         Prints the resolved configuration as properties, exits.
  -h, --help             Shows this help.

Precedence: flags > environment QUILL_<KEY> (e.g. QUILL_LOG_RETENTION_HOURS=24)
> --config file > defaults. \`quill config-keys\` lists every key with its
default and meaning. SIGTERM or SIGINT stops the broker cleanly and exits 0.
`;

/** Flags that are shorthands for one config key: settings at flag precedence. */
const FLAG_KEYS: Readonly<Record<string, BrokerConfigKey>> = {
  "--listen": "listeners",
  "--advertise": "advertised.listeners",
  "--admin": "admin.listeners",
  "--data-dir": "log.dirs",
  "--broker-id": "broker.id",
  "--zookeeper": "zookeeper.connect",
};

const SPEC = {
  valueFlags: new Set([...Object.keys(FLAG_KEYS), "--config", "--set"]),
  switches: new Set(["--print-config", "--help", "-h"]),
};

interface ServeOptions {
  help: boolean;
  printConfig: boolean;
  configFile: string | null;
  readonly settings: FlagSetting[];
}

export function parseServeArgs(argv: readonly string[]): Readonly<ServeOptions> {
  const options: ServeOptions = { help: false, printConfig: false, configFile: null, settings: [] };
  for (const { name, value } of parseFlags(argv, SPEC)) {
    if (name === "--help" || name === "-h") options.help = true;
    else if (name === "--print-config") options.printConfig = true;
    else if (name === "--config") options.configFile = value;
    else if (name === "--set") options.settings.push(parseSet(value));
    else options.settings.push({ key: FLAG_KEYS[name], value, flag: name });
  }
  return options;
}

function parseSet(assignment: string): FlagSetting {
  const eq = assignment.indexOf("=");
  if (eq <= 0) throw new UsageError(`--set expects KEY=VALUE, got "${assignment}"`);
  return { key: assignment.slice(0, eq).trim(), value: assignment.slice(eq + 1), flag: "--set" };
}

/** What `quill serve` holds while the broker runs: all it does with it is stop it. */
export interface RunningBroker {
  /** Stops accepting, finishes in-flight requests, flushes and closes logs, writes the
   * clean-shutdown marker. */
  stop(): Promise<void>;
  /** SIGHUP: re-reads TLS certificates; returns the listeners reloaded. */
  reloadCertificates?(): string[];
  /** The partition logs the broker holds: the stop's bound grows with them (shutdownBoundMs). */
  hostedLogCount?(): number;
}

/** Starts the broker; null means there is nothing to keep running (the process exits 0). */
export type StartBroker = (config: BrokerConfig, log: Logger) => Promise<RunningBroker | null>;

/**
 * `quill serve`: loads the configuration (a mistake throws before anything binds), starts the
 * broker and keeps it running until SIGTERM or SIGINT, then stops it and returns 0.
 */
export async function serve(argv: readonly string[], start: StartBroker): Promise<number> {
  const options = parseServeArgs(argv);
  if (options.help) {
    process.stdout.write(SERVE_HELP);
    return 0;
  }
  const { config, warning } = loadConfig({
    configFile: options.configFile,
    env: process.env,
    flags: options.settings,
  });
  if (options.printConfig) {
    if (warning !== null) process.stderr.write(`quill: warning: ${warning}\n`);
    for (const line of exposureWarnings(config)) process.stderr.write(`quill: warning: ${line}\n`);
    process.stdout.write(propertiesText(config));
    return 0;
  }
  const log = brokerLogger(config);
  if (warning !== null) log.warn(warning);
  for (const line of exposureWarnings(config)) log.warn(line);
  try {
    return await runUntilSignal(() => start(config, log), config, log);
  } catch (error) {
    // ZooKeeper unreachable, or the broker id taken: the operator's to fix, not a Quill bug.
    if (!(error instanceof ClusterStartupError)) throw error;
    log.error(error.message);
    return 1;
  }
}

const LOOPBACK_HOST = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/i;

/**
 * A listener reachable from other machines whose clients do not authenticate: anyone who can
 * reach the port may read, write and delete every topic. The operator may mean it (a private
 * network), so it is a warning, not a refusal.
 */
export function exposureWarnings(config: BrokerConfig): string[] {
  return config.listeners.flatMap((l) => {
    if (LOOPBACK_HOST.test(l.host) || l.securityProtocol.startsWith("SASL_")) return [];
    const certified =
      l.securityProtocol === "SSL" &&
      listenerValue(config, l.listenerName, "ssl.client.auth") === "required";
    if (certified) return [];
    const where = l.host === "" ? "every interface" : l.host;
    return [
      `listener ${l.listenerName} on ${where}:${l.port} (${l.securityProtocol}) is reachable ` +
        "from other hosts and does not authenticate clients: anyone who can reach it may read, " +
        "write and delete every topic",
    ];
  });
}

/** The effective configuration in .properties form, so it can be read back with --config. */
function propertiesText(config: BrokerConfig): string {
  const names = Object.keys(BROKER_CONFIG_KEYS) as BrokerConfigKey[];
  const lines = names.map((name) => {
    const def: ConfigKey<unknown> = BROKER_CONFIG_KEYS[name];
    const value = formatValue(def, config[name]);
    return value === null ? `#${name}=` : `${name}=${value}`;
  });
  return lines.join("\n") + "\n";
}

const STOP_SIGNALS = ["SIGTERM", "SIGINT"] as const;

/**
 * What a stop may take per partition log on top of the fixed bound: closing the logs is the
 * one step whose work grows with them (each log's last index, epoch and producer-state writes;
 * storage/log-manager.ts closeAsync). 10,000 logs took 2.3 ms each at load average 19 on the
 * shared 2-core development machine (docs/scaling.md, Thousands of partitions).
 */
export const SHUTDOWN_MS_PER_LOG = 3;

/**
 * The most a stop may take: controlled shutdown (at most one ZooKeeper session timeout), then
 * 30 s for the rest (the controller's last task 5 s, the request drain 10 s, deregistration
 * and closing the ZooKeeper session a few seconds each), whatever ZooKeeper and the other
 * brokers do, plus SHUTDOWN_MS_PER_LOG for each of the `logCount` partition logs the broker
 * holds. README, Current limits, documents it.
 */
export function shutdownBoundMs(config: BrokerConfig, logCount = 0): number {
  const fixedMs =
    config["zookeeper.connect"] === null ? 30_000 : config["zookeeper.session.timeout.ms"] + 30_000;
  return fixedMs + logCount * SHUTDOWN_MS_PER_LOG;
}

/** SIGHUP: TLS listeners take new certificates; a bad file is reported and changes nothing. */
function reloadCertificates(broker: RunningBroker, log: Logger): void {
  if (broker.reloadCertificates === undefined) return;
  try {
    const names = broker.reloadCertificates();
    log.info(
      `SIGHUP: reloaded the certificates of ${names.length} TLS listener(s)` +
        (names.length > 0 ? ` (${names.join(", ")})` : ""),
    );
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    log.error(`SIGHUP: certificates not reloaded, the old ones stay: ${error.message}`);
  }
}

/**
 * Starts the broker and waits for the first SIGTERM or SIGINT, then stops it and resolves with
 * the exit code. The handlers go in before the start, so a signal that arrives while the
 * broker starts (it may already listen) still leads to a clean stop, not an abrupt death.
 * A second signal exits at once with 1: the operator has asked twice.
 */
async function runUntilSignal(
  start: () => Promise<RunningBroker | null>,
  config: BrokerConfig,
  log: Logger,
): Promise<number> {
  const { promise: signalled, resolve } = Promise.withResolvers<NodeJS.Signals>();
  let received = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    received++;
    if (received > 1) {
      log.error(`${signal} again while stopping; exiting without a clean shutdown`);
      process.exit(1);
    }
    resolve(signal);
  };
  for (const s of STOP_SIGNALS) process.on(s, onSignal);
  // In before the start too: SIGHUP's default action would end the process.
  let started: RunningBroker | null = null;
  const reload = () => {
    if (started === null) log.warn("SIGHUP while starting: nothing reloaded");
    else reloadCertificates(started, log);
  };
  process.on("SIGHUP", reload);
  try {
    const broker = await start();
    if (broker === null) return 0;
    started = broker;
    log.info(`${await signalled} received, stopping`);
    const boundMs = shutdownBoundMs(config, broker.hostedLogCount?.() ?? 0);
    // The last resort: each step of stop() has its own bound, so this fires only on a bug.
    const watchdog = setTimeout(() => {
      log.error(`stop did not finish within ${boundMs} ms; exiting without a clean shutdown`);
      process.exit(1);
    }, boundMs);
    watchdog.unref();
    await broker.stop();
    clearTimeout(watchdog);
    return 0;
  } finally {
    for (const s of STOP_SIGNALS) process.off(s, onSignal);
    process.off("SIGHUP", reload);
  }
}
