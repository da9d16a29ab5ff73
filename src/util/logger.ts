/**
 * The broker's one logger. Every line carries an ISO-8601 UTC timestamp with milliseconds, the
 * level and the component, so operators can grep and correlate lines across brokers:
 *
 *   2026-12-01T20:15:03.123Z INFO [ReplicaManager] partition t-0: leader epoch 3 topic=t
 *
 * `log.format=json` writes one object per line instead (`ts`, `level`, `component`, `msg`,
 * then the fields). `log.level` drops lines below it; a message may be a function, called only
 * when its level is enabled, so hot paths build no strings for lines nobody sees.
 */

export const LOG_LEVELS = ["DEBUG", "INFO", "WARN", "ERROR"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ["text", "json"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Structured context: topic, partition, errorCode, broker ids. Scalars only. */
export type LogFields = Readonly<Record<string, string | number | bigint | boolean | null>>;
/** A message, or a function that builds it (called only if the level is enabled). */
export type LogMessage = string | (() => string);

export interface Logger {
  /** False when lines of `level` are dropped, for callers that prepare costly fields. */
  enabled(level: LogLevel): boolean;
  debug(message: LogMessage, fields?: LogFields): void;
  info(message: LogMessage, fields?: LogFields): void;
  warn(message: LogMessage, fields?: LogFields): void;
  error(message: LogMessage, fields?: LogFields): void;
  /** The same output and level, lines marked with `component` (e.g. "ReplicaManager"). */
  child(component: string): Logger;
}

export interface LogOutput {
  readonly format: LogFormat;
  /** Lines below this level are dropped. */
  readonly level: LogLevel;
  /** Receives each finished line, without its newline. */
  readonly write: (line: string) => void;
  /** Milliseconds since the epoch (tests pin it). */
  readonly nowMs?: () => number;
}

const RANK: Readonly<Record<LogLevel, number>> = { DEBUG: 0, INFO: 1, WARN: 2, ERROR: 3 };

/** Writes to stderr, as Kafka's default log4j console appender does for its own tools. */
export const stderrWrite = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/** A logger for `component` writing to `output`. */
export function createLogger(component: string, output: LogOutput): Logger {
  const minRank = RANK[output.level];
  const nowMs = output.nowMs ?? Date.now;
  const emit = (level: LogLevel, message: LogMessage, fields?: LogFields) => {
    if (RANK[level] < minRank) return;
    const msg = typeof message === "string" ? message : message();
    const ts = new Date(nowMs()).toISOString();
    output.write(
      output.format === "json"
        ? jsonLine(ts, level, component, msg, fields)
        : textLine(ts, level, component, msg, fields),
    );
  };
  return {
    enabled: (level) => RANK[level] >= minRank,
    debug: (message, fields) => emit("DEBUG", message, fields),
    info: (message, fields) => emit("INFO", message, fields),
    warn: (message, fields) => emit("WARN", message, fields),
    error: (message, fields) => emit("ERROR", message, fields),
    child: (name) => createLogger(name, output),
  };
}

function textLine(ts: string, level: LogLevel, component: string, msg: string, f?: LogFields) {
  const line = `${ts} ${level} [${component}] ${msg}`;
  if (f === undefined) return line;
  const pairs = Object.entries(f).map(([k, v]) => `${k}=${String(v)}`);
  return pairs.length === 0 ? line : `${line} ${pairs.join(" ")}`;
}

function jsonLine(ts: string, level: LogLevel, component: string, msg: string, f?: LogFields) {
  const record: Record<string, unknown> = { ts, level, component, msg };
  for (const [k, v] of Object.entries(f ?? {})) {
    // The four names above stay the line's own; a field may not replace them.
    if (!Object.hasOwn(record, k)) record[k] = typeof v === "bigint" ? v.toString() : v;
  }
  return JSON.stringify(record);
}

/** The broker's logger as its config asks (`log.format`, `log.level`), writing to stderr. */
export function brokerLogger(
  config: { readonly "log.format": LogFormat; readonly "log.level": LogLevel },
  write: (line: string) => void = stderrWrite,
): Logger {
  return createLogger("Broker", {
    format: config["log.format"],
    level: config["log.level"],
    write,
  });
}

/** Drops everything: for tools and tests that want no output. */
export const SILENT_LOGGER: Logger = {
  enabled: () => false,
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => SILENT_LOGGER,
};
