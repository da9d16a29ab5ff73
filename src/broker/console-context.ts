import type { BrokerServices } from "../api/broker-services.ts";
import type { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import type { Partition } from "../server/partition.ts";
import type { Logger } from "../util/logger.ts";
import type { ConsoleHistory } from "./console-history.ts";
import type { LeaderHighWatermarks } from "./leader-high-watermarks.ts";

/** What the console pages read: the running broker, its history and its ZooKeeper state. */
export interface ConsoleContext {
  readonly services: BrokerServices;
  readonly history: ConsoleHistory;
  readonly zooKeeperState: () => string;
  /** Leaders' high watermarks for lag where no replica is here (leader-high-watermarks.ts). */
  readonly leaderHighWatermarks?: LeaderHighWatermarks;
  /** Keys the forms' anti-forgery tokens (console-config-alter.ts); drawn at start. */
  readonly csrfKey: Uint8Array;
  readonly log: Logger;
  /** The logged-in user (`User:ANONYMOUS` without admin authentication) and their address. */
  readonly principal: string;
  readonly host: string;
  /**
   * Whether the logged-in user may do `operation` on the resource, as the broker's authorizer
   * decides for a Kafka client (always, without an authorizer): the console shows through it
   * only what that user could read with a Kafka client.
   */
  readonly allowed: (operation: AclOperation, resourceType: ResourceType, name: string) => boolean;
}

/** The console context for one request of `principal` from `host`. */
export function forUser(
  base: Omit<ConsoleContext, "allowed" | "principal" | "host">,
  principal: string,
  host: string,
): ConsoleContext {
  const authorizer = base.services.authorizer;
  const allowed =
    authorizer === null
      ? () => true
      : (operation: AclOperation, resourceType: ResourceType, name: string) =>
          authorizer.authorize(principal, host, operation, resourceType, name);
  return { ...base, principal, host, allowed };
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
