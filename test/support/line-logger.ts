import type { Logger, LogLevel, LogMessage } from "../../src/util/logger.ts";

/**
 * A Logger that keeps every line as `LEVEL message` (no timestamp, component or fields), so
 * tests can count and match what was logged. Children share the parent's lines.
 */
export class LineLogger implements Logger {
  constructor(readonly lines: string[] = []) {}

  enabled(_level: LogLevel): boolean {
    return true;
  }
  debug(message: LogMessage): void {
    this.push("DEBUG", message);
  }
  info(message: LogMessage): void {
    this.push("INFO", message);
  }
  warn(message: LogMessage): void {
    this.push("WARN", message);
  }
  error(message: LogMessage): void {
    this.push("ERROR", message);
  }
  child(_component: string): Logger {
    return new LineLogger(this.lines);
  }

  private push(level: LogLevel, message: LogMessage): void {
    this.lines.push(`${level} ${typeof message === "string" ? message : message()}`);
  }
}
