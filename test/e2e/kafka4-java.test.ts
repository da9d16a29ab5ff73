// The Kafka 4.4 Java client (test/compat/java4): a KafkaConsumer with group.protocol=consumer
// (KIP-848) joins, is rebalanced when a second member joins and leaves (revoke before assign),
// commits with its member epoch, and a later member of the group reads only the new records.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ensureMavenPackage } from "../../scripts/maven-project.ts";
import {
  type InProcessBroker,
  REPO_ROOT,
  startInProcessBroker,
} from "../support/broker-harness.ts";

const JAVA_DIR = join(REPO_ROOT, "test", "compat", "java4");

let broker: InProcessBroker;

function javaCommand(main: string, args: string[]): string[] {
  const classpath = readFileSync(join(JAVA_DIR, "target", "classpath.txt"), "utf8").trim();
  return [
    "java",
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
    "-cp",
    `${join(JAVA_DIR, "target", "classes")}:${classpath}`,
    main,
    ...args,
  ];
}

beforeAll(async () => {
  ensureMavenPackage(JAVA_DIR);
  // A short heartbeat interval: members hear of a rebalance within half a second.
  broker = await startInProcessBroker({
    settings: { "group.consumer.heartbeat.interval.ms": "300" },
  });
}, 300_000);

afterAll(async () => {
  await broker?.stop();
});

for (const assignor of ["uniform", "range"]) {
  test(`KIP-848 consumers with the ${assignor} assignor: join, rebalance, commit, resume`, async () => {
    const args = [broker.bootstrap, `kip848-${assignor}`, `g-${assignor}`, assignor];
    const run = Bun.spawn(javaCommand("quill.compat4.ConsumerProtocol", args), {
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err, code] = await Promise.all([
      new Response(run.stdout).text(),
      new Response(run.stderr).text(),
      run.exited,
    ]);
    if (code !== 0) console.log(out, err);
    expect(code).toBe(0);
    const lines = out.trim().split("\n");
    expect(lines.at(-1)).toBe("OK");
    // b got its half only after a gave it up: a's revocation comes first.
    const revokedA = lines.findIndex((l) => l.startsWith("a revoked [") && l !== "a revoked []");
    const assignedB = lines.findIndex((l) => l.startsWith("b assigned [") && l !== "b assigned []");
    expect(revokedA).toBeGreaterThanOrEqual(0);
    expect(assignedB).toBeGreaterThan(revokedA);
    expect(out).toContain("described Stable");
  }, 90_000);
}
