import { describe, expect, test } from "bun:test";
import { UsageError } from "../../src/cli/args.ts";
import { parseServeArgs, SHUTDOWN_MS_PER_LOG, shutdownBoundMs } from "../../src/cli/serve.ts";
import { loadConfig } from "../../src/config/load-config.ts";

describe("quill serve arguments", () => {
  test("dedicated flags become settings of their Kafka keys, in command-line order", () => {
    const options = parseServeArgs([
      "--listen",
      "0.0.0.0:9093",
      "--advertise=broker1:9093",
      "--data-dir",
      "/var/quill",
      "--broker-id",
      "3",
      "--set",
      "num.partitions=6",
      "--set",
      "log.retention.hours = 24",
      "--zookeeper",
      "zk:2181",
      "--config",
      "s.properties",
    ]);
    expect(options.configFile).toBe("s.properties");
    expect(options.help).toBe(false);
    expect(options.settings).toEqual([
      { key: "listeners", value: "0.0.0.0:9093", flag: "--listen" },
      { key: "advertised.listeners", value: "broker1:9093", flag: "--advertise" },
      { key: "log.dirs", value: "/var/quill", flag: "--data-dir" },
      { key: "broker.id", value: "3", flag: "--broker-id" },
      { key: "num.partitions", value: "6", flag: "--set" },
      { key: "log.retention.hours", value: " 24", flag: "--set" },
      { key: "zookeeper.connect", value: "zk:2181", flag: "--zookeeper" },
    ]);
  });

  test("--set keeps everything after the first = as the value", () => {
    expect(parseServeArgs(["--set", "listeners=PLAINTEXT://h:1"]).settings[0]).toEqual({
      key: "listeners",
      value: "PLAINTEXT://h:1",
      flag: "--set",
    });
  });

  test("switches", () => {
    expect(parseServeArgs(["--help"]).help).toBe(true);
    expect(parseServeArgs(["-h"]).help).toBe(true);
    expect(parseServeArgs(["--print-config"]).printConfig).toBe(true);
  });

  test("mistakes are UsageErrors that name the flag", () => {
    const cases: [string[], string][] = [
      [["--lisen", "x:1"], "unknown flag --lisen"],
      [["--bogus=1"], "unknown flag --bogus"],
      [["-x"], "unknown flag -x"],
      [["serve"], 'unexpected argument "serve"'],
      [["--listen"], "--listen needs a value"],
      [["--data-dir", "--broker-id", "1"], "--data-dir needs a value"],
      [["--set", "novalue"], '--set expects KEY=VALUE, got "novalue"'],
      [["--set", "=1"], '--set expects KEY=VALUE, got "=1"'],
      [["--help=yes"], "--help takes no value"],
    ];
    for (const [argv, message] of cases) {
      expect(() => parseServeArgs(argv)).toThrow(new UsageError(message));
    }
  });
});

describe("quill serve's stop bound", () => {
  test("30 s embedded, a session timeout more with ZooKeeper, and 3 ms per partition log", () => {
    const embedded = loadConfig({ flags: [] }).config;
    const zk = loadConfig({
      flags: [
        { key: "zookeeper.connect", value: "zk:2181", flag: "--set" },
        { key: "zookeeper.session.timeout.ms", value: "18000", flag: "--set" },
      ],
    }).config;
    expect(shutdownBoundMs(embedded)).toBe(30_000);
    expect(shutdownBoundMs(zk)).toBe(48_000);
    // Closing 10,000 logs is the step that grows with the broker (docs/scaling.md).
    expect(shutdownBoundMs(embedded, 10_000)).toBe(30_000 + 10_000 * SHUTDOWN_MS_PER_LOG);
    expect(shutdownBoundMs(zk, 10_000)).toBe(78_000);
  });
});
