// packaging/: the example server.properties is a configuration Quill accepts whole, and the
// systemd unit passes systemd's own checker.
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config/load-config.ts";

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

/** systemd's checker on a copy of a unit whose ExecStart names /bin/true (no quill installed). */
function verifyUnit(file: string, installedAs: string): void {
  const unit = readFileSync(join(root, "packaging", file), "utf8");
  expect(unit).toContain("ExecStart=/usr/local/bin/quill serve --config ");
  expect(unit).toMatch(/^LimitNOFILE=\d+$/m);
  expect(unit).toMatch(/^TimeoutStopSec=60$/m);
  const path = join(dir, installedAs);
  writeFileSync(path, unit.replaceAll("/usr/local/bin/quill", "/bin/true"));
  const result = Bun.spawnSync(["systemd-analyze", "verify", path], {
    cwd: dir,
    stdout: "pipe",
    stderr: "pipe",
  });
  expect(result.stderr.toString()).toBe("");
  expect(result.exitCode).toBe(0);
}

test.skipIf(!existsSync("/usr/bin/systemd-analyze"))(
  "systemd-analyze verify accepts the unit (with ExecStart pointing at an executable)",
  () => verifyUnit("quill.service", "quill.service"),
);

test.skipIf(!existsSync("/usr/bin/systemd-analyze"))(
  "systemd-analyze verify accepts an instance of the several-brokers template",
  () => {
    const template = readFileSync(join(root, "packaging", "quill@.service"), "utf8");
    expect(template).toContain("--config /etc/quill/server-%i.properties");
    expect(template).toContain("ReadWritePaths=/var/lib/quill/%i\n");
    verifyUnit("quill@.service", "quill@3.service");
  },
);

test("the README's several-brokers recipe gives each instance its own id, ports and data dir", () => {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("### Several brokers on one host"));
  const loop = /^host=1.*?^done$/ms.exec(section)?.[0];
  expect(loop).toBeDefined();
  // The recipe as written, but reading the example config and writing here, without root.
  const script = loop!
    .replace(/^ *install -d .*$/m, "  :")
    .replace("/etc/quill/server.properties", join(root, "packaging", "server.properties"))
    .replace("/etc/quill/server-", `${dir}/server-`);
  expect(Bun.spawnSync(["bash", "-c", script], { cwd: dir }).exitCode).toBe(0);
  // Read in this process with the loader `serve --print-config` uses (the first test runs that
  // command): four more Bun processes, one after another, were this test's whole time under
  // load, and one was once killed by a signal ~5 s after it started.
  const seen = new Set<string>();
  for (const n of [1, 2, 3, 4]) {
    const { config } = loadConfig({ configFile: join(dir, `server-${n}.properties`) });
    expect(config["log.dirs"]).toEqual([`/var/lib/quill/${n}/data`]);
    expect(config["broker.rack"]).not.toBe("rack-a");
    for (const key of [
      "broker.id",
      "listeners",
      "advertised.listeners",
      "admin.listeners",
    ] as const) {
      const v = JSON.stringify(config[key]);
      expect(v).toBeDefined();
      expect(seen.has(`${key}=${v}`)).toBe(false);
      seen.add(`${key}=${v}`);
    }
  }
});
