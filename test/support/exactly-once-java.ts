/**
 * Runs the Java client's consume-transform-produce pipeline (test/compat/java, class
 * quill.compat.ExactlyOnce) as a process, with a fault injected once it has committed a few
 * transactions, and its read_committed verifier (issue 15's acceptance with the Java client).
 * Used by the embedded (test/e2e/transactions-java.test.ts) and the three-broker
 * (test/broker/transactions-cluster.test.ts) tests.
 */
import { expect } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ensureMavenPackage } from "../../scripts/maven-project.ts";
import { REPO_ROOT } from "./broker-harness.ts";

const JAVA_DIR = join(REPO_ROOT, "test", "compat", "java");
/** How long the pipeline may run after the fault before it is killed and the test fails. */
const PIPELINE_TIMEOUT_MS = 150_000;

/** Builds the Java programs when their sources changed (Maven Central, or ~/.m2). */
export function buildExactlyOnce(): void {
  ensureMavenPackage(JAVA_DIR);
}

function javaCommand(args: string[] = []): string[] {
  const classpath = readFileSync(join(JAVA_DIR, "target", "classpath.txt"), "utf8").trim();
  return [
    "java",
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
    "-cp",
    `${join(JAVA_DIR, "target", "classes")}:${classpath}`,
    "quill.compat.ExactlyOnce",
    ...args,
  ];
}

export interface ExactlyOnceTopics {
  /** Comma-separated, as the Java client takes it. */
  readonly bootstrap: string;
  readonly inTopic: string;
  readonly outTopic: string;
}

/** The environment the Java programs read their bootstrap servers and topics from. */
function javaEnv(topics: ExactlyOnceTopics): Record<string, string | undefined> {
  return {
    ...process.env,
    BOOTSTRAP: topics.bootstrap,
    IN_TOPIC: topics.inTopic,
    OUT_TOPIC: topics.outTopic,
  };
}

/**
 * Runs the pipeline (transactional id and group `eos-pipeline`) until it has read every input;
 * `fault` runs once at least 100 inputs are committed, mid-stream. Fails the test unless the
 * pipeline exits 0.
 */
export async function runPipelineWithFault(
  topics: ExactlyOnceTopics,
  fault: () => Promise<void>,
): Promise<void> {
  const env = javaEnv(topics);
  const pipeline = Bun.spawn(javaCommand(), { env, stdout: "pipe", stderr: "pipe" });
  const reader = pipeline.stdout.getReader();
  let output = "";
  while (!/committed (\d{3,})/.test(output)) {
    const { value, done } = await reader.read();
    if (done) break;
    output += new TextDecoder().decode(value);
  }
  expect(output).toMatch(/committed \d+/);
  await fault();
  const rest = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      output += new TextDecoder().decode(value);
    }
  })();
  const exitCode = await Promise.race([
    pipeline.exited,
    Bun.sleep(PIPELINE_TIMEOUT_MS).then(() => -1),
  ]);
  if (exitCode === -1) pipeline.kill(9);
  await rest;
  const stderr = await new Response(pipeline.stderr).text();
  expect({
    exitCode,
    tail: output.slice(-200),
    stderr: exitCode === 0 ? "" : stderr.slice(-3000),
  }).toMatchObject({ exitCode: 0 });
  expect(output).toContain("done");
}

/** A read_committed reader of the output must see each of `expected` inputs exactly once. */
export async function verifyExactlyOnce(
  topics: ExactlyOnceTopics,
  expected: number,
): Promise<void> {
  const env = { ...javaEnv(topics), EXPECTED: String(expected) };
  const verify = Bun.spawn(javaCommand(["verify"]), { env, stdout: "pipe", stderr: "pipe" });
  const verified = await new Response(verify.stdout).text();
  expect(await verify.exited).toBe(0);
  expect(verified).not.toContain("duplicate");
  expect(verified).toContain(`distinct ${expected}`);
  expect(verified).toContain(`total ${expected}`);
}
