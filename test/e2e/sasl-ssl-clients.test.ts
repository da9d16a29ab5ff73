// The matrix clients over SASL_SSL with SCRAM-SHA-512 (issue 16): the Java client 3.9,
// franz-go, confluent-kafka, @platformatic/kafka and kafka-python, each its compat program
// (test/compat/<client>) as a process with the security settings of scenario.ts, against one
// broker with a throwaway CA. Each refuses a wrong password the way that client reports an
// authentication failure, then creates a topic, produces 20,000 records, consumes them in a
// group of two and commits. The whole scenario over SASL_SSL is `bun scripts/compat.ts
// --security sasl_ssl` (README); this runs the smallest part that proves the connection, the
// five programs at once so the file costs about one client's time.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { ensureMavenPackage } from "../../scripts/maven-project.ts";
import { scramCredential } from "../../src/security/scram.ts";
import { LocalScramCredentialStore } from "../../src/security/scram-credential-store.ts";
import {
  type InProcessBroker,
  REPO_ROOT,
  removeDir,
  startInProcessBroker,
  tempDir,
} from "../support/broker-harness.ts";
import { compatPython } from "../support/python-venv.ts";
import { makeCertificates, type TestCertificates } from "../support/tls-certificates.ts";

const COMPAT = join(REPO_ROOT, "test", "compat");
const STEPS = ["wrong-password", "create-topic", "produce-gzip", "produce-zstd"];
const GROUP_STEPS = ["consume-group", "commit"];
const USER = { name: "matrix", password: "matrix-secret" };
const RUN_TIMEOUT_MS = 150_000;

let certs: TestCertificates;
let broker: InProcessBroker;
const runs = new Map<string, Promise<ClientRun>>();
const bundles: string[] = [];

interface ClientRun {
  readonly lines: Array<Record<string, unknown>>;
  readonly code: number;
  readonly stderr: string;
}

beforeAll(async () => {
  certs = makeCertificates();
  const dataDir = tempDir("quill-sasl-clients-");
  await new LocalScramCredentialStore(dataDir).set(
    USER.name,
    "SCRAM-SHA-512",
    scramCredential("SCRAM-SHA-512", USER.password, 4096),
  );
  broker = await startInProcessBroker({
    dataDir,
    settings: {
      listeners: "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
      "sasl.enabled.mechanisms": "SCRAM-SHA-512",
      "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
      // Kafka's 3 s group.initial.rebalance.delay.ms stays: the scenario needs both members in
      // the group's first generation (each must receive records, none twice).
      "ssl.keystore.location": certs.serverKeystore,
    },
  });
  const commands = await Promise.all([
    javaCommand(),
    franzGoCommand(),
    platformaticCommand(),
    pythonCommand("kafka-python"),
    pythonCommand("confluent-kafka-python"),
  ]);
  for (const [client, command, cwd] of commands) runs.set(client, runClient(client, command, cwd));
}, 600_000);

afterAll(async () => {
  await Promise.allSettled(runs.values());
  await broker?.stop();
  if (broker) removeDir(broker.dataDir);
  if (certs) removeDir(certs.dir);
  for (const bundle of bundles) rmSync(bundle, { force: true });
});

type Command = [client: string, command: string[], cwd: string];

async function build(command: string[], cwd: string): Promise<void> {
  const proc = Bun.spawn(command, { cwd, stdout: "pipe", stderr: "pipe" });
  const [code, out, err] = await Promise.all([
    proc.exited,
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
  ]);
  if (code !== 0) throw new Error(`${command.join(" ")} exited ${code}: ${out}${err}`);
}

async function javaCommand(): Promise<Command> {
  const dir = join(COMPAT, "java");
  // Shared with transactions-java.test.ts and the compat matrix: built under a lock.
  ensureMavenPackage(dir);
  const classpath = readFileSync(join(dir, "target", "classpath.txt"), "utf8").trim();
  const logLevel = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn";
  const java = ["java", logLevel, "-cp", `target/classes:${classpath}`, "quill.compat.Main"];
  return ["java", java, dir];
}

async function franzGoCommand(): Promise<Command> {
  const dir = join(COMPAT, "franz-go");
  const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "quill-compat");
  const binary = join(cache, "bin", "compat-franz-go-test");
  await build(["go", "build", "-o", binary, "."], dir);
  return ["franz-go", [binary], dir];
}

