// The two brokers under test, started as child processes with matched settings on a fresh data dir
// each, on the same disk, and stopped by PID. Apache Kafka runs in ZooKeeper mode (kafka.Kafka with
// a generated server.properties, the JVM options of kafka-server-start.sh) against a real
// ZooKeeper; each Kafka start gets its own chroot so no state from an earlier start is seen.
import { closeSync, mkdirSync, openSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePorts } from "../../test/support/zookeeper-server.ts";
import { waitForFirstProduce } from "./broker-probe.ts";

export type BrokerKind = "kafka" | "quill";

export interface BrokerProcess {
  readonly kind: BrokerKind;
  readonly pid: number;
  readonly port: number;
  readonly bootstrap: string;
  /** The SASL_SSL listener's address, when the broker was started with one. */
  readonly saslSslBootstrap: string | null;
  /** From just before the process was spawned to the first produce that succeeded. */
  readonly startupMs: number;
  /** Quill's admin listener (/metrics), when it was started with one. */
  readonly adminPort: number | null;
  /** SIGTERM, then SIGKILL if the process has not exited within the stop timeout. */
  stop(): Promise<void>;
  /** SIGKILL at once (a crash: no clean shutdown marker, logs recovered at the next start). */
  kill(): Promise<void>;
}

/**
 * Settings both brokers get, written out even where they are the default: no forced flush (no
 * flush keys; both leave it to the OS), one partition for auto-created topics, the same segment
 * size, retention and index interval, and no initial rebalance delay so consumer groups start at
 * once on both.
 */
export const MATCHED_SETTINGS: Readonly<Record<string, string>> = {
  "num.partitions": "1",
  "default.replication.factor": "1",
  "min.insync.replicas": "1",
  "auto.create.topics.enable": "true",
  "delete.topic.enable": "true",
  "log.segment.bytes": "1073741824",
  "log.retention.hours": "168",
  "log.retention.bytes": "-1",
  "log.index.interval.bytes": "4096",
  "message.max.bytes": "1048588",
  "group.initial.rebalance.delay.ms": "0",
};

/**
 * Kafka-only keys a single ZooKeeper-mode broker needs: internal topics with one replica. One
 * __consumer_offsets partition instead of 50 makes Kafka's first consumer group start faster; Quill
 * has no offsets topic, so this only helps Kafka.
 */
const KAFKA_ONLY_SETTINGS: Readonly<Record<string, string>> = {
  "broker.id": "0",
  "offsets.topic.replication.factor": "1",
  "offsets.topic.num.partitions": "1",
  "transaction.state.log.replication.factor": "1",
  "transaction.state.log.min.isr": "1",
  "zookeeper.session.timeout.ms": "18000",
};

/** kafka-server-start.sh's heap and kafka-run-class.sh's JVM performance options. */
const KAFKA_JVM_OPTIONS = [
  "-Xmx1G",
  "-Xms1G",
  "-server",
  "-XX:+UseG1GC",
  "-XX:MaxGCPauseMillis=20",
  "-XX:InitiatingHeapOccupancyPercent=35",
  "-XX:+ExplicitGCInvokesConcurrent",
  "-XX:MaxInlineLevel=15",
  "-Djava.awt.headless=true",
];
/**
 * Kafka 3.9 with 1,000 or 10,000 partitions did not reach a first produce within 120 s at load
 * average 25-27 on the shared 2-core machine (docs/scaling.md), which lost the whole workload.
 */
const START_TIMEOUT_MS = 300_000;
/** Kafka and Quill both take their time to stop with 10,000 partitions; past this, SIGKILL. */
const STOP_TIMEOUT_MS = 180_000;

export interface KafkaSetup {
  readonly classpath: string;
  readonly zookeeperConnect: string;
}

/** Settings of a SASL_SSL listener beside the PLAINTEXT one (bench-vs-kafka/sasl-ssl.ts). */
export type SaslSslSettings = Readonly<Record<string, string>>;

interface Listeners {
  readonly port: number;
  readonly saslSslPort: number | null;
  readonly settings: Record<string, string>;
}

/** A PLAINTEXT listener (the probes, topic creation) and optionally a SASL_SSL one. */
async function listenersOf(saslSsl: SaslSslSettings | null): Promise<Listeners> {
  const [port, saslSslPort] = await freePorts(saslSsl === null ? 1 : 2);
  const listeners =
    `PLAINTEXT://127.0.0.1:${port}` +
    (saslSsl === null ? "" : `,SASL_SSL://127.0.0.1:${saslSslPort}`);
  return {
    port: port!,
    saslSslPort: saslSsl === null ? null : saslSslPort!,
    settings: { ...saslSsl, listeners, "advertised.listeners": listeners },
  };
}

