/**
 * Client compatibility matrix (issue 9): starts its own Quill broker (fresh data dir, free port),
 * runs the same scenario with each client library in its own runtime (test/compat/<client>/),
 * prints a client × step table, writes it to .compat/results.md and .compat/results.json and
 * exits non-zero if any cell failed or any client could not run.
 *
 *   bun scripts/compat.ts [--binary dist/quill] [--zookeeper] [--brokers N]
 *                         [--security sasl_ssl] [CLIENT...]
 *
 * --zookeeper starts a ZooKeeper (Debian's package, as the ZooKeeper-mode tests do) and runs the
 * broker in ZooKeeper mode against it; the results go to .compat/results-zookeeper.*.
 * --brokers N runs a cluster of N brokers in ZooKeeper mode, topics replicated to all of them
 * (default.replication.factor=N); the results go to .compat/results-cluster.*.
 *
 * --security sasl_ssl gives every broker a SASL_SSL listener (SCRAM-SHA-512, a throwaway CA and
 * server certificate made with openssl) beside a PLAINTEXT one (the harness's own requests), makes
 * one SCRAM user through AlterUserScramCredentials, and runs the clients that take security
 * settings (SECURITY_CLIENTS: all but kcat and kafkajs, tested over SASL_SSL by npm test) over
 * SASL_SSL; each runs a wrong-password step first, then the whole scenario. With --brokers the
 * brokers replicate over SASL_SSL too (inter.broker.listener.name=SASL_SSL, SCRAM-SHA-512 as user
 * `broker`, whose credential is written to ZooKeeper before they start, as kafka-configs.sh
 * --zookeeper would), so replica fetches, controller requests and transaction markers cross TLS.
 * The results go to .compat/results[-zookeeper|-cluster]-sasl-ssl.*.
 *
 * After the client libraries come real Kafka applications (test/compat/apps, jars from Maven
 * Central): a Kafka Streams word count restored from its changelog, a distributed Kafka Connect
 * worker running the FileStream connectors across a restart, and kafka-delete-records.sh. Each
 * has its own steps, reported in a second table.
 *
 * A client may have a broker killed with kill -9 and restarted (watchBrokerControl; the Streams
 * exactly-once application kills its transaction's coordinator).
 *
 * Each client program prints one JSON line per step (see test/compat/support/scenario.ts). A
 * client whose toolchain is missing is reported as `skipped (no java)` and fails the run, since a
 * matrix that did not run is no proof. Dependencies are cached outside the repository: Maven's
 * ~/.m2, the Go module and build caches, and Python virtual environments (with pip's cache)
 * under $XDG_CACHE_HOME/quill-compat (default ~/.cache/quill-compat).
 */
import { createHash, pbkdf2Sync } from "node:crypto";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { join, relative, resolve } from "node:path";
import type { Subprocess } from "bun";
import { ErrorCode } from "../src/protocol/errors.ts";
import { ApiKey } from "../src/protocol/generated/index.ts";
import { SCRAM_MECHANISM_IDS, scramCredential } from "../src/security/scram.ts";
import { ZooKeeperScramCredentialStore } from "../src/security/scram-credential-store.ts";
import { ZooKeeperClient } from "../src/zookeeper/zookeeper-client.ts";
import { APPLICATION_STEPS, type Application } from "../test/compat/support/application-steps.ts";
import { SECURITY_CLIENTS, SECURITY_STEPS, STEPS } from "../test/compat/support/scenario-steps.ts";
import { INTERNAL_TOPIC_REPLICATION_KEYS } from "../test/support/broker-harness.ts";
import { requestOnce } from "../test/support/kafka-client.ts";
import { startZooKeeper } from "../test/support/zookeeper-server.ts";
import { makeSaslSsl, type SaslSsl, saslSslBrokerSettings } from "./bench-vs-kafka/sasl-ssl.ts";
import { withBuildLock } from "./build-lock.ts";
import { MAVEN_PACKAGE, markMavenBuilt, mavenUpToDate } from "./maven-project.ts";

const ROOT = join(import.meta.dir, "..");
const COMPAT_DIR = join(ROOT, "test", "compat");
const OUT_DIR = join(ROOT, ".compat");
/**
 * This run's broker data and logs. Each run has its own, so two runs in one checkout (two
 * terminals, or CI beside a developer) never share a data dir; only the newest RUNS_KEPT stay.
 */
const RUNS_DIR = join(OUT_DIR, "runs");
const RUN_DIR = join(RUNS_DIR, `${new Date().toISOString().replaceAll(":", "-")}-${process.pid}`);
const RUNS_KEPT = 10;
const CACHE_DIR = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "quill-compat");
/** A first run downloads Maven, Go and pip dependencies; later runs build from the caches. */
const PREPARE_TIMEOUT_MS = 600_000;
/** One client's whole scenario; the programs bound each of their own waits well below this. */
const RUN_TIMEOUT_MS = 240_000;
const BROKER_START_TIMEOUT_MS = 30_000;
/** A cluster on one 2-core machine: more brokers would measure the machine, not the clients. */
const BROKERS_MAX = 5;
/** Broker log lines kept per client in the results, for reproductions. */
const BROKER_LOG_LINES_MAX = 40;

