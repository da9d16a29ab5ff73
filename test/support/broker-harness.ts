/**
 * Starts Quill brokers in the test's own process on port 0 with a temp data dir. Brokers run as
 * child processes live in child-broker.ts, so a test that only needs this file starts no process
 * and runs in `npm run test:unit`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RunningBroker, startBroker } from "../../src/broker/broker.ts";
import { loadConfig } from "../../src/config/load-config.ts";
import { LineLogger } from "./line-logger.ts";

export { LineLogger };

export const REPO_ROOT = join(import.meta.dir, "..", "..");

/** A fresh directory under the OS temp dir; the caller removes it with `removeDir`. */
export function tempDir(prefix = "quill-e2e-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** Extra config as `--set key=value` pairs, e.g. `{ "num.partitions": "6" }`. */
export type Settings = Readonly<Record<string, string>>;

/**
 * The keys that set the internal topics' replication factor (3 by default, as Kafka's). As in
 * Kafka, an internal topic is not created while fewer brokers live, so a ZooKeeper-mode cluster
 * of one or two brokers sets them as Kafka's single-node config does (to 1).
 */
export const INTERNAL_TOPIC_REPLICATION_KEYS = [
  "offsets.topic.replication.factor",
  "transaction.state.log.replication.factor",
  "share.coordinator.state.topic.replication.factor",
] as const;

/** Settings giving the internal topics `replicas` replicas (a cluster of that many brokers). */
export function internalTopicReplication(replicas: number): Settings {
  return Object.fromEntries(INTERNAL_TOPIC_REPLICATION_KEYS.map((k) => [k, String(replicas)]));
}

/**
 * A test broker's settings: in ZooKeeper mode the internal topics get one replica unless the
 * test says otherwise, as Kafka's single-node config has it (most tests start one or two brokers;
 * a three-broker cluster that tests coordinator failover sets 3).
 */
export function testBrokerSettings(settings: Settings): Settings {
  if (settings["zookeeper.connect"] === undefined) return settings;
  return { ...internalTopicReplication(1), ...settings };
}

export interface InProcessBroker {
  readonly host: string;
  readonly port: number;
  /** `host:port`, for kcat `-b` and kafkajs `brokers`. */
  readonly bootstrap: string;
  readonly dataDir: string;
  readonly broker: RunningBroker;
  readonly logger: LineLogger;
  /** Stops the broker cleanly and removes the data dir unless it was passed in. */
  stop(): Promise<void>;
}

/** Starts the broker in this process on 127.0.0.1:0 (a free port) with a temp data dir. */
export async function startInProcessBroker(
  options: { dataDir?: string; settings?: Settings } = {},
): Promise<InProcessBroker> {
  const dataDir = options.dataDir ?? tempDir();
  const flags = [
    { key: "listeners", value: "127.0.0.1:0", flag: "--listen" },
    { key: "log.dirs", value: dataDir, flag: "--data-dir" },
    ...Object.entries(testBrokerSettings(options.settings ?? {})).map(([key, value]) => ({
      key,
      value,
      flag: "--set",
    })),
  ];
  const { config } = loadConfig({ flags });
  const logger = new LineLogger();
  const broker = await startBroker(config, logger);
  return {
    host: broker.host,
    port: broker.port,
    bootstrap: `${broker.host}:${broker.port}`,
    dataDir,
    broker,
    logger,
    stop: async () => {
      await broker.stop();
      if (options.dataDir === undefined) removeDir(dataDir);
    },
  };
}
