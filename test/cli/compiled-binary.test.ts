import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import packageJson from "../../package.json" with { type: "json" };

const root = join(import.meta.dir, "..", "..");
const built = join(root, "dist", "quill");
const dir = mkdtempSync(join(tmpdir(), "quill-binary-"));
const binary = join(dir, "quill");

function newestMtimeMs(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newestMtimeMs(join(path, name))));
}

/** Reuses dist/quill when it is newer than every input (CI builds first); otherwise builds it. */
function ensureFreshBuild(): void {
  const inputsMs = Math.max(
    newestMtimeMs(join(root, "src")),
    newestMtimeMs(join(root, "package.json")),
    newestMtimeMs(join(root, "scripts", "build.ts")),
  );
  let builtMs = 0;
  try {
    builtMs = statSync(built).mtimeMs;
  } catch {
    // Not built yet.
  }
  if (builtMs > inputsMs) return;
  const result = Bun.spawnSync([process.execPath, "run", "build"], {
    cwd: root,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (result.exitCode !== 0)
    throw new Error(`bun run build failed:\n${result.stdout}\n${result.stderr}`);
}

beforeAll(() => {
  ensureFreshBuild();
  // An empty directory with no node_modules anywhere above it: the binary must carry everything.
  copyFileSync(built, binary);
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
  test("produces to its own broker and exports Parquet (the writer is bundled)", async () => {
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
  }, 60_000);
});