interface ClientSpec {
  readonly name: string;
  /** The folder under test/compat/ it runs in; defaults to its name. */
  readonly dir?: string;
  /** Its steps, when it does not run the client scenario (the applications). */
  readonly steps?: readonly string[];
  /** Executables that must be on PATH; the first one missing names the skip. */
  readonly needs: readonly string[];
  /** Build or install steps, run in the client's folder. */
  readonly prepare: ReadonlyArray<() => readonly string[] | undefined>;
  readonly run: () => readonly string[];
}

type Cell =
  | { readonly status: "ok"; readonly detail?: string; readonly ms?: number }
  | { readonly status: "fail"; readonly error: string; readonly ms?: number }
  | { readonly status: "skipped"; readonly reason: string }
  | { readonly status: "n/a"; readonly reason: string };

interface ClientResult {
  readonly client: string;
  version: string;
  readonly cells: Record<string, Cell>;
  /** The steps of the row: the scenario's, or an application's own. */
  readonly steps: readonly string[];
  /** An application (its own steps, the second table) rather than a client library. */
  readonly application: boolean;
  /** Set when the client did not run at all (toolchain missing, build failed). */
  problem?: string;
  brokerLog: string[];
  durationMs: number;
}

const bun = process.execPath;
const venvPython = (client: string) => join(CACHE_DIR, `venv-${client}`, "bin", "python");

const CLIENTS: readonly ClientSpec[] = [
  {
    name: "java",
    needs: ["java", "mvn"],
    prepare: mavenPrepare("java"),
    run: () => {
      const classpath = readFileSync(join(COMPAT_DIR, "java", "target", "classpath.txt"), "utf8");
      const logLevel = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn";
      return ["java", logLevel, "-cp", `target/classes:${classpath.trim()}`, "quill.compat.Main"];
    },
  },
  {
    // The same scenario (test/compat/java's sources, compiled in test/compat/java4 against
    // kafka-clients 4.4): the newest Produce and Fetch versions, and KafkaConsumer with
    // group.protocol=consumer (KIP-848).
    name: "java4",
    needs: ["java", "mvn"],
    prepare: mavenPrepare("java4"),
    run: () => {
      const classpath = readFileSync(join(COMPAT_DIR, "java4", "target", "classpath.txt"), "utf8");
      const logLevel = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn";
      const protocol = "-Dquill.groupProtocol=consumer";
      const classes = `target/classes:${classpath.trim()}`;
      return ["java", logLevel, protocol, "-cp", classes, "quill.compat.Main"];
    },
  },
  {
    name: "franz-go",
    needs: ["go"],
    prepare: [() => ["go", "build", "-o", join(CACHE_DIR, "bin", "compat-franz-go"), "."]],
    run: () => [join(CACHE_DIR, "bin", "compat-franz-go")],
  },
  pythonClient("confluent-kafka-python"),
  {
    name: "kcat",
    needs: ["kcat"],
    prepare: [],
    run: () => [bun, "main.ts"],
  },
  nodeClient("kafkajs"),
  nodeClient("platformatic-kafka"),
  pythonClient("kafka-python"),
  ...(Object.keys(APPLICATION_STEPS) as Application[]).map(kafkaApplication),
];

/** Builds the Maven project test/compat/<dir> when its sources changed, then stamps it built. */
function mavenPrepare(dir: string): ClientSpec["prepare"] {
  const path = join(COMPAT_DIR, dir);
  return [
    () => (mavenUpToDate(path) ? undefined : [...MAVEN_PACKAGE]),
    () => {
      markMavenBuilt(path);
      return undefined;
    },
  ];
}

/**
 * A Kafka application from the Maven project test/compat/apps (one JVM running the named
 * check; Connect's worker and the delete-records tool are JVMs it starts in turn).
 */
function kafkaApplication(name: Application): ClientSpec {
  return {
    name,
    dir: "apps",
    steps: APPLICATION_STEPS[name],
    needs: ["java", "mvn"],
    prepare: mavenPrepare("apps"),
    run: () => {
      const classpath = readFileSync(join(COMPAT_DIR, "apps", "target", "classpath.txt"), "utf8");
      return [
        "java",
        "-Xmx512m",
        "-cp",
        `target/classes:${classpath.trim()}`,
        "quill.compat.apps.Main",
        name,
      ];
    },
  };
}

/**
 * A JavaScript client, run by Node as its users run it: main.ts is bundled for Node with the
 * packages left as imports, so Node loads them from node_modules.
 */
