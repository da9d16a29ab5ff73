// Apache Kafka 4.4 in KRaft mode for the benchmarks of what ZooKeeper-mode Kafka 3.9 lacks
// (share groups, the KIP-848 group coordinator): one combined broker and controller node, its
// jars fetched from Maven Central into the cache as kafka-dist.ts fetches 3.9's, the storage
// formatted with kafka-storage's StorageTool, then kafka.Kafka started on a free port.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePorts } from "../../test/support/zookeeper-server.ts";
import { runCommand } from "../bench-common.ts";
import { waitForFirstProduce } from "./broker-probe.ts";
import { ensureKafkaDist } from "./kafka-dist.ts";

export const KRAFT_KAFKA_VERSION = "4.4.0";
const START_TIMEOUT_MS = 120_000;

export interface KraftKafka {
  readonly bootstrap: string;
  stop(): Promise<void>;
}

/** Starts a one-node Kafka 4.4 (process.roles=broker,controller) with its data under `dir`. */
export async function startKraftKafka(
  dir: string,
  extra: Readonly<Record<string, string>> = {},
): Promise<KraftKafka> {
  const dist = await ensureKafkaDist(KRAFT_KAFKA_VERSION);
  if ("missing" in dist) throw new Error(`no Kafka ${KRAFT_KAFKA_VERSION}: ${dist.missing}`);
  const [port, controllerPort] = (await freePorts(2)) as [number, number];
  mkdirSync(dir, { recursive: true });
  const settings: Record<string, string> = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.quorum.voters": `1@127.0.0.1:${controllerPort}`,
    listeners: `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    "advertised.listeners": `PLAINTEXT://127.0.0.1:${port}`,
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "log.dirs": join(dir, "data"),
    // One node: the internal topics cannot have more replicas.
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    ...extra,
  };
  const config = join(dir, "server.properties");
  writeFileSync(
    config,
    `${Object.entries(settings)
      .map(([k, v]) => `${k}=${v}`)
      .join("\n")}\n`,
  );
  const java = ["java", "-Xmx1g", "-cp", dist.classpath];
  const clusterId = Buffer.from(crypto.getRandomValues(new Uint8Array(16)))
    .toString("base64url")
    .slice(0, 22);
  await runCommand(
    [...java, "kafka.tools.StorageTool", "format", "-t", clusterId, "-c", config],
    120_000,
  );
  const proc = Bun.spawn([...java, "kafka.Kafka", config], {
    stdin: "ignore",
    stdout: Bun.file(join(dir, "kafka.out")),
    stderr: Bun.file(join(dir, "kafka.out")),
  });
  const stop = async () => {
    proc.kill("SIGTERM");
    const timer = setTimeout(() => proc.kill("SIGKILL"), 30_000);
    await proc.exited;
    clearTimeout(timer);
  };
  try {
    await waitForFirstProduce(port, performance.now() + START_TIMEOUT_MS);
  } catch (error) {
    await stop();
    throw error;
  }
  return { bootstrap: `127.0.0.1:${port}`, stop };
}