/** Starts kafka.Kafka in `dir` (data in dir/data) under ZooKeeper chroot `/<chroot>`. */
export async function startKafka(
  setup: KafkaSetup,
  dir: string,
  chroot: string,
  extra: Readonly<Record<string, string>> = {},
  jmxPort: number | null = null,
  saslSsl: SaslSslSettings | null = null,
): Promise<BrokerProcess> {
  const listeners = await listenersOf(saslSsl);
  const settings = {
    ...MATCHED_SETTINGS,
    ...KAFKA_ONLY_SETTINGS,
    ...extra,
    "zookeeper.connect": `${setup.zookeeperConnect}/${chroot}`,
    ...listeners.settings,
    "log.dirs": join(dir, "data"),
  };
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "server.properties"), properties(settings));
  writeFileSync(join(dir, "log4j.properties"), fileLog4j(join(dir, "kafka.log")));
  const argv = [
    "java",
    ...KAFKA_JVM_OPTIONS,
    ...(jmxPort === null ? [] : jmxOptions(jmxPort)),
    `-Dlog4j.configuration=file:${dir}/log4j.properties`,
    "-cp",
    setup.classpath,
    "kafka.Kafka",
    join(dir, "server.properties"),
  ];
  return spawnBroker("kafka", argv, listeners, join(dir, "kafka.out"), null);
}

/** Remote JMX without authentication, bound to loopback only, for the request counters. */
function jmxOptions(port: number): string[] {
  return [
    `-Dcom.sun.management.jmxremote.port=${port}`,
    `-Dcom.sun.management.jmxremote.rmi.port=${port}`,
    "-Dcom.sun.management.jmxremote.host=127.0.0.1",
    "-Djava.rmi.server.hostname=127.0.0.1",
    "-Dcom.sun.management.jmxremote.authenticate=false",
    "-Dcom.sun.management.jmxremote.ssl=false",
  ];
}

/** Starts `quill serve` in `dir` (data in dir/data) with the matched settings as a config file. */
export async function startQuill(
  binary: string,
  dir: string,
  extra: Readonly<Record<string, string>> = {},
  adminPort: number | null = null,
  saslSsl: SaslSslSettings | null = null,
): Promise<BrokerProcess> {
  const listeners = await listenersOf(saslSsl);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "quill.properties"),
    properties({ ...MATCHED_SETTINGS, ...extra, ...listeners.settings }),
  );
  const argv = [
    binary,
    "serve",
    "--data-dir",
    join(dir, "data"),
    "--config",
    join(dir, "quill.properties"),
    ...(adminPort === null ? [] : ["--admin", `127.0.0.1:${adminPort}`]),
  ];
  return spawnBroker("quill", argv, listeners, join(dir, "quill.out"), adminPort);
}

async function spawnBroker(
  kind: BrokerKind,
  argv: string[],
  listeners: Listeners,
  logPath: string,
  adminPort: number | null,
): Promise<BrokerProcess> {
  const { port, saslSslPort } = listeners;
  const logFd = openSync(logPath, "a");
  const startedMs = performance.now();
  const proc = Bun.spawn(argv, { stdin: "ignore", stdout: logFd, stderr: logFd });
  closeSync(logFd);
  const stop = async () => {
    proc.kill("SIGTERM");
    const timer = setTimeout(() => proc.kill("SIGKILL"), STOP_TIMEOUT_MS);
    await proc.exited;
    clearTimeout(timer);
  };
  try {
    await Promise.race([
      waitForFirstProduce(port, startedMs + START_TIMEOUT_MS),
      proc.exited.then((code) => {
        throw new Error(`${kind} exited with ${code} while starting; see ${logPath}`);
      }),
    ]);
  } catch (error) {
    await stop();
    throw error;
  }
  const startupMs = performance.now() - startedMs;
  const kill = async () => {
    proc.kill("SIGKILL");
    await proc.exited;
  };
  const bootstrap = `127.0.0.1:${port}`;
  const saslSslBootstrap = saslSslPort === null ? null : `127.0.0.1:${saslSslPort}`;
  return {
    kind,
    pid: proc.pid,
    port,
    bootstrap,
    saslSslBootstrap,
    startupMs,
    adminPort,
    stop,
    kill,
  };
}

function properties(settings: Readonly<Record<string, string>>): string {
  return (
    Object.entries(settings)
      .map(([key, value]) => `${key}=${value}`)
      .join("\n") + "\n"
  );
}

/** INFO and above to one file, as Kafka's own config/log4j.properties does by default. */
function fileLog4j(path: string): string {
  return [
    "log4j.rootLogger=INFO, file",
    "log4j.appender.file=org.apache.log4j.FileAppender",
    `log4j.appender.file.File=${path}`,
    "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
    "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n",
    "",
  ].join("\n");
}