function nodeClient(name: string): ClientSpec {
  const bundle = join(RUN_DIR, `${name}.mjs`);
  const build = ["build", "main.ts", "--target=node", "--packages=external", "--outfile", bundle];
  return { name, needs: ["node"], prepare: [() => [bun, ...build]], run: () => ["node", bundle] };
}

/** A Python client in its own virtual environment, rebuilt when requirements.txt changes. */
function pythonClient(name: string): ClientSpec {
  const venv = join(CACHE_DIR, `venv-${name}`);
  const requirements = join(COMPAT_DIR, name, "requirements.txt");
  const stamp = join(venv, "requirements.sha256");
  const wanted = () => createHash("sha256").update(readFileSync(requirements)).digest("hex");
  const current = () => (existsSync(stamp) ? readFileSync(stamp, "utf8") : "");
  return {
    name,
    needs: ["python3"],
    prepare: [
      () => (current() === wanted() ? undefined : ["python3", "-m", "venv", "--clear", venv]),
      () =>
        current() === wanted()
          ? undefined
          : [venvPython(name), "-m", "pip", "install", "-q", "-r", requirements],
      () => {
        writeFileSync(stamp, wanted());
        return undefined;
      },
    ],
    run: () => [venvPython(name), "main.py"],
  };
}

// ---- The broker ----------------------------------------------------------------------------

/** The broker, or the cluster's brokers when there are several; one log holds all their lines. */
interface Broker {
  /** By broker id; a broker restarted on request (watchBrokerControl) replaces its entry. */
  readonly processes: Subprocess[];
  /** By broker id: a restarted broker listens on its first address again. */
  readonly addresses: readonly string[];
  readonly settings: BrokerSettings;
  /** How many brokers: the applications replicate their topics to all of them. */
  readonly count: number;
  /** The first broker's address: clients find the others through Metadata. */
  readonly bootstrap: string;
  readonly logPath: string;
}

/** The SCRAM user the clients log in as over SASL_SSL. */
const SCRAM_USER = { name: "compat", password: "compat-secret", iterations: 4096 };
/** The SCRAM user a cluster's brokers log in to each other as over SASL_SSL. */
const BROKER_USER = { name: "broker", password: "broker-secret", iterations: 4096 };

interface BrokerSettings {
  readonly binary: string | undefined;
  readonly zooKeeper: string | undefined;
  /** More than one needs ZooKeeper; each gets its own id and data dir. */
  readonly brokerCount: number;
  /** --security sasl_ssl: the certificates of the SASL_SSL listener every broker gets. */
  readonly saslSsl: SaslSsl | undefined;
}

async function startBrokers(settings: BrokerSettings): Promise<Broker> {
  const logPath = join(RUN_DIR, "broker.log");
  writeFileSync(logPath, "");
  const processes: Subprocess[] = [];
  const addresses: string[] = [];
  let plaintextPort = 0;
  if (interBrokerSaslSsl(settings)) await addBrokerUser(settings.zooKeeper!);
  for (let id = 0; id < settings.brokerCount; id++) {
    const prefix = settings.brokerCount > 1 ? `[broker ${id}] ` : "";
    const started = await startBroker(settings, id, (line) =>
      appendFileSync(logPath, prefix + line + "\n"),
    );
    processes.push(started.process);
    addresses.push(started.address);
    if (id === 0) plaintextPort = started.plaintextPort;
  }
  // Every broker known to the first before clients start: the internal topics (groups,
  // transactions) are created only once as many brokers live as their replication factor.
  if (settings.brokerCount > 1) await waitForBrokers(plaintextPort, settings.brokerCount);
  if (settings.saslSsl) await addScramUser(plaintextPort);
  return {
    processes,
    addresses,
    settings,
    count: settings.brokerCount,
    bootstrap: addresses[0] ?? "",
    logPath,
  };
}

async function waitForBrokers(port: number, count: number): Promise<void> {
  const deadlineMs = Date.now() + BROKER_START_TIMEOUT_MS;
  for (;;) {
    const metadata = await requestOnce(port, ApiKey.Metadata, 12, { topics: [] });
    if (metadata.brokers.length >= count) return;
    if (Date.now() > deadlineMs) throw new Error(`${count} brokers not live in Metadata`);
    await Bun.sleep(100);
  }
}

function brokerLog(broker: Broker, id: number): (line: string) => void {
  const prefix = broker.count > 1 ? `[broker ${id}] ` : "";
  return (line) => appendFileSync(broker.logPath, prefix + line + "\n");
}

/**
 * Lets a client kill brokers with kill -9 (the Streams exactly-once application does, in the
 * middle of a transaction): a file `kill-<id>` in `dir` makes the harness SIGKILL broker <id>
 * and write `killed-<id>` once it is gone, then start it again on the same data dir and port
 * (in a cluster that waits out the dead broker's ZooKeeper session) and write `restarted-<id>`.
 * Returns the function that stops watching, once any restart under way has finished, so the
 * next client finds every broker up.
 */
