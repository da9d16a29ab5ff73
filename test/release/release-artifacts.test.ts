// The release artifacts of scripts/release.ts (issue 22): checksums, tarball contents, and the
// x64 and arm64 binaries serving kcat. The release build takes minutes, so these tests use what
// is in dist/release/ (.ci/run builds it before the suite) and are skipped when it is absent.
// The arm64 binary runs under qemu-user-static with Debian's arm64 cross libc.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import packageJson from "../../package.json" with { type: "json" };
import { kcatOk, stdoutText } from "../e2e/kcat-process.ts";

const root = join(import.meta.dir, "..", "..");
const releaseDir = join(root, "dist", "release");
const version = packageJson.version;
const built = existsSync(join(releaseDir, "SHA256SUMS"));
const QEMU = "/usr/bin/qemu-aarch64-static";
const ARM64_SYSROOT = "/usr/aarch64-linux-gnu";
const hasQemu = existsSync(QEMU) && existsSync(join(ARM64_SYSROOT, "lib", "libgcc_s.so.1"));
// Emulated, the runtime takes seconds to start and the broker longer to bind.
const START_TIMEOUT_MS = 120_000;
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "quill-release-test-"));
  dirs.push(dir);
  return dir;
}

function run(argv: string[], cwd: string, env: Record<string, string> = {}) {
  const result = Bun.spawnSync(argv, { cwd, env, stdout: "pipe", stderr: "pipe" });
  return {
    code: result.exitCode,
    stdout: result.stdout.toString(),
    stderr: result.stderr.toString(),
  };
}

/** The file list README.md promises for a tarball, with the version and platform filled in. */
function readmeTarballListing(platform: string): string[] {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const match = /holds:\n\n```\n(quill-<version>-<platform>\/\n[\s\S]*?)```/.exec(readme);
  if (match === null) throw new Error("README.md has no tarball listing");
  const lines = match[1]!.trim().split("\n");
  const top = `quill-${version}-${platform}/`;
  return lines.slice(1).map((line) => `${top}${line.trim()}`);
}

/** A broker started from a binary with an empty PATH; resolves with its bootstrap address. */
async function serve(
  argv: string[],
  cwd: string,
): Promise<{ proc: Subprocess; bootstrap: string }> {
  const emptyPath = tempDir();
  const proc = Bun.spawn(
    [...argv, "serve", "--listen", "127.0.0.1:0", "--data-dir", join(cwd, "data")],
    { cwd, env: { PATH: emptyPath, HOME: cwd }, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
  );
  const decoder = new TextDecoder();
  let text = "";
  const deadlineMs = Date.now() + START_TIMEOUT_MS;
  const reader = proc.stderr.getReader();
  while (Date.now() < deadlineMs) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value);
    const match = /listening on ([^\s:]+):(\d+)/.exec(text);
    if (match !== null) {
      // Keep draining stderr so the broker never blocks on a full pipe.
      void (async () => {
        while (!(await reader.read()).done) {}
      })();
      expect(text).toContain(`quill: starting broker: quill ${version} (commit `);
      return { proc, bootstrap: `${match[1]}:${match[2]}` };
    }
  }
  proc.kill("SIGKILL");
  throw new Error(`${argv.join(" ")} did not listen; stderr:\n${text}`);
}

/** Produces with lz4 and snappy (the embedded addons) and consumes it back. */
async function produceAndConsume(argv: string[], cwd: string): Promise<void> {
  const { proc, bootstrap } = await serve(argv, cwd);
  try {
    const opts = { timeoutMs: START_TIMEOUT_MS };
    await kcatOk(bootstrap, ["-P", "-t", "release", "-z", "lz4"], { ...opts, stdin: "a\nb\n" });
    await kcatOk(bootstrap, ["-P", "-t", "release", "-z", "snappy"], { ...opts, stdin: "c\n" });
    const consumed = await kcatOk(
      bootstrap,
      ["-C", "-t", "release", "-o", "beginning", "-e", "-f", "%s\n"],
      opts,
    );
    expect(stdoutText(consumed)).toBe("a\nb\nc\n");
  } finally {
    proc.kill("SIGTERM");
  }
  expect(await proc.exited).toBe(0);
}

