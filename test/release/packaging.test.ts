// packaging/: the example server.properties is a configuration Quill accepts whole, and the
// systemd unit passes systemd's own checker.
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dir, "..", "..");
const dir = mkdtempSync(join(tmpdir(), "quill-packaging-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the example server.properties loads with no ignored key", () => {
  const result = Bun.spawnSync(
    [
      process.execPath,
      join(root, "src", "main.ts"),
      "serve",
      "--config",
      join(root, "packaging", "server.properties"),
      "--print-config",
    ],
    { cwd: dir, stdout: "pipe", stderr: "pipe" },
  );
  expect(result.exitCode).toBe(0);
  const stderr = result.stderr.toString();
  expect(stderr).not.toContain("ignores");
  const config = result.stdout.toString();
  for (const line of ["broker.id=1", "min.insync.replicas=2", "default.replication.factor=3"]) {
    expect(config).toContain(`${line}\n`);
  }
  expect(config).toContain("zookeeper.connect=zk1.example.com:2181,");
});

test.skipIf(!existsSync("/usr/bin/systemd-analyze"))(
  "systemd-analyze verify accepts the unit (with ExecStart pointing at an executable)",
  () => {
    const unit = readFileSync(join(root, "packaging", "quill.service"), "utf8");
    expect(unit).toContain("ExecStart=/usr/local/bin/quill serve --config ");
    expect(unit).toMatch(/^LimitNOFILE=\d+$/m);
    expect(unit).toMatch(/^TimeoutStopSec=60$/m);
    // /bin/true stands in for a binary that is not installed on this machine.
    const path = join(dir, "quill.service");
    writeFileSync(path, unit.replaceAll("/usr/local/bin/quill", "/bin/true"));
    const result = Bun.spawnSync(["systemd-analyze", "verify", path], {
      cwd: dir,
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(result.stderr.toString()).toBe("");
    expect(result.exitCode).toBe(0);
  },
);