function watchBrokerControl(dir: string, broker: Broker): () => Promise<void> {
  mkdirSync(dir, { recursive: true });
  let busy: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    for (const name of readdirSync(dir)) {
      const id = Number(/^kill-(\d+)$/.exec(name)?.[1] ?? Number.NaN);
      if (!Number.isInteger(id) || !broker.processes[id]) continue;
      rmSync(join(dir, name));
      busy = busy.then(() => killAndRestart(broker, id, dir));
    }
  }, 100);
  return async () => {
    clearInterval(timer);
    await busy;
  };
}

async function killAndRestart(broker: Broker, id: number, dir: string): Promise<void> {
  const log = brokerLog(broker, id);
  const old = broker.processes[id];
  log("::: compat: kill -9 of this broker, asked for by the client");
  old?.kill("SIGKILL");
  await old?.exited;
  writeFileSync(join(dir, `killed-${id}`), "");
  const port = Number(broker.addresses[id]?.split(":")[1]);
  try {
    const started = await startBroker(broker.settings, id, log, port);
    broker.processes[id] = started.process;
    writeFileSync(join(dir, `restarted-${id}`), started.address);
  } catch (error) {
    log(`::: compat: the restart failed: ${error}`);
    writeFileSync(join(dir, `restart-failed-${id}`), String(error));
  }
}

/**
 * The SCRAM-SHA-512 user, made as Kafka's tools make one (AlterUserScramCredentials, here over
 * the PLAINTEXT listener): stored in ZooKeeper or the embedded store, seen by every broker.
 */
async function addScramUser(plaintextPort: number): Promise<void> {
  const salt = crypto.getRandomValues(new Uint8Array(32));
  const { name, password, iterations } = SCRAM_USER;
  const saltedPassword = new Uint8Array(pbkdf2Sync(password, salt, iterations, 64, "sha512"));
  const mechanism = SCRAM_MECHANISM_IDS["SCRAM-SHA-512"];
  const answer = await requestOnce(plaintextPort, ApiKey.AlterUserScramCredentials, 0, {
    deletions: [],
    upsertions: [{ name, mechanism, iterations, salt, saltedPassword }],
  });
  const code = answer.results[0]?.errorCode;
  if (code !== ErrorCode.NONE) throw new Error(`AlterUserScramCredentials failed: ${code}`);
}

/** A cluster over SASL_SSL replicates over it too. */
const interBrokerSaslSsl = (settings: BrokerSettings) =>
  settings.saslSsl !== undefined && settings.brokerCount > 1 && settings.zooKeeper !== undefined;

/** The brokers' own SCRAM user, in ZooKeeper before any broker starts (Kafka's way). */
async function addBrokerUser(zooKeeper: string): Promise<void> {
  const zk = await ZooKeeperClient.connect(zooKeeper, {
    sessionTimeoutMs: 10_000,
    connectTimeoutMs: 10_000,
  });
  try {
    const { name, password, iterations } = BROKER_USER;
    const credential = scramCredential("SCRAM-SHA-512", password, iterations);
    await new ZooKeeperScramCredentialStore(zk).set(name, "SCRAM-SHA-512", credential);
  } finally {
    await zk.close();
  }
}

/** The listener flags: one PLAINTEXT listener, or SASL_SSL first and PLAINTEXT beside it. */
function listenerFlags(settings: BrokerSettings, port: number): string[] {
  if (!settings.saslSsl) return ["--listen", `127.0.0.1:${port}`];
  const listeners = `SASL_SSL://127.0.0.1:${port},PLAINTEXT://127.0.0.1:0`;
  const keys = Object.entries({
    ...saslSslBrokerSettings(settings.saslSsl),
    ...(interBrokerSaslSsl(settings) ? interBrokerSettings(settings.saslSsl) : {}),
  });
  return ["--set", `listeners=${listeners}`, ...keys.flatMap(([k, v]) => ["--set", `${k}=${v}`])];
}

/** Replication and controller traffic over the SASL_SSL listener, checking the peer's CA. */
function interBrokerSettings(saslSsl: SaslSsl): Record<string, string> {
  const { name, password } = BROKER_USER;
  return {
    "inter.broker.listener.name": "SASL_SSL",
    "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
    "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
      "org.apache.kafka.common.security.scram.ScramLoginModule required " +
      `username="${name}" password="${password}";`,
    "listener.name.sasl_ssl.ssl.truststore.type": "PEM",
    "listener.name.sasl_ssl.ssl.truststore.location": saslSsl.caPem,
  };
}

