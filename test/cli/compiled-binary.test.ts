import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import packageJson from "../../package.json" with { type: "json" };
import { ensureBuiltBinary } from "../support/child-broker.ts";

const root = join(import.meta.dir, "..", "..");
const dir = mkdtempSync(join(tmpdir(), "quill-binary-"));
const binary = join(dir, "quill");

beforeAll(() => {
  // Reuses dist/quill when it is newer than every input (CI builds first); otherwise builds it.
  // An empty directory with no node_modules anywhere above it: the binary must carry everything.
  copyFileSync(ensureBuiltBinary(), binary);
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[], env: Record<string, string> = {}) {
  const result = Bun.spawnSync([binary, ...args], {
    cwd: dir,
    env: { PATH: "/usr/bin:/bin", HOME: dir, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  return {
    code: result.exitCode,
    stdout: result.stdout.toString(),
    stderr: result.stderr.toString(),
  };
}

describe("the compiled dist/quill, alone in an empty directory", () => {
  test("version and --version print package.json's version, the commit and build date", () => {
    const commit = Bun.spawnSync(["git", "rev-parse", "--short=12", "HEAD"], { cwd: root });
    const expected = new RegExp(
      `^quill ${packageJson.version.replaceAll(".", "\\.")} \\(commit ` +
        `${commit.stdout.toString().trim()}(-dirty)?, built \\d{4}-\\d\\d-\\d\\dT[\\d:]{8}Z\\)\\n$`,
    );
    for (const args of [["version"], ["--version"]]) {
      const result = run(args);
      expect(result.code).toBe(0);
      expect(result.stderr).toBe("");
      expect(result.stdout).toMatch(expected);
    }
  });

  test("--help and serve --help", () => {
    expect(run(["--help"]).stdout).toContain("Usage: quill <command>");
    const serveHelp = run(["serve", "--help"]);
    expect(serveHelp.code).toBe(0);
    expect(serveHelp.stdout).toContain("--listen HOST:PORT");
    expect(serveHelp.stdout).toContain("--data-dir DIR");
  });

  test("a bad config exits 2 naming the key, from a flag, the environment or a file", () => {
    const fromFlag = run(["serve", "--set", "log.segment.bytes=abc"]);
    expect(fromFlag.code).toBe(2);
    expect(fromFlag.stderr).toContain('log.segment.bytes="abc" (from --set)');
    const fromEnv = run(["serve"], { QUILL_LOG_RETENTION_HOURS: "soon" });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toContain('log.retention.hours="soon" (from QUILL_LOG_RETENTION_HOURS)');
    writeFileSync(join(dir, "server.properties"), "listeners=PLAINTEXT://:99999\n");
    const fromFile = run(["serve", "--config", "server.properties"]);
    expect(fromFile.code).toBe(2);
    expect(fromFile.stderr).toContain('listeners="PLAINTEXT://:99999" (from server.properties:1)');
  });

  test("--print-config resolves file, environment and flags inside the binary", () => {
    writeFileSync(join(dir, "server.properties"), "num.partitions=3\nlog.retention.minutes=10\n");
    const { code, stdout } = run(
      ["serve", "--config", "server.properties", "--broker-id", "4", "--print-config"],
      { QUILL_NUM_PARTITIONS: "8" },
    );
    expect(code).toBe(0);
    expect(stdout).toContain("num.partitions=8\n");
    expect(stdout).toContain("broker.id=4\n");
    expect(stdout).toContain("log.retention.ms=600000\n");
  });
});

describe("the compiled dist/quill as a client", () => {
  test("produces to its own broker, exports Parquet and stops cleanly (Workers are bundled)", async () => {
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = probe.port;
    probe.stop(true);
    const b = ["-b", `127.0.0.1:${port}`];
    const server = Bun.spawn(
      [binary, "serve", "--listen", `127.0.0.1:${port}`, "--data-dir", join(dir, "data")],
      { cwd: dir, stdout: "ignore", stderr: "ignore", env: { PATH: "/usr/bin:/bin", HOME: dir } },
    );
    try {
      const deadline = Date.now() + 20_000;
      while (run(["cluster", "info", ...b]).code !== 0) {
        if (Date.now() > deadline) throw new Error("the binary's broker did not start");
        await Bun.sleep(100);
      }
      expect(run(["topic", "create", "bin", "-p", "1", ...b]).code).toBe(0);
      writeFileSync(join(dir, "records.txt"), "a\nb\nc\n");
      expect(run(["topic", "produce", "bin", "--file", "records.txt", ...b]).code).toBe(0);
      const exported = run(["export", "bin", "--to", "out", "--format", "parquet", ...b]);
      expect(exported.code).toBe(0);
      const manifest = await Bun.file(join(dir, "out", "manifest.json")).json();
      expect(manifest.files).toMatchObject([{ file: "bin/bin-0-0-2.parquet", records: 3 }]);
      const bytes = new Uint8Array(
        await Bun.file(join(dir, "out", "bin", "bin-0-0-2.parquet")).arrayBuffer(),
      );
      expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe("PAR1");
    } finally {
      server.kill();
      await server.exited;
    }
    // A clean stop makes the logs durable with syncfs in a Worker, an entry point of the build:
    // a binary without it would exit without the clean-shutdown marker.
    expect(server.exitCode).toBe(0);
    expect(existsSync(join(dir, "data", ".kafka_cleanshutdown"))).toBe(true);
  }, 60_000);
});

/** Starts the binary's broker with a fast cleaner loop; its log lines go to `logFile`. */
async function startCleaningBroker(
  logFile: string,
): Promise<{ b: string[]; stop(): Promise<void> }> {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  const b = ["-b", `127.0.0.1:${port}`];
  const argv = ["serve", "--listen", `127.0.0.1:${port}`, "--data-dir", join(dir, "cleaning-data")];
  const server = Bun.spawn([binary, ...argv, "--set", "log.cleaner.backoff.ms=100"], {
    cwd: dir,
    stdout: "ignore",
    stderr: Bun.file(logFile),
    env: { PATH: "/usr/bin:/bin", HOME: dir },
  });
  const stop = async (): Promise<void> => {
    server.kill();
    await server.exited;
  };
  const deadline = Date.now() + 20_000;
  while (run(["cluster", "info", ...b]).code !== 0) {
    if (Date.now() > deadline) {
      await stop();
      throw new Error("the binary's broker did not start");
    }
    await Bun.sleep(100);
  }
  return { b, stop };
}

/** Every record of `topic` from the beginning, as `topic consume -f json` prints them. */
function consumeAll(topic: string, b: string[]): { offset: number; value: string }[] {
  const consumed = run(["topic", "consume", topic, "-o", "beginning", "-e", "-f", "json", ...b]);
  expect(consumed.code).toBe(0);
  return consumed.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
}

describe("the compiled dist/quill cleaning a compacted topic", () => {
  // The cleaner's CPU work runs only in its Worker, a second entry point of the build: a binary
  // built without it could not clean at all (the log would be marked uncleanable). lz4 batches
  // make the Worker load a native codec addon from inside the binary too.
  test("compacts an lz4 topic in the cleaner's Worker: each key's last record stays", async () => {
    const logFile = join(dir, "cleaning-broker.log");
    const { b, stop } = await startCleaningBroker(logFile);
    try {
      const config = ["-c", "cleanup.policy=compact", "-c", "segment.bytes=1100"];
      expect(run(["topic", "create", "kv", "-p", "1", ...config, ...b]).code).toBe(0);
      // Four produces of 50 records over keys k0-k9, offsets 0-199: one batch of 500-700 bytes
      // each, and two do not fit a segment.
      for (let round = 0; round < 4; round++) {
        const lines = Array.from({ length: 50 }, (_, i) => `k${i % 10}:v${round}-${i}`);
        writeFileSync(join(dir, "kv.txt"), `${lines.join("\n")}\n`);
        const produce = ["topic", "produce", "kv", "--file", "kv.txt", "-K", ":", "-z", "lz4"];
        expect(run([...produce, ...b]).code).toBe(0);
      }
      const below150 = (): number[] => {
        const records = consumeAll("kv", b);
        // The last produce's last record of every key is never removed.
        for (let i = 40; i < 50; i++) {
          const last = { offset: 150 + i, value: `v3-${i}` };
          expect(records).toContainEqual(expect.objectContaining(last));
        }
        return records.filter((r) => r.offset < 150).map((r) => r.offset);
      };
      // Below offset 150, once cleaned, only the third produce's last record of each key stays.
      const failed = async (): Promise<boolean> =>
        (await Bun.file(logFile).text()).includes("uncleanable");
      const cleanedBy = Date.now() + 30_000;
      let offsets = below150();
      while (offsets.length !== 10 && Date.now() < cleanedBy && !(await failed())) {
        await Bun.sleep(200);
        offsets = below150();
      }
      const brokerLog = await Bun.file(logFile).text();
      expect(brokerLog).not.toContain("uncleanable");
      expect(offsets).toEqual([140, 141, 142, 143, 144, 145, 146, 147, 148, 149]);
      expect(brokerLog).toContain("cleaned kv-0");
    } finally {
      await stop();
    }
  }, 90_000);
});
