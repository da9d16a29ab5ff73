/**
 * Kafka's change-notice znodes (`/config/changes/config_change_…`,
 * `/kafka-acl-changes/acl_changes_…`) are sequential children: their name is a prefix and
 * ZooKeeper's ten-digit counter. Watchers keep the highest counter they have applied and, on each
 * watch, apply only the children above it.
 */
import type { ZooKeeperClient } from "./zookeeper-client.ts";
import { NoNodeError } from "./zookeeper-errors.ts";

/** The counter of a sequential child named `<prefix><counter>`; -1 for any other name. */
export function sequenceOf(child: string, prefix: string): number {
  return child.startsWith(prefix) ? Number(child.slice(prefix.length)) : -1;
}

/** The highest counter among the children carrying the prefix; -1 when none does. */
export function lastSequence(children: readonly string[], prefix: string): number {
  return children.reduce((max, c) => Math.max(max, sequenceOf(c, prefix)), -1);
}

/** The children of a znode, none when the znode does not exist (yet). */
export async function childrenOrNone(zk: ZooKeeperClient, path: string): Promise<string[]> {
  try {
    return await zk.getChildren(path);
  } catch (error) {
    if (error instanceof NoNodeError) return [];
    throw error;
  }
}