async function startBroker(
  settings: BrokerSettings,
  id: number,
  log: (line: string) => void,
  port = 0,
): Promise<{ process: Subprocess; address: string; plaintextPort: number }> {
  const command = settings.binary ? [settings.binary] : [bun, join(ROOT, "src", "main.ts")];
  const clusterArgs = settings.zooKeeper ? ["--zookeeper", settings.zooKeeper] : [];
  // num.partitions=3 lets kcat, which has no admin API, get the scenario's 3-partition topic by
  // auto-creation; the other clients create their topic explicitly. Topics are replicated to
  // every broker, as a production cluster would have them; the internal topics too (their
  // default, 3, as Kafka's, is refused while fewer brokers live).
  const replicas = settings.brokerCount;
  const flags = [
    ...["serve", ...listenerFlags(settings, port), "--data-dir", join(RUN_DIR, `data-${id}`)],
    ...["--broker-id", String(id), "--set", "num.partitions=3"],
    ...["--set", `default.replication.factor=${replicas}`, ...clusterArgs],
    ...INTERNAL_TOPIC_REPLICATION_KEYS.flatMap((key) => ["--set", `${key}=${replicas}`]),
  ];
  const brokerProcess = Bun.spawn([...command, ...flags], {
    cwd: RUN_DIR,
    stdout: "pipe",
    stderr: "pipe",
  });
  let plaintextPort = 0;
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`broker ${id} printed no listening line`)),
      BROKER_START_TIMEOUT_MS,
    );
    const onLine = (line: string) => {
      log(line);
      const match = /listening on ([^\s:]+):(\d+)/.exec(line);
      if (match) {
        clearTimeout(timer);
        plaintextPort = Number(/:(\d+) \(PLAINTEXT\)/.exec(line)?.[1] ?? 0);
        resolve(`${match[1]}:${match[2]}`);
      }
    };
    void pumpLines(brokerProcess.stdout, onLine);
    void pumpLines(brokerProcess.stderr, onLine);
    void brokerProcess.exited.then((code) =>
      reject(new Error(`broker ${id} exited with code ${code}`)),
    );
  });
  return { process: brokerProcess, address, plaintextPort };
}

async function pumpLines(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  const decoder = new TextDecoder();
  let pending = "";
  for await (const chunk of stream) {
    pending += decoder.decode(chunk, { stream: true });
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) onLine(line);
  }
  if (pending) onLine(pending);
}

// ---- Running one client --------------------------------------------------------------------

function missingTool(tools: readonly string[]): string | undefined {
  return tools.find((tool) => !Bun.which(tool));
}

/** Runs a command with a deadline; returns its exit code, output and whether it timed out. */
async function runCommand(
  command: readonly string[],
  options: { cwd: string; env?: Record<string, string>; timeoutMs: number; logPrefix: string },
): Promise<{ code: number; stdout: string; stderr: string; timedOut: boolean }> {
  const child = Bun.spawn([...command], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, options.timeoutMs);
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  clearTimeout(timer);
  writeFileSync(`${options.logPrefix}.stdout`, stdout);
  writeFileSync(`${options.logPrefix}.stderr`, stderr);
  return { code, stdout, stderr, timedOut };
}

function lastLines(text: string, count: number): string {
  return text.trim().split("\n").slice(-count).join(" | ");
}

/**
 * Runs the client's build steps under a lock on its directory: CI runs the one-broker and the
 * three-broker matrix at once, and the second finds the Maven projects built by the first.
 */
function prepareClient(spec: ClientSpec, cwd: string): Promise<string | undefined> {
  return withBuildLock(cwd, () => runPrepareSteps(spec, cwd));
}

async function runPrepareSteps(spec: ClientSpec, cwd: string): Promise<string | undefined> {
  for (const [index, step] of spec.prepare.entries()) {
    const command = step();
    if (!command) continue;
    console.log(`::: ${spec.name}: ${command.join(" ")}`);
    const result = await runCommand(command, {
      cwd,
      timeoutMs: PREPARE_TIMEOUT_MS,
      logPrefix: join(RUN_DIR, `${spec.name}.prepare-${index}`),
    });
    if (result.code !== 0 || result.timedOut) {
      const why = result.timedOut ? "timed out" : `exit code ${result.code}`;
      const output = lastLines(result.stderr || result.stdout, 3);
      return `build failed (${command[0]}: ${why}): ${output}`;
    }
  }
  return undefined;
}

