/**
 * The broker id in ZooKeeper mode, as Kafka settles it at startup: the id recorded in each log
 * dir's `meta.properties` wins; else `broker.id` when set; else (broker.id -1) a new id from
 * `/brokers/seqid` (its version after a setData, plus reserved.broker.max.id, 1000, so
 * generated ids never collide with configured ones). The id is then recorded in
 * `meta.properties` (with the cluster id), so a restarted broker keeps its generated id, and a
 * data dir cannot silently be reused by a broker with another id or in another cluster.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { retryOnConnectionLoss } from "../zookeeper/retry-on-connection-loss.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import { NodeExistsError, NoNodeError } from "../zookeeper/zookeeper-errors.ts";
import { ClusterStartupError } from "./zookeeper-connection.ts";

export const META_PROPERTIES_FILE = "meta.properties";
export const BROKER_SEQID_PATH = "/brokers/seqid";
/** Kafka's reserved.broker.max.id default: configured ids stay at or below it. */
export const RESERVED_BROKER_MAX_ID = 1000;
/** broker.id's "generate one" value. */
export const GENERATE_BROKER_ID = -1;

/**
 * Version of what Quill writes under a data dir (segments, indexes, checkpoints), recorded in
 * meta.properties beside Kafka's own `version=0`. Bumped when a change would make an older
 * binary misread the dir: a binary refuses a dir of a newer version rather than guess. A dir
 * without the key predates the record and is read as version 1, the layout at the time.
 */
export const DATA_FORMAT_VERSION = 1;
const DATA_FORMAT_KEY = "quill.data.format.version";

interface MetaProperties {
  readonly brokerId: number;
  readonly clusterId: string | null;
}

/**
 * Settles the id and records it in every log dir; ClusterStartupError on a conflict. Without
 * ZooKeeper (the embedded broker) there is no sequence to draw from, so -1 means 0; the record
 * is written all the same, so that an older binary refuses a data dir a newer one has written.
 */
export async function resolveBrokerId(
  configuredId: number,
  clusterId: string,
  logDirs: readonly string[],
  zk: ZooKeeperClient | null,
): Promise<number> {
  // A dir the disk refuses to read is left to the log manager, which takes it offline at start
  // (KIP-112), as Kafka's loader leaves out the dirs it cannot read.
  const recorded = logDirs.flatMap((dir) => {
    const meta = ifDiskAnswers(() => readMetaProperties(dir)) ?? null;
    return meta === null ? [] : [{ dir, meta }];
  });
  for (const { dir, meta } of recorded) {
    if (meta.clusterId !== null && meta.clusterId !== clusterId) {
      throw new ClusterStartupError(
        `${path.join(dir, META_PROPERTIES_FILE)} belongs to cluster ` +
          `${meta.clusterId}, but ${zk === null ? "the metadata file" : "ZooKeeper"} holds ` +
          `cluster ${clusterId}`,
      );
    }
  }
  const ids = new Set(recorded.map((r) => r.meta.brokerId));
  if (ids.size > 1) {
    throw new ClusterStartupError(
      `the log dirs record different broker ids: ${[...ids].join(", ")}`,
    );
  }
  const recordedId = recorded[0]?.meta.brokerId;
  if (
    recordedId !== undefined &&
    configuredId !== GENERATE_BROKER_ID &&
    recordedId !== configuredId
  ) {
    throw new ClusterStartupError(
      `configured broker.id ${configuredId} does not match the id ` +
        `${recordedId} recorded in ${META_PROPERTIES_FILE}; the data dir belongs to another broker`,
    );
  }
  const brokerId = recordedId ?? (await configuredOrGenerated(configuredId, zk));
  for (const dir of logDirs) ifDiskAnswers(() => writeMetaProperties(dir, { brokerId, clusterId }));
  return brokerId;
}

/** `read()`'s value, or undefined when the disk refused it (an fs error code: EIO, EROFS, ...). */
function ifDiskAnswers<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === "string" && code.startsWith("E")) return undefined;
    throw error;
  }
}

async function configuredOrGenerated(
  configuredId: number,
  zk: ZooKeeperClient | null,
): Promise<number> {
  if (configuredId !== GENERATE_BROKER_ID) return configuredId;
  return zk === null ? 0 : generateBrokerId(zk);
}

/**
 * Kafka's generateBrokerSequenceId: the version a write to /brokers/seqid gives, plus 1000. A
 * write lost with its connection is retried: if it was applied, the retry skips one id.
 */
export function generateBrokerId(zk: ZooKeeperClient): Promise<number> {
  return retryOnConnectionLoss(() => bumpBrokerSequence(zk), zk.sessionTimeoutMs);
}

async function bumpBrokerSequence(zk: ZooKeeperClient): Promise<number> {
  for (;;) {
    try {
      const stat = await zk.setData(BROKER_SEQID_PATH, new Uint8Array(0));
      return stat.version + RESERVED_BROKER_MAX_ID;
    } catch (error) {
      if (!(error instanceof NoNodeError)) throw error;
    }
    await zk
      .create(BROKER_SEQID_PATH, new Uint8Array(0), { createParents: true })
      .catch((error) => {
        if (!(error instanceof NodeExistsError)) throw error;
      });
  }
}

/** Kafka's v0 meta.properties (a Java properties file); null when the dir has none. */
export function readMetaProperties(dir: string): MetaProperties | null {
  const file = path.join(dir, META_PROPERTIES_FILE);
  if (!existsSync(file)) return null;
  const entries = new Map<string, string>();
  for (const line of readFileSync(file, "utf8").split(/\r?\n/)) {
    const match = line.match(/^\s*([^#!=:\s][^=:]*?)\s*[=:]\s*(.*?)\s*$/);
    if (match !== null) entries.set(match[1]!, match[2]!);
  }
  const brokerId = Number(entries.get("broker.id"));
  if (!Number.isInteger(brokerId) || brokerId < 0) {
    throw new ClusterStartupError(`${file} has no valid broker.id`);
  }
  const format = Number(entries.get(DATA_FORMAT_KEY) ?? DATA_FORMAT_VERSION);
  if (!Number.isInteger(format) || format < 1) {
    throw new ClusterStartupError(`${file} has no valid ${DATA_FORMAT_KEY}`);
  }
  if (format > DATA_FORMAT_VERSION) {
    throw new ClusterStartupError(
      `${file} records data format version ${format}, written by a newer Quill; this binary ` +
        `reads up to version ${DATA_FORMAT_VERSION}: run the newer release on this data dir`,
    );
  }
  return { brokerId, clusterId: entries.get("cluster.id") ?? null };
}

/** Written to a temporary file and renamed, so a crash never leaves half a file. */
function writeMetaProperties(dir: string, meta: MetaProperties): void {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, META_PROPERTIES_FILE);
  const text =
    `#\n#written by quill\nversion=0\nbroker.id=${meta.brokerId}\n` +
    `${DATA_FORMAT_KEY}=${DATA_FORMAT_VERSION}\n` +
    (meta.clusterId === null ? "" : `cluster.id=${meta.clusterId}\n`);
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}
