/**
 * `quill topic create|list|describe|delete|add-partitions|alter-config|describe-config`: topic
 * administration with CreateTopics, Metadata, ListOffsets, DeleteTopics, CreatePartitions,
 * IncrementalAlterConfigs and DescribeConfigs, as kafka-topics.sh and kafka-configs.sh do;
 * describe adds partition sizes from DescribeLogDirs, as kafka-log-dirs.sh shows them.
 */
import { check } from "../client/client-errors.ts";
import type { ClusterClient } from "../client/cluster-client.ts";
import { type ReplicaSizes, replicaSizes } from "../client/log-dir-sizes.ts";
import {
  describeTopics,
  EARLIEST_TIMESTAMP,
  LATEST_TIMESTAMP,
  listOffsets,
  type PartitionInfo,
  partitionKey,
  topicsOf,
} from "../client/partition-offsets.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { UsageError } from "./args.ts";
import type { CommandArgs } from "./command-args.ts";
import { withClient } from "./connection-options.ts";
import { ids, outputFormat, printJson, printTable } from "./output.ts";

/** DescribeConfigs/IncrementalAlterConfigs resource type of a topic. */
const TOPIC_RESOURCE = 2;
const CONFIG_SOURCES = [
  "UNKNOWN",
  "TOPIC",
  "DYNAMIC_BROKER",
  "DYNAMIC_DEFAULT_BROKER",
  "STATIC_BROKER",
  "DEFAULT",
  "DYNAMIC_BROKER_LOGGER",
  "CLIENT_METRICS",
];
const TIMEOUT_MS = 30_000;

export function keyValue(flag: string, text: string): [string, string] {
  const eq = text.indexOf("=");
  if (eq <= 0) throw new UsageError(`${flag} expects KEY=VALUE, got "${text}"`);
  return [text.slice(0, eq).trim(), text.slice(eq + 1)];
}

export async function topicCreate(args: CommandArgs): Promise<number> {
  const [name] = args.expect(["TOPIC"]);
  const partitions = args.int("--partitions", -1, 1, 1_000_000);
  const replication = args.int("--replication-factor", -1, 1, 32_767);
  const configs = args.all("--config").map((c) => {
    const [key, value] = keyValue("-c", c);
    return { name: key, value };
  });
  return withClient(args, async (client) => {
    const response = await client.request(ApiKey.CreateTopics, {
      topics: [{ name, numPartitions: partitions, replicationFactor: replication, configs }],
      timeoutMs: TIMEOUT_MS,
    });
    const result = response.topics[0]!;
    check(result.errorCode, `creating topic "${name}"`, result.errorMessage);
    if (outputFormat(args) === "json") {
      printJson({
        topic: name,
        partitions: result.numPartitions,
        replicationFactor: result.replicationFactor,
      });
    } else {
      process.stdout.write(`created topic ${name}\n`);
    }
    return 0;
  });
}

export async function topicList(args: CommandArgs): Promise<number> {
  args.expect([]);
  return withClient(args, async (client) => {
    const topics = topicsOf(await client.metadata(null))
      .filter((t) => args.has("--internal") || !t.internal)
      .sort((a, b) => a.name.localeCompare(b.name));
    const rows = topics.map((t) => ({
      topic: t.name,
      partitions: t.partitions.length,
      replicationFactor: t.partitions[0]?.replicas.length ?? 0,
      internal: t.internal,
    }));
    if (outputFormat(args) === "json") printJson(rows);
    else
      printTable(
        ["TOPIC", "PARTITIONS", "REPLICAS"],
        rows.map((r) => [r.topic, r.partitions, r.replicationFactor]),
      );
    return 0;
  });
}

export async function topicDescribe(args: CommandArgs): Promise<number> {
  if (args.positionals.length === 0) throw new UsageError("expected TOPIC...");
  return withClient(args, async (client) => {
    const described = [];
    for (const topic of await describeTopics(client, args.positionals)) {
      const starts = await listOffsets(client, topic.partitions, EARLIEST_TIMESTAMP);
      const ends = await listOffsets(client, topic.partitions, LATEST_TIMESTAMP);
      const sizes = await replicaSizes(client, topic.partitions);
      const partitions = topic.partitions.map((p) => ({
        partition: p.partition,
        leader: p.leader,
        leaderEpoch: p.leaderEpoch,
        replicas: p.replicas,
        isr: p.isr,
        offlineReplicas: p.offline,
        logStartOffset: starts.get(partitionKey(p.topic, p.partition)) ?? null,
        logEndOffset: ends.get(partitionKey(p.topic, p.partition)) ?? null,
        ...sizeFields(p, sizes),
      }));
      described.push({ topic: topic.name, topicId: uuidText(topic.topicId), partitions });
    }
    if (outputFormat(args) === "json") {
      printJson(described.length === 1 ? described[0] : described);
      return 0;
    }
    for (const t of described) {
      process.stdout.write(
        `topic ${t.topic}  id ${t.topicId}  partitions ${t.partitions.length}\n`,
      );
      printTable(
        [
          "PARTITION",
          "LEADER",
          "EPOCH",
          "REPLICAS",
          "ISR",
          "LOG-START",
          "LOG-END",
          "RECORDS",
          "SIZE",
        ],
        t.partitions.map((p) => [
          p.partition,
          p.leader,
          p.leaderEpoch,
          ids(p.replicas),
          ids(p.isr),
          p.logStartOffset,
          p.logEndOffset,
          p.logEndOffset !== null && p.logStartOffset !== null
            ? p.logEndOffset - p.logStartOffset
            : null,
          p.sizeBytes === null ? null : humanBytes(p.sizeBytes),
        ]),
      );
    }
    return 0;
  });
}