async function runClient(spec: ClientSpec, broker: Broker): Promise<ClientResult> {
  const startedMs = Date.now();
  const result: ClientResult = {
    client: spec.name,
    version: "?",
    cells: {},
    steps: spec.steps ?? (broker.settings.saslSsl ? [...SECURITY_STEPS, ...STEPS] : STEPS),
    application: spec.steps !== undefined,
    brokerLog: [],
    durationMs: 0,
  };
  const missing = missingTool(spec.needs);
  if (missing) {
    result.problem = `skipped (no ${missing})`;
    console.log(`!!! ${spec.name}: ${result.problem} — this client was NOT tested`);
    return result;
  }
  const cwd = join(COMPAT_DIR, spec.dir ?? spec.name);
  const workDir = join(RUN_DIR, `${spec.name}-work`);
  mkdirSync(workDir, { recursive: true });
  const prepareProblem = await prepareClient(spec, cwd);
  if (prepareProblem) {
    result.problem = prepareProblem;
    console.log(`!!! ${spec.name}: ${prepareProblem}`);
    return result;
  }
  const brokerLogBefore = readFileSync(broker.logPath, "utf8").length;
  console.log(`::: ${spec.name}: running the scenario`);
  const brokerControl = join(workDir, "broker-control");
  const stopWatching = watchBrokerControl(brokerControl, broker);
  const run = await runCommand(spec.run(), {
    cwd,
    env: {
      BOOTSTRAP: broker.bootstrap,
      TOPIC: `compat-${spec.name}`,
      GROUP: `compat-${spec.name}-group`,
      BROKERS: String(broker.count),
      // Every broker, for the applications that kill one (BOOTSTRAP alone may be the dead one).
      BOOTSTRAP_SERVERS: broker.addresses.join(","),
      WORK_DIR: workDir,
      BROKER_CONTROL: brokerControl,
      ...securityEnv(broker.settings.saslSsl),
    },
    timeoutMs: RUN_TIMEOUT_MS,
    logPrefix: join(RUN_DIR, spec.name),
  });
  await stopWatching();
  parseClientOutput(run.stdout, result);
  fillMissingCells(result, run);
  result.brokerLog = readFileSync(broker.logPath, "utf8")
    .slice(brokerLogBefore)
    .trim()
    .split("\n")
    .filter(Boolean)
    .slice(-BROKER_LOG_LINES_MAX);
  result.durationMs = Date.now() - startedMs;
  return result;
}

/** The settings a client program logs in with over SASL_SSL (test/compat/support/scenario.ts). */
function securityEnv(saslSsl: SaslSsl | undefined): Record<string, string> {
  if (!saslSsl) return {};
  return {
    SECURITY_PROTOCOL: "SASL_SSL",
    SASL_MECHANISM: "SCRAM-SHA-512",
    SASL_USERNAME: SCRAM_USER.name,
    SASL_PASSWORD: SCRAM_USER.password,
    SSL_CA_LOCATION: saslSsl.caPem,
  };
}

function parseClientOutput(stdout: string, result: ClientResult): void {
  for (const line of stdout.split("\n")) {
    if (!line.startsWith("{")) continue;
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(line);
    } catch {
      continue;
    }
    if (typeof parsed.client === "string" && typeof parsed.version === "string") {
      result.version = parsed.version;
    }
    const step = parsed.step;
    if (typeof step !== "string" || !result.steps.includes(step)) continue;
    result.cells[step] = toCell(parsed);
  }
}

function toCell(line: Record<string, unknown>): Cell {
  const ms = typeof line.ms === "number" ? line.ms : undefined;
  if (typeof line.skipped === "string") {
    return line.skipped.startsWith("n/a")
      ? { status: "n/a", reason: line.skipped }
      : { status: "skipped", reason: line.skipped };
  }
  if (line.ok === true) return { status: "ok", detail: line.detail as string | undefined, ms };
  return { status: "fail", error: String(line.error ?? "failed without an error message"), ms };
}

/** A step with no line failed: the program crashed, hung or skipped it by mistake. */
function fillMissingCells(
  result: ClientResult,
  run: { code: number; stderr: string; timedOut: boolean },
): void {
  const why = run.timedOut
    ? `the program was killed after ${RUN_TIMEOUT_MS / 1000} s`
    : `the program exited with code ${run.code} before this step: ${lastLines(run.stderr, 2)}`;
  let first = true;
  for (const step of result.steps) {
    if (result.cells[step]) continue;
    result.cells[step] = first
      ? { status: "fail", error: why }
      : { status: "fail", error: "no result (see above)" };
    first = false;
  }
}

// ---- The table -----------------------------------------------------------------------------

function cellText(cell: Cell | undefined, notes: string[], client: string, step: string): string {
  if (!cell) return "—";
  switch (cell.status) {
    case "ok":
      return "ok";
    case "skipped":
      return cell.reason;
    case "n/a":
      notes.push(`${client} / ${step}: ${cell.reason}`);
      return `n/a [${notes.length}]`;
    case "fail":
      notes.push(`${client} / ${step}: ${cell.error}`);
      return `**FAIL** [${notes.length}]`;
  }
}

