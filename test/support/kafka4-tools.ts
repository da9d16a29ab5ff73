/**
 * Kafka 4.4's command-line tools (test/compat/tools4: org.apache.kafka:kafka-tools 4.4.0 and its
 * classpath from Maven Central), run as the scripts run them: `java -cp … <main class>`.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { withBuildLockSync } from "../../scripts/build-lock.ts";
import { REPO_ROOT } from "./broker-harness.ts";

export const TOOLS4_DIR = join(REPO_ROOT, "test", "compat", "tools4");

/** Resolves the tools' classpath once (under the build lock parallel test files share). */
export function ensureTools4(): void {
  withBuildLockSync(TOOLS4_DIR, () => {
    if (existsSync(join(TOOLS4_DIR, "target", "classpath.txt"))) return;
    const mvn = Bun.spawnSync(
      ["mvn", "-q", "dependency:build-classpath", "-Dmdep.outputFile=target/classpath.txt"],
      { cwd: TOOLS4_DIR, stderr: "pipe", stdout: "pipe" },
    );
    if (mvn.exitCode !== 0) throw new Error(`mvn failed: ${mvn.stdout}${mvn.stderr}`);
  });
}

/** Runs a tool to its end: its exit code and its stdout and stderr together. */
export async function runTool4(
  main: string,
  args: readonly string[],
): Promise<{ code: number; out: string }> {
  const classpath = readFileSync(join(TOOLS4_DIR, "target", "classpath.txt"), "utf8").trim();
  const proc = Bun.spawn(
    ["java", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", classpath, main, ...args],
    { stdout: "pipe", stderr: "pipe" },
  );
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, out: out + err };
}
