// Exactly-once with the Java client 3.9 (issue 15): a consume-transform-produce pipeline
// (read_committed consumer, transactional producer, offsets sent to the transaction) while the
// broker is killed with SIGKILL and restarted; a read_committed consumer downstream must see
// every input exactly once.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { ensureMavenPackage } from "../../scripts/maven-project.ts";
import { REPO_ROOT } from "../support/broker-harness.ts";
import { ChildBroker } from "../support/child-broker.ts";

const JAVA_DIR = join(REPO_ROOT, "test", "compat", "java");
const INPUTS = 2000;
const IN = "eos-in";
const OUT = "eos-out";

let broker: ChildBroker;

function javaCommand(main: string, args: string[] = []): string[] {
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
  // The Java programs are built when their sources changed (Maven Central, or ~/.m2).
  ensureMavenPackage(JAVA_DIR);
  broker = await ChildBroker.start({ settings: { "transaction.state.log.num.partitions": "3" } });
  const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [
      { topic: IN, numPartitions: 3 },
      { topic: OUT, numPartitions: 3 },
    ],
  });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  for (let i = 0; i < INPUTS; i += 500) {
    await producer.send({
      topic: IN,
      messages: Array.from({ length: 500 }, (_, j) => ({
        key: String(i + j),
        value: String(i + j),
      })),
    });
  }
  await producer.disconnect();
}, 180_000);

afterAll(async () => {
  await broker?.terminate().catch(() => undefined);
  await broker?.remove();
});

test("each input reaches the output exactly once across a broker kill -9", async () => {
  const env = { ...process.env, BOOTSTRAP: broker.bootstrap, IN_TOPIC: IN, OUT_TOPIC: OUT };
  const pipeline = Bun.spawn(javaCommand("quill.compat.ExactlyOnce"), {
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = pipeline.stdout.getReader();
  let output = "";
  // Kill the broker once a few transactions committed, mid-stream.
  while (!/committed (\d{3,})/.test(output)) {
    const { value, done } = await reader.read();
    if (done) break;
    output += new TextDecoder().decode(value);
  }
  expect(output).toMatch(/committed \d+/);
  await broker.kill9();
  broker = await broker.restart();
  const rest = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      output += new TextDecoder().decode(value);
    }
  })();
  const exitCode = await Promise.race([pipeline.exited, Bun.sleep(150_000).then(() => -1)]);
  if (exitCode === -1) pipeline.kill(9);
  await rest;
  const stderr = await new Response(pipeline.stderr).text();
  expect({
    exitCode,
    tail: output.slice(-200),
    stderr: exitCode === 0 ? "" : stderr.slice(-3000),
  }).toMatchObject({ exitCode: 0 });
  expect(output).toContain("done");

  const verify = Bun.spawn(javaCommand("quill.compat.ExactlyOnce", ["verify"]), {
    env: { ...env, EXPECTED: String(INPUTS) },
    stdout: "pipe",
    stderr: "pipe",
  });
  const verified = await new Response(verify.stdout).text();
  expect(await verify.exited).toBe(0);
  expect(verified).not.toContain("duplicate");
  expect(verified).toContain(`distinct ${INPUTS}`);
  expect(verified).toContain(`total ${INPUTS}`);
}, 240_000);