function markdown(results: readonly ClientResult[], broker: string): string {
  const notes: string[] = [];
  const clients = results.filter((result) => !result.application);
  const steps = clients[0]?.steps ?? STEPS;
  const header = `| client | version | ${steps.join(" | ")} |`;
  const rule = `|${" --- |".repeat(steps.length + 2)}`;
  const rows = clients.map((result) => {
    const cells = result.problem
      ? steps.map(() => (result.problem?.startsWith("skipped") ? result.problem : "**FAIL**"))
      : steps.map((step) => cellText(result.cells[step], notes, result.client, step));
    if (result.problem && !result.problem.startsWith("skipped"))
      notes.push(`${result.client}: ${result.problem}`);
    return `| ${result.client} | ${result.version} | ${cells.join(" | ")} |`;
  });
  const applications = applicationRows(
    results.filter((r) => r.application),
    notes,
  );
  const noteLines = notes.map((note, i) => `${i + 1}. ${note.replaceAll("\n", " ")}`);
  return [
    `Quill client compatibility matrix, ${new Date().toISOString()}, broker ${broker}, ` +
      `logs in ${relative(ROOT, RUN_DIR)}`,
    "",
    ...(rows.length > 0 ? [header, rule, ...rows, ""] : []),
    ...applications,
    ...noteLines,
    "",
  ].join("\n");
}

/** The applications' table: one row per application and step, since each has its own. */
function applicationRows(results: readonly ClientResult[], notes: string[]): string[] {
  if (results.length === 0) return [];
  const rows = results.flatMap((result) =>
    result.steps.map((step) => {
      const text = result.problem
        ? untested(result)
          ? result.problem
          : "**FAIL**"
        : cellText(result.cells[step], notes, result.client, step);
      const cell = result.cells[step];
      const detail = cell?.status === "ok" && cell.detail ? cell.detail : "";
      return `| ${result.client} ${result.version} | ${step} | ${text} | ${detail} |`;
    }),
  );
  for (const result of results) {
    if (result.problem && !untested(result)) notes.push(`${result.client}: ${result.problem}`);
  }
  return ["| application | step | result | detail |", "| --- | --- | --- | --- |", ...rows, ""];
}

function untested(result: ClientResult): boolean {
  return result.problem?.startsWith("skipped") ?? false;
}

function verdict(result: ClientResult): string {
  if (untested(result)) return `NOT TESTED, ${result.problem}`;
  return failed(result) ? "FAILED" : "passed";
}

function failed(result: ClientResult): boolean {
  return (
    result.problem !== undefined ||
    Object.values(result.cells).some((cell) => cell.status === "fail")
  );
}

/** The closing line CI reads: every cell counted, n/a and skipped cells as skipped. */
function cellCounts(results: readonly ClientResult[]): string {
  let passed = 0;
  let failedCount = 0;
  let skipped = 0;
  for (const result of results) {
    if (result.problem) {
      if (untested(result)) skipped += result.steps.length;
      else failedCount += result.steps.length;
      continue;
    }
    for (const cell of Object.values(result.cells)) {
      if (cell.status === "ok") passed += 1;
      else if (cell.status === "fail") failedCount += 1;
      else skipped += 1;
    }
  }
  return `compat: ${passed} passed, ${failedCount} failed, ${skipped} skipped`;
}

/** Removes all but the newest RUNS_KEPT run dirs (their names start with the start time). */
function pruneOldRuns(): void {
  const runs = readdirSync(RUNS_DIR).sort();
  for (const run of runs.slice(0, Math.max(0, runs.length - RUNS_KEPT))) {
    rmSync(join(RUNS_DIR, run), { recursive: true, force: true });
  }
}

// ---- Main ----------------------------------------------------------------------------------

interface Options {
  /** The broker executable, or undefined for `bun src/main.ts`. */
  readonly binary: string | undefined;
  /** Run the broker in ZooKeeper mode against a ZooKeeper this script starts. */
  readonly zooKeeper: boolean;
  /** Brokers in the cluster (`--brokers N`, which implies `--zookeeper`); 1 by default. */
  readonly brokerCount: number;
  /** `--security sasl_ssl`: the clients connect over SASL_SSL with SCRAM-SHA-512. */
  readonly saslSsl: boolean;
  readonly clients: readonly ClientSpec[];
}

