/**
 * `quill cluster info|health|config`: brokers, controller and cluster id from Metadata;
 * health adds under-replicated and offline partitions and whether every broker answers;
 * config is a broker's DescribeConfigs.
 */
import { ClusterClient } from "../client/cluster-client.ts";
import { topicsOf } from "../client/partition-offsets.ts";
import type { CommandArgs } from "./command-args.ts";
import { clientConfig, withClient } from "./connection-options.ts";
import { ids, outputFormat, printJson, printTable } from "./output.ts";
import { describeConfigs } from "./topic-admin.ts";

/** Exit code of `cluster health` for a reachable but unhealthy cluster. */
export const EXIT_UNHEALTHY = 5;
const BROKER_RESOURCE = 4;

export async function clusterInfo(args: CommandArgs): Promise<number> {
  args.expect([]);
  return withClient(args, async (client) => {
    const md = await client.metadata(null);
    const topics = topicsOf(md);
    const info = {
      clusterId: md.clusterId,
      controller: md.controllerId,
      brokers: md.brokers
        .map((b) => ({ id: b.nodeId, host: b.host, port: b.port, rack: b.rack }))
        .sort((a, b) => a.id - b.id),
      topics: topics.length,
      partitions: topics.reduce((n, t) => n + t.partitions.length, 0),
    };
    if (outputFormat(args) === "json") {
      printJson(info);
      return 0;
    }
    process.stdout.write(
      `cluster ${info.clusterId}  controller ${info.controller}  ` +
        `topics ${info.topics}  partitions ${info.partitions}\n`,
    );
    printTable(
      ["BROKER", "HOST", "PORT", "RACK", "CONTROLLER"],
      info.brokers.map((b) => [
        b.id,
        b.host,
        b.port,
        b.rack,
        b.id === info.controller ? "yes" : "",
      ]),
    );
    return 0;
  });
}

/** Whether each broker of the metadata accepts a connection and answers ApiVersions. */
async function brokerReachability(
  args: CommandArgs,
  brokers: { nodeId: number; host: string; port: number }[],
) {
  const config = clientConfig(args);
  return Promise.all(
    brokers.map(async (b) => {
      try {
        const c = await ClusterClient.connect({
          ...config,
          bootstrap: [{ host: b.host, port: b.port }],
        });
        c.close();
        return { id: b.nodeId, reachable: true };
      } catch {
        return { id: b.nodeId, reachable: false };
      }
    }),
  );
}

export async function clusterHealth(args: CommandArgs): Promise<number> {
  args.expect([]);
  return withClient(args, async (client) => {
    const md = await client.metadata(null);
    const partitions = topicsOf(md).flatMap((t) => t.partitions);
    const underReplicated = partitions.filter(
      (p) => p.leader >= 0 && p.isr.length < p.replicas.length,
    );
    const offline = partitions.filter((p) => p.leader < 0);
    const brokers = await brokerReachability(args, md.brokers);
    const unreachable = brokers.filter((b) => !b.reachable).map((b) => b.id);
    const healthy =
      underReplicated.length === 0 && offline.length === 0 && unreachable.length === 0;
    const name = (p: { topic: string; partition: number }) => `${p.topic}/${p.partition}`;
    const report = {
      healthy,
      clusterId: md.clusterId,
      controller: md.controllerId,
      brokers: brokers.map((b) => b.id).sort((a, b) => a - b),
      unreachableBrokers: unreachable,
      underReplicatedPartitions: underReplicated.map(name),
      offlinePartitions: offline.map(name),
    };
    if (outputFormat(args) === "json") printJson(report);
    else {
      process.stdout.write(
        `healthy: ${healthy ? "yes" : "no"}\ncontroller: ${md.controllerId}\n` +
          `brokers: ${ids(report.brokers)}\nunreachable brokers: ${ids(unreachable) || "none"}\n` +
          `under-replicated partitions: ${report.underReplicatedPartitions.join(" ") || "none"}\n` +
          `offline partitions: ${report.offlinePartitions.join(" ") || "none"}\n`,
      );
    }
    return healthy ? 0 : EXIT_UNHEALTHY;
  });
}

export async function clusterConfig(args: CommandArgs): Promise<number> {
  args.expect([]);
  return withClient(args, async (client) => {
    const md = await client.metadata([]);
    const broker = args.int(
      "--broker",
      md.controllerId >= 0 ? md.controllerId : md.brokers[0]!.nodeId,
    );
    const all = await describeConfigs(client, BROKER_RESOURCE, String(broker), broker);
    const rows = args.has("--all") ? all : all.filter((c) => c.source !== "DEFAULT");
    if (outputFormat(args) === "json") printJson({ broker, configs: rows });
    else
      printTable(
        ["KEY", "VALUE", "SOURCE"],
        rows.map((c) => [c.key, c.value, c.source]),
      );
    return 0;
  });
}
