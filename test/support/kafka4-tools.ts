/**
 * Kafka 4.4's command-line tools (test/compat/tools4: org.apache.kafka:kafka-tools 4.4.0 and its
 * classpath from Maven Central), their main classes run in the suite's tool JVM (tool-jvm.ts).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { withBuildLockSync } from "../../scripts/build-lock.ts";
import { REPO_ROOT } from "./broker-harness.ts";
import { runToolInJvm } from "./tool-jvm.ts";

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

/** Runs a tool to its end (in the suite's tool JVM): its exit code and its stdout and stderr. */
export async function runTool4(
  main: string,
  args: readonly string[],
): Promise<{ code: number; out: string }> {
  const classpath = readFileSync(join(TOOLS4_DIR, "target", "classpath.txt"), "utf8").trim();
  const logLevel = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn";
  const run = await runToolInJvm(classpath, main, args, [logLevel]);
  return { code: run.code, out: run.stdout + run.stderr };
}
