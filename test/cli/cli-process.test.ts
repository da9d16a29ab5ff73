import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import packageJson from "../../package.json" with { type: "json" };

const root = join(import.meta.dir, "..", "..");
const dir = mkdtempSync(join(tmpdir(), "quill-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** An ISO-8601 UTC timestamp with milliseconds, as every broker log line starts. */
const TIMESTAMP = String.raw`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`;

/** Runs `bun src/main.ts …` as its own process, with only the given QUILL_ variables. */
function quill(args: string[], env: Record<string, string> = {}) {
  const cleanEnv = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("QUILL_")),
  );
  const result = Bun.spawnSync([process.execPath, join(root, "src", "main.ts"), ...args], {
    cwd: dir,
    env: { ...cleanEnv, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  return {
    code: result.exitCode,
    stdout: result.stdout.toString(),
    stderr: result.stderr.toString(),
  };
}

describe("quill (source, as a process)", () => {
  test("version and --version from source say dev for the commit and build date", () => {
    for (const args of [["version"], ["--version"], ["-V"]]) {
      expect(quill(args)).toEqual({
        code: 0,
        stdout: `quill ${packageJson.version} (commit dev, built dev)\n`,
        stderr: "",
      });
    }
  });

  test("--help lists the commands; no command is a usage error", () => {
    const help = quill(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("serve");
    expect(help.stdout).toContain("--version");
    const none = quill([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("Usage: quill <command>");
    expect(quill(["bogus"])).toMatchObject({
      code: 2,
      stderr: 'quill: unknown command "bogus" (try quill --help)\n',
    });
  });

  test("serve --help names every flag", () => {
    const { code, stdout } = quill(["serve", "--help"]);
    expect(code).toBe(0);
    for (const flag of [
      "--listen HOST:PORT",
      "--advertise HOST:PORT",
      "--data-dir DIR",
      "--broker-id N",
      "--config FILE",
      "--set KEY=VALUE",
      "--zookeeper CONNECT",
    ]) {
      expect(stdout).toContain(flag);
    }
  });

  test("a bad value exits 2 with one line naming key, value and source", () => {
    const { code, stdout, stderr } = quill(["serve", "--set", "log.segment.bytes=abc"]);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toBe(
      'quill: invalid config log.segment.bytes="abc" (from --set): expected an integer between 14 and 2147483647\n',
    );
    expect(quill(["serve", "--broker-id", "x"]).stderr).toBe(
      'quill: invalid config broker.id="x" (from --broker-id): expected an integer between -1 and 2147483647\n',
    );
    expect(quill(["serve"], { QUILL_NUM_PARTITIONS: "-1" })).toMatchObject({
      code: 2,
      stderr:
        'quill: invalid config num.partitions="-1" (from QUILL_NUM_PARTITIONS): expected an integer between 1 and 2147483647\n',
    });
  });

  test("a security key this build cannot honour exits 2 naming it, before anything binds", () => {
    const config = join(dir, "secure.properties");
    writeFileSync(config, "listeners=PLAINTEXT://127.0.0.1:0\nsecurity.providers=com.example.P\n");
    const { code, stdout, stderr } = quill([
      "serve",
      "--config",
      config,
      "--data-dir",
      join(dir, "never"),
    ]);
    expect({ code, stdout }).toEqual({ code: 2, stdout: "" });
    expect(stderr).toBe(
      "quill: refusing to start: security config " +
        'security.providers="com.example.P" ' +
        "(from secure.properties:2) asks for a pluggable security class, which this build of " +
        "Quill does not provide; remove it, or the broker would run unprotected\n",
    );
    expect(existsSync(join(dir, "never"))).toBe(false);
  });

  test("a listener off loopback without authentication is warned about", () => {
    const { code, stderr } = quill(["serve", "--listen", "0.0.0.0:9092", "--print-config"]);
    expect(code).toBe(0);
    expect(stderr).toBe(
      "quill: warning: listener PLAINTEXT on 0.0.0.0:9092 (PLAINTEXT) is reachable from other " +
        "hosts and does not authenticate clients: anyone who can reach it may read, write and delete every topic\n",
    );
    expect(quill(["serve", "--listen", "127.0.0.1:9092", "--print-config"]).stderr).toBe("");
  });

  test("an unknown flag exits 2 naming it", () => {
    expect(quill(["serve", "--listne", "1.2.3.4:1"])).toMatchObject({
      code: 2,
      stderr: "quill: unknown flag --listne\n",
    });
  });

  test("--zookeeper with no ZooKeeper there exits 1 naming it, after the connection timeout", () => {
    const { code, stderr } = quill([
      "serve",
      "--listen",
      "127.0.0.1:0",
      "--zookeeper",
      "127.0.0.1:1",
      "--set",
      "zookeeper.connection.timeout.ms=500",
    ]);
    expect(code).toBe(1);
    expect(stderr).toMatch(
      new RegExp(
        `^${TIMESTAMP} ERROR \\[Broker\\] cannot reach ZooKeeper at 127.0.0.1:1 within 500`,
        "m",
      ),
    );
  });

  test("every broker line has a timestamp, level and component; json gives objects", async () => {
    for (const format of ["text", "json"]) {
      const dataDir = mkdtempSync(join(dir, "log-format-"));
      const proc = Bun.spawn(
        [
          process.execPath,
          join(root, "src", "main.ts"),
          "serve",
          "--listen",
          "127.0.0.1:0",
          "--data-dir",
          dataDir,
          "--set",
          `log.format=${format}`,
          "--set",
          "no.such.key=1",
        ],
        { stderr: "pipe" },
      );
      let text = "";
      const reader = proc.stderr.getReader();
      while (!text.includes("listening on")) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      proc.kill("SIGTERM");
      for (let r = await reader.read(); !r.done; r = await reader.read())
        text += new TextDecoder().decode(r.value);
      expect(await proc.exited).toBe(0);
      const lines = text.trimEnd().split("\n");
      expect(lines.length).toBeGreaterThanOrEqual(4); // warning, listening, signal, stopped
      for (const line of lines) {
        if (format === "text") {
          expect(line).toMatch(new RegExp(`^${TIMESTAMP} (DEBUG|INFO|WARN|ERROR) \\[\\w+\\] \\S`));
        } else {
          const o = JSON.parse(line);
          expect(new Date(o.ts).toISOString()).toBe(o.ts);
          expect(["INFO", "WARN", "ERROR"]).toContain(o.level);
          expect(typeof o.component).toBe("string");
          expect(typeof o.msg).toBe("string");
        }
      }
      expect(text).toContain("no.such.key");
      expect(text).toContain("stopped cleanly");
    }
  }, 30_000);

  test("--print-config shows flag > env > file > default, and warns about unknown keys", () => {
    const file = join(dir, "server.properties");
    writeFileSync(file, "num.partitions=3\nlog.segment.bytes=1000\nbroker.id=9\nno.such.key=1\n");
    const { code, stdout, stderr } = quill(
      [
        "serve",
        "--config",
        file,
        "--set",
        "num.partitions=5",
        "--data-dir",
        "/srv/q",
        "--print-config",
      ],
      { QUILL_NUM_PARTITIONS: "4", QUILL_LOG_SEGMENT_BYTES: "2000" },
    );
    expect(code).toBe(0);
    const lines = stdout.split("\n");
    expect(lines).toContain("num.partitions=5");
    expect(lines).toContain("log.segment.bytes=2000");
    expect(lines).toContain("broker.id=9");
    expect(lines).toContain("log.dirs=/srv/q");
    expect(lines).toContain("message.max.bytes=1048588");
    expect(lines).toContain("#zookeeper.connect=");
    expect(stderr).toBe(
      "quill: warning: unknown config keys, not used: no.such.key (server.properties:4)\n",
    );
  });

  test("--print-config output reads back through --config to the same configuration", () => {
    const first = quill([
      "serve",
      "--set",
      "log.retention.minutes=7",
      "--listen",
      "[::1]:19092",
      "--print-config",
    ]);
    const file = join(dir, "printed.properties");
    writeFileSync(file, first.stdout);
    const second = quill(["serve", "--config", file, "--print-config"]);
    expect(second).toEqual({ code: 0, stdout: first.stdout, stderr: "" });
  });

  test("config-keys prints the Markdown reference", () => {
    const { code, stdout } = quill(["config-keys"]);
    expect(code).toBe(0);
    expect(stdout).toContain("| `log.segment.bytes` | 1073741824 |");
    expect(stdout).toContain(
      "| `retention.ms` | `log.retention.ms`, `log.retention.minutes`, `log.retention.hours` |",
    );
  });
});
