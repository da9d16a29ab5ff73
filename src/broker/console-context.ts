import type { BrokerServices } from "../api/broker-services.ts";
import type { Partition } from "../server/partition.ts";
import type { ConsoleHistory } from "./console-history.ts";

/** What the console pages read: the running broker, its history and its ZooKeeper state. */
export interface ConsoleContext {
  readonly services: BrokerServices;
  readonly history: ConsoleHistory;
  readonly zooKeeperState: () => string;
}

/** This broker's replica of each partition, by topic. */
export function localPartitions(ctx: ConsoleContext): Map<string, Map<number, Partition>> {
  const byTopic = new Map<string, Map<number, Partition>>();
  for (const p of ctx.services.replicaManager.hostedPartitions()) {
    let m = byTopic.get(p.topic);
    if (m === undefined) byTopic.set(p.topic, (m = new Map()));
    m.set(p.partition, p);
  }
  return byTopic;
}

export function configText(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "object")
    return JSON.stringify(value, (_, v) => (typeof v === "bigint" ? String(v) : v));
  return String(value);
}