/**
 * The leader replica's size (what a consumer reads), and every replica's, from DescribeLogDirs;
 * null where no broker answered.
 */
function sizeFields(p: PartitionInfo, sizes: ReplicaSizes) {
  const replicas = sizes.get(partitionKey(p.topic, p.partition)) ?? new Map<number, bigint>();
  const leader = replicas.get(p.leader);
  return {
    sizeBytes: leader === undefined ? null : Number(leader),
    replicaSizeBytes: Object.fromEntries([...replicas].map(([id, n]) => [id, Number(n)])),
  };
}

/** Bytes for people: 1023 B, 1.5 KiB, 12.0 MiB, 3.2 GiB. */
function humanBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** A topic id as Kafka prints it: URL-safe base64 without padding. */
export function uuidText(id: Uint8Array): string {
  return Buffer.from(id).toString("base64url");
}

export async function topicDelete(args: CommandArgs): Promise<number> {
  if (args.positionals.length === 0) throw new UsageError("expected TOPIC...");
  return withClient(args, async (client) => {
    const response = await client.request(ApiKey.DeleteTopics, {
      topicNames: [...args.positionals],
      timeoutMs: TIMEOUT_MS,
    });
    for (const r of response.responses) {
      check(r.errorCode, `deleting topic "${r.name}"`, r.errorMessage);
    }
    if (outputFormat(args) === "json") printJson({ deleted: args.positionals });
    else for (const t of args.positionals) process.stdout.write(`deleted topic ${t}\n`);
    return 0;
  });
}

export async function topicAddPartitions(args: CommandArgs): Promise<number> {
  const [name] = args.expect(["TOPIC"]);
  if (!args.has("--partitions")) throw new UsageError("add-partitions needs -p/--partitions TOTAL");
  const total = args.int("--partitions", 1, 1, 1_000_000);
  return withClient(args, async (client) => {
    const response = await client.request(ApiKey.CreatePartitions, {
      topics: [{ name, count: total, assignments: null }],
      timeoutMs: TIMEOUT_MS,
    });
    const r = response.results[0]!;
    check(r.errorCode, `adding partitions to "${name}"`, r.errorMessage);
    if (outputFormat(args) === "json") printJson({ topic: name, partitions: total });
    else process.stdout.write(`topic ${name} now has ${total} partitions\n`);
    return 0;
  });
}

export async function topicAlterConfig(args: CommandArgs): Promise<number> {
  const [name] = args.expect(["TOPIC"]);
  const sets = args.all("--set").map((s) => keyValue("--set", s));
  const deletes = args.all("--delete");
  if (sets.length + deletes.length === 0) {
    throw new UsageError("alter-config needs --set KEY=VALUE or --delete KEY");
  }
  const configs = [
    ...sets.map(([key, value]) => ({ name: key, configOperation: 0, value })),
    ...deletes.map((key) => ({ name: key, configOperation: 1, value: null })),
  ];
  return withClient(args, async (client) => {
    const response = await client.request(ApiKey.IncrementalAlterConfigs, {
      resources: [{ resourceType: TOPIC_RESOURCE, resourceName: name, configs }],
    });
    const r = response.responses[0]!;
    check(r.errorCode, `altering configs of "${name}"`, r.errorMessage);
    if (outputFormat(args) === "json")
      printJson({ topic: name, set: Object.fromEntries(sets), deleted: deletes });
    else process.stdout.write(`altered ${configs.length} config(s) of topic ${name}\n`);
    return 0;
  });
}

/** DescribeConfigs of one resource: rows of key, value, source. */
export async function describeConfigs(
  client: ClusterClient,
  resourceType: number,
  resourceName: string,
  nodeId: number | null = null,
) {
  const response = await client.request(
    ApiKey.DescribeConfigs,
    { resources: [{ resourceType, resourceName, configurationKeys: null }] },
    nodeId,
  );
  const r = response.results[0]!;
  check(r.errorCode, `describing configs of "${resourceName}"`, r.errorMessage);
  return r.configs
    .map((c) => ({
      key: c.name,
      value: c.isSensitive ? "(sensitive)" : c.value,
      source: CONFIG_SOURCES[c.configSource] ?? String(c.configSource),
      readOnly: c.readOnly,
    }))
    .sort((a, b) => a.key.localeCompare(b.key));
}

export async function topicDescribeConfig(args: CommandArgs): Promise<number> {
  const [name] = args.expect(["TOPIC"]);
  return withClient(args, async (client) => {
    const all = await describeConfigs(client, TOPIC_RESOURCE, name);
    const rows = args.has("--all") ? all : all.filter((c) => c.source !== "DEFAULT");
    if (outputFormat(args) === "json") printJson(rows);
    else
      printTable(
        ["KEY", "VALUE", "SOURCE"],
        rows.map((c) => [c.key, c.value, c.source]),
      );
    return 0;
  });
}