function extract(platform: string): string {
  const dir = tempDir();
  const tarball = join(releaseDir, `quill-${version}-${platform}.tar.gz`);
  expect(run(["tar", "xzf", tarball, "-C", dir], dir).code).toBe(0);
  return join(dir, `quill-${version}-${platform}`);
}

describe.skipIf(!built)("dist/release (scripts/release)", () => {
  test("SHA256SUMS lists every binary and tarball, and sha256sum -c agrees", () => {
    const sums = readFileSync(join(releaseDir, "SHA256SUMS"), "utf8");
    const listed = sums
      .trim()
      .split("\n")
      .map((line) => line.split("  ")[1]);
    const artifacts = readdirSync(releaseDir).filter((f) => f.startsWith(`quill-${version}-`));
    expect(listed.sort()).toEqual(artifacts.sort());
    for (const name of ["linux-x64", "linux-arm64"]) {
      expect(artifacts).toContain(`quill-${version}-${name}`);
      expect(artifacts).toContain(`quill-${version}-${name}.tar.gz`);
    }
    const check = run(["sha256sum", "--check", "--strict", "SHA256SUMS"], releaseDir);
    expect(check.code).toBe(0);
    expect(check.stdout.trim().split("\n")).toHaveLength(artifacts.length);
  }, 120_000);

  test("each tarball holds what README.md says, and NOTICE names what is embedded", () => {
    const tarballs = readdirSync(releaseDir).filter((f) => f.endsWith(".tar.gz"));
    for (const tarball of tarballs) {
      const platform = tarball.slice(`quill-${version}-`.length, -".tar.gz".length);
      const listing = run(["tar", "tzf", tarball], releaseDir).stdout.trim().split("\n");
      const files = listing.filter((path) => !path.endsWith("/"));
      expect(files.sort()).toEqual(readmeTarballListing(platform).sort());
      const notice = readFileSync(join(extract(platform), "NOTICE"), "utf8");
      for (const embedded of ["== Bun ", "== snappy ", "== lz4-napi ", "== @node-rs/crc32 "]) {
        expect(notice).toContain(embedded);
      }
      expect(notice).toContain("== zod ");
      expect(notice).toContain("== node-zookeeper-client ");
    }
  }, 120_000);

  test("no release binary carries a source map (which would list every source file)", async () => {
    const binaries = readdirSync(releaseDir).filter(
      (f) => f.startsWith(`quill-${version}-`) && !f.endsWith(".tar.gz"),
    );
    expect(binaries.length).toBeGreaterThanOrEqual(2);
    for (const name of binaries) {
      const bytes = Buffer.from(await Bun.file(join(releaseDir, name)).arrayBuffer());
      // The Workers' bundles are embedded under their names; a source map would add src/'s.
      expect(bytes.indexOf("storage/cleaner-worker.js")).toBeGreaterThan(0);
      expect(bytes.indexOf("storage/log-segment.ts")).toBe(-1);
    }
  }, 120_000);

  test(
    "the x64 binary from the tarball runs from an empty directory with an empty PATH",
    async () => {
      const quill = join(extract("linux-x64"), "quill");
      const cwd = tempDir();
      const emptyPath = tempDir();
      const shown = run([quill, "version"], cwd, { PATH: emptyPath });
      expect(shown.code).toBe(0);
      expect(shown.stdout).toMatch(new RegExp(`^quill ${version.replaceAll(".", "\\.")} \\(`));
      expect(shown.stdout).not.toContain("commit dev");
      await produceAndConsume([quill], cwd);
    },
    START_TIMEOUT_MS * 2,
  );

  test.skipIf(!hasQemu)(
    "the arm64 binary runs under qemu: version, then serve answers kcat",
    async () => {
      const quill = join(extract("linux-arm64"), "quill");
      const emulated = [QEMU, "-L", ARM64_SYSROOT, quill];
      const cwd = tempDir();
      const shown = run([...emulated, "version"], cwd);
      expect(shown.stderr).toBe("");
      expect(shown.stdout).toStartWith(`quill ${version} (commit `);
      // ELF e_machine 183 is AArch64: the emulator, not the host, ran this binary.
      const header = await Bun.file(quill).slice(0, 20).bytes();
      expect(new DataView(header.buffer).getUint16(18, true)).toBe(183);
      await produceAndConsume(emulated, cwd);
    },
    START_TIMEOUT_MS * 3,
  );
});