function parseArgs(args: string[]): Options | string {
  const binaryIndex = args.indexOf("--binary");
  const binaryArg = binaryIndex >= 0 ? args.splice(binaryIndex, 2)[1] : undefined;
  const zooKeeperIndex = args.indexOf("--zookeeper");
  if (zooKeeperIndex >= 0) args.splice(zooKeeperIndex, 1);
  const brokersIndex = args.indexOf("--brokers");
  const brokerCount = brokersIndex >= 0 ? Number(args.splice(brokersIndex, 2)[1]) : 1;
  if (!Number.isInteger(brokerCount) || brokerCount < 1 || brokerCount > BROKERS_MAX) {
    return `--brokers takes a count from 1 to ${BROKERS_MAX}`;
  }
  const securityIndex = args.indexOf("--security");
  const security = securityIndex >= 0 ? args.splice(securityIndex, 2)[1] : undefined;
  if (security !== undefined && security !== "sasl_ssl") return "--security takes sasl_ssl";
  // Over SASL_SSL only the programs that take security settings can run.
  const runnable = security ? CLIENTS.filter(takesSecurity) : CLIENTS;
  const unknown = args.filter((name) => !runnable.some((client) => client.name === name));
  if (unknown.length > 0) {
    const known = runnable.map((client) => client.name).join(", ");
    const over = security ? " over SASL_SSL" : "";
    return `unknown client(s) ${unknown.join(", ")}; known${over}: ${known}`;
  }
  return {
    // The broker runs in .compat/, so a relative path is resolved against where we were started.
    binary: binaryArg === undefined ? undefined : resolve(binaryArg),
    zooKeeper: zooKeeperIndex >= 0 || brokerCount > 1,
    brokerCount,
    saslSsl: security !== undefined,
    clients: args.length > 0 ? runnable.filter((client) => args.includes(client.name)) : runnable,
  };
}

function takesSecurity(spec: ClientSpec): boolean {
  return (SECURITY_CLIENTS as readonly string[]).includes(spec.name);
}

async function runAll(options: Options, label: string): Promise<ClientResult[]> {
  const zooKeeper = options.zooKeeper ? await startZooKeeper() : undefined;
  const saslSsl = options.saslSsl ? makeSaslSsl() : undefined;
  const broker = await startBrokers({
    binary: options.binary,
    zooKeeper: zooKeeper?.connectString,
    brokerCount: options.brokerCount,
    saslSsl,
  });
  console.log(
    `::: broker on ${broker.bootstrap} (${label}), log in ${relative(ROOT, broker.logPath)}`,
  );
  const results: ClientResult[] = [];
  try {
    for (const spec of options.clients) {
      const result = await runClient(spec, broker);
      console.log(`::: ${spec.name}: ${verdict(result)} in ${result.durationMs} ms`);
      results.push(result);
    }
  } finally {
    for (const brokerProcess of broker.processes) brokerProcess.kill("SIGTERM");
    await Promise.all(broker.processes.map((brokerProcess) => brokerProcess.exited));
    await zooKeeper?.stop();
    saslSsl?.remove();
    // The logs stay for a look after a failure; the records are only test data.
    for (let id = 0; id < options.brokerCount; id++) {
      rmSync(join(RUN_DIR, `data-${id}`), { recursive: true, force: true });
    }
  }
  return results;
}

function modeOf(options: Options): "embedded" | "zookeeper" | "cluster" {
  if (options.brokerCount > 1) return "cluster";
  return options.zooKeeper ? "zookeeper" : "embedded";
}

function modeLabel(options: Options): string {
  const mode = modeOf(options);
  const security = options.saslSsl ? ", SASL_SSL with SCRAM-SHA-512" : "";
  if (mode === "cluster") return `, ${options.brokerCount} brokers in ZooKeeper mode${security}`;
  return (mode === "zookeeper" ? ", ZooKeeper mode" : "") + security;
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  if (typeof options === "string") {
    console.error(options);
    return 2;
  }
  mkdirSync(join(CACHE_DIR, "bin"), { recursive: true });
  mkdirSync(RUN_DIR, { recursive: true });
  pruneOldRuns();
  const label = (options.binary ?? "bun src/main.ts") + modeLabel(options);
  const results = await runAll(options, label);
  // Each mode keeps its own results, so one run of each can be compared.
  const resultsName =
    {
      embedded: "results",
      zookeeper: "results-zookeeper",
      cluster: "results-cluster",
    }[modeOf(options)] + (options.saslSsl ? "-sasl-ssl" : "");
  const table = markdown(results, label);
  writeFileSync(join(OUT_DIR, `${resultsName}.md`), table);
  writeFileSync(join(OUT_DIR, `${resultsName}.json`), `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\n${table}`);
  const failedClients = results
    .filter((result) => failed(result) && !untested(result))
    .map((r) => r.client);
  const untestedClients = results
    .filter(untested)
    .map((result) => `${result.client} (${result.problem})`);
  if (failedClients.length > 0) {
    console.log(
      `compat: FAILED for ${failedClients.join(", ")} ` +
        `(see .compat/results*.md and ${relative(ROOT, RUN_DIR)}/<client>.stderr)`,
    );
  }
  if (untestedClients.length > 0) console.log(`compat: NOT TESTED: ${untestedClients.join(", ")}`);
  if (failedClients.length + untestedClients.length === 0) {
    console.log(`compat: all ${results.length} clients passed every step`);
  }
  console.log(cellCounts(results));
  return failedClients.length + untestedClients.length === 0 ? 0 : 1;
}

process.exit(await main());
