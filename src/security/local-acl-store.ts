import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomically } from "../storage/durable-file.ts";
import {
  type AccessControlEntry,
  patternKey,
  RESOURCE_TYPE_NAMES,
  resourceTypeFromName,
} from "./acl.ts";
import {
  type AclStore,
  type AclUpdate,
  decodeEntries,
  encodeEntries,
  type PatternAcls,
  patternTypeFromName,
  patternTypeName,
} from "./acl-store.ts";

/**
 * The embedded broker's ACLs: `acls.json` in the first log dir, beside
 * `scram-credentials.json`. One file replaced atomically (written, fdatasynced, renamed, the
 * directory fsynced) per CreateAcls or DeleteAcls request: ACL changes are rare and the set is
 * bounded by the authorizer, so a whole-file rewrite is simpler than a log and as durable; an
 * acknowledged change survives a crash or power loss. Each pattern's entries are Kafka's znode
 * JSON, so the file reads like the ZooKeeper layout.
 */
export class LocalAclStore implements AclStore {
  private readonly file: string;
  private readonly all = new Map<string, PatternAcls>();

  constructor(logDir: string) {
    this.file = join(logDir, "acls.json");
    if (!existsSync(this.file)) return;
    const json = JSON.parse(readFileSync(this.file, "utf8")) as { resources: ResourceJson[] };
    for (const r of json.resources) {
      const resourceType = resourceTypeFromName(r.resourceType);
      const patternType = patternTypeFromName(r.patternType);
      if (resourceType === undefined || patternType === undefined) continue;
      const pattern = { resourceType, name: r.name, patternType };
      const entries = decodeEntries(new TextEncoder().encode(JSON.stringify(r.acls)));
      this.all.set(patternKey(pattern), { pattern, entries });
    }
  }

  async loadAll(): Promise<PatternAcls[]> {
    return [...this.all.values()];
  }

  async update(updates: readonly AclUpdate[]): Promise<PatternAcls[]> {
    const results = updates.map(({ pattern, change }) => {
      const k = patternKey(pattern);
      const entries: readonly AccessControlEntry[] = change(this.all.get(k)?.entries ?? []);
      if (entries.length === 0) this.all.delete(k);
      else this.all.set(k, { pattern, entries });
      return { pattern, entries };
    });
    const resources: ResourceJson[] = [...this.all.values()].map(({ pattern, entries }) => ({
      resourceType: RESOURCE_TYPE_NAMES[pattern.resourceType],
      patternType: patternTypeName(pattern.patternType),
      name: pattern.name,
      acls: JSON.parse(new TextDecoder().decode(encodeEntries(entries))),
    }));
    writeFileAtomically(
      this.file,
      new TextEncoder().encode(JSON.stringify({ version: 1, resources })),
    );
    return results;
  }

  /** Only this broker changes the file, and it applies its own changes as it makes them. */
  watch(): () => void {
    return () => {};
  }
}

interface ResourceJson {
  resourceType: string;
  patternType: string;
  name: string;
  acls: unknown;
}