async function platformaticCommand(): Promise<Command> {
  const dir = join(COMPAT, "platformatic-kafka");
  // Inside the checkout, so Node finds the package in node_modules; .compat/ is ignored by git.
  const bundle = join(REPO_ROOT, ".compat", `sasl-ssl-platformatic-${process.pid}.mjs`);
  bundles.push(bundle);
  const options = ["--target=node", "--packages=external", "--outfile", bundle];
  await build([process.execPath, "build", "main.ts", ...options], dir);
  return ["platformatic-kafka", ["node", bundle], dir];
}

async function pythonCommand(client: string): Promise<Command> {
  const python = await compatPython(client);
  return [client, [python, "main.py"], join(COMPAT, client)];
}

async function runClient(client: string, command: string[], cwd: string): Promise<ClientRun> {
  const port = broker.broker.listeners.find((l) => l.listenerName === "SASL_SSL")!.port;
  const proc = Bun.spawn(command, {
    cwd,
    env: {
      ...process.env,
      BOOTSTRAP: `127.0.0.1:${port}`,
      TOPIC: `sasl-${client}`,
      GROUP: `sasl-${client}-group`,
      SECURITY_PROTOCOL: "SASL_SSL",
      SASL_MECHANISM: "SCRAM-SHA-512",
      SASL_USERNAME: USER.name,
      SASL_PASSWORD: USER.password,
      SSL_CA_LOCATION: certs.caPem,
      ONLY_STEPS: [...STEPS, ...GROUP_STEPS].join(","),
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), RUN_TIMEOUT_MS);
  const [code, stdout, stderr] = await Promise.all([
    proc.exited,
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
  ]);
  clearTimeout(timer);
  const lines = stdout
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { lines, code, stderr };
}

/** Every step of the run is ok; on failure the message names the step and the client's error. */
async function expectSteps(client: string, wrongPassword: RegExp): Promise<void> {
  const run = await runs.get(client)!;
  const outcome = (step: string) => {
    const line = run.lines.find((l) => l.step === step);
    if (!line) return `no line (exit ${run.code}: ${run.stderr.slice(-500)})`;
    return line.ok === true ? "ok" : String(line.error ?? line.skipped);
  };
  const steps = [...STEPS, ...GROUP_STEPS];
  // platformatic-kafka's zstd needs Node 22.15; its program marks the step n/a on older Node.
  const expected = steps.map((step) => [step, "ok"]);
  const actual = steps.map((step) => {
    const result = outcome(step);
    return [step, result.startsWith("n/a") && step === "produce-zstd" ? "ok" : result];
  });
  expect({ client, steps: actual }).toEqual({ client, steps: expected });
  const refused = run.lines.find((l) => l.step === "wrong-password");
  expect(String(refused?.detail)).toMatch(wrongPassword);
  expect(run.code).toBe(0);
}

test(
  "the Java client: a wrong password is a SaslAuthenticationException; produce, group, commit",
  async () => {
    await expectSteps("java", /^SaslAuthenticationException: .*invalid credentials/);
  },
  RUN_TIMEOUT_MS,
);

test(
  "franz-go: a wrong password is SASL_AUTHENTICATION_FAILED; produce, group, commit",
  async () => {
    await expectSteps("franz-go", /SASL_AUTHENTICATION_FAILED.*invalid credentials/);
  },
  RUN_TIMEOUT_MS,
);

test(
  "@platformatic/kafka: a wrong password is an AuthenticationError; produce, group, commit",
  async () => {
    await expectSteps("platformatic-kafka", /SASL authentication failed/);
  },
  RUN_TIMEOUT_MS,
);

test(
  "confluent-kafka: a wrong password is an _AUTHENTICATION error; produce, group, commit",
  async () => {
    await expectSteps("confluent-kafka-python", /SASL authentication error: .*invalid credentials/);
  },
  RUN_TIMEOUT_MS,
);

test(
  "kafka-python: a wrong password is a SaslAuthenticationFailedError; produce, group, commit",
  async () => {
    await expectSteps("kafka-python", /^SaslAuthenticationFailedError: .*invalid credentials/);
  },
  RUN_TIMEOUT_MS,
);
