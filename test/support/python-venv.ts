/**
 * The Python virtual environment of one compat client (test/compat/<client>/requirements.txt),
 * shared with the compat matrix: same place ($XDG_CACHE_HOME/quill-compat/venv-<client>, default
 * ~/.cache/quill-compat) and same stamp (the requirements' SHA-256), so whichever runs first
 * installs it and the other reuses it. Tests need it where Debian's python3-confluent-kafka is
 * too old (include_authorized_operations came with confluent-kafka 2.3).
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { withBuildLock } from "../../scripts/build-lock.ts";
import { REPO_ROOT } from "./broker-harness.ts";

const CACHE_DIR = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "quill-compat");

/** The venv's python, created (python3 -m venv, pip install) when missing or out of date. */
export function compatPython(client: string): Promise<string> {
  return venvPython(client, join(REPO_ROOT, "test", "compat", client, "requirements.txt"));
}

/** The python of venv `name` in the same cache, with `requirements` installed. */
export async function venvPython(name: string, requirements: string): Promise<string> {
  const venv = join(CACHE_DIR, `venv-${name}`);
  const stamp = join(venv, "requirements.sha256");
  const python = join(venv, "bin", "python");
  const wanted = createHash("sha256").update(readFileSync(requirements)).digest("hex");
  const current = () => existsSync(stamp) && readFileSync(stamp, "utf8") === wanted;
  if (current()) return python;
  // Locked: two `bun test --parallel` workers must not build one venv at once.
  return await withBuildLock(venv, async () => {
    if (current()) return python;
    await run(["python3", "-m", "venv", "--clear", venv]);
    await run([python, "-m", "pip", "install", "-q", "-r", requirements]);
    writeFileSync(stamp, wanted);
    return python;
  });
}

async function run(command: string[]): Promise<void> {
  const proc = Bun.spawn(command, { stdout: "pipe", stderr: "pipe" });
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  if (code !== 0) throw new Error(`${command.join(" ")} exited ${code}: ${stderr.slice(-2000)}`);
}
