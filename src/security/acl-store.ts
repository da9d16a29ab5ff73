/**
 * Where ACLs live. ZooKeeper mode uses Kafka's ZooKeeper authorizer layout, so Kafka's tools and
 * brokers read and write the same znodes:
 * - `/kafka-acl/<Type>/<name>` (LITERAL) and `/kafka-acl-extended/prefixed/<Type>/<name>`
 *   (PREFIXED), each `{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow",
 *   "operation":"Read","host":"*"}]}`, deleted when its last entry goes;
 * - a change notice per change, a sequential `acl_changes_` child of `/kafka-acl-changes`
 *   (data `TOPIC:name`) or of `/kafka-acl-extended-changes` (JSON with the pattern), which every
 *   broker watches and answers by re-reading that one resource.
 * The embedded broker keeps them in `acls.json` in the first log dir (local-acl-store.ts).
 */

import {
  type AccessControlEntry,
  isConcreteOperation,
  operationFromName,
  operationName,
  PATTERN_LITERAL,
  PATTERN_PREFIXED,
  type PatternType,
  PERMISSION_ALLOW,
  PERMISSION_DENY,
  permissionName,
  type ResourcePattern,
} from "./acl.ts";
import { ResourceType } from "./authorized-operations.ts";

/** One pattern and its entries. */
export interface PatternAcls {
  readonly pattern: ResourcePattern;
  readonly entries: readonly AccessControlEntry[];
}

/** A change to one pattern's entries, computed from what the store holds at write time. */
export interface AclUpdate {
  readonly pattern: ResourcePattern;
  readonly change: (current: readonly AccessControlEntry[]) => AccessControlEntry[];
}

export interface AclStore {
  /** Every pattern that has entries. */
  loadAll(): Promise<PatternAcls[]>;
  /** Applies each update atomically per pattern; answers the patterns' new entries. */
  update(updates: readonly AclUpdate[]): Promise<PatternAcls[]>;
  /**
   * Calls `changed` with a pattern's entries whenever another broker changes them, and
   * `reload` when changes may have been missed (a new ZooKeeper session). Returns the stop.
   */
  watch(changed: (acls: PatternAcls) => void, reload: () => void): () => void;
}

/** Kafka's Java enum names (ResourceType.name(), PatternType.name()), used in change notices. */
export const RESOURCE_TYPE_ENUM_NAMES: Readonly<Record<ResourceType, string>> = {
  [ResourceType.TOPIC]: "TOPIC",
  [ResourceType.GROUP]: "GROUP",
  [ResourceType.CLUSTER]: "CLUSTER",
  [ResourceType.TRANSACTIONAL_ID]: "TRANSACTIONAL_ID",
  [ResourceType.DELEGATION_TOKEN]: "DELEGATION_TOKEN",
  [ResourceType.USER]: "USER",
};

export const patternTypeName = (p: PatternType) => (p === PATTERN_LITERAL ? "LITERAL" : "PREFIXED");
export function patternTypeFromName(name: string): PatternType | undefined {
  const upper = name.toUpperCase();
  if (upper === "LITERAL") return PATTERN_LITERAL;
  return upper === "PREFIXED" ? PATTERN_PREFIXED : undefined;
}

interface EntryJson {
  principal: string;
  permissionType: string;
  operation: string;
  host: string;
}

/** The znode JSON Kafka's AclEntry.toJsonCompatibleMap writes. */
export function encodeEntries(entries: readonly AccessControlEntry[]): Uint8Array {
  const acls: EntryJson[] = entries.map((e) => ({
    principal: e.principal,
    permissionType: permissionName(e.permissionType),
    operation: operationName(e.operation),
    host: e.host,
  }));
  return new TextEncoder().encode(JSON.stringify({ version: 1, acls }));
}

/** Reads Kafka's znode JSON; entries it cannot understand are skipped, as they match nothing. */
export function decodeEntries(bytes: Uint8Array): AccessControlEntry[] {
  if (bytes.length === 0) return [];
  const json = JSON.parse(new TextDecoder().decode(bytes)) as { acls?: EntryJson[] };
  const entries: AccessControlEntry[] = [];
  for (const a of json.acls ?? []) {
    const operation = operationFromName(String(a.operation));
    const permission = String(a.permissionType).toLowerCase();
    if (operation === undefined || !isConcreteOperation(operation)) continue;
    if (permission !== "allow" && permission !== "deny") continue;
    entries.push({
      principal: String(a.principal),
      host: String(a.host),
      operation,
      permissionType: permission === "allow" ? PERMISSION_ALLOW : PERMISSION_DENY,
    });
  }
  return entries;
}
