import type { Logger } from "../util/logger.ts";
import { mapLimit } from "../util/map-limit.ts";
import { childrenOrNone, lastSequence, sequenceOf } from "../zookeeper/sequential-children.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import { BadVersionError, NodeExistsError, NoNodeError } from "../zookeeper/zookeeper-errors.ts";
import {
  type AccessControlEntry,
  PATTERN_LITERAL,
  PATTERN_PREFIXED,
  type PatternType,
  RESOURCE_TYPE_NAMES,
  type ResourcePattern,
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
  RESOURCE_TYPE_ENUM_NAMES,
} from "./acl-store.ts";

const ROOTS: Readonly<Record<PatternType, string>> = {
  [PATTERN_LITERAL]: "/kafka-acl",
  [PATTERN_PREFIXED]: "/kafka-acl-extended/prefixed",
};
const LITERAL_CHANGES = "/kafka-acl-changes";
const EXTENDED_CHANGES = "/kafka-acl-extended-changes";
const CHANGE_PREFIX = "acl_changes_";
/** Kafka deletes change notices older than this (ZkNodeChangeNotificationListener). */
const CHANGE_EXPIRATION_MS = 15 * 60 * 1000;
/** ZooKeeper calls in flight while loading every ACL. */
const LOAD_CONCURRENCY = 32;
const encoder = new TextEncoder();

const pathOf = (p: ResourcePattern) =>
  `${ROOTS[p.patternType]}/${RESOURCE_TYPE_NAMES[p.resourceType]}/${p.name}`;

/** Kafka's ZooKeeper authorizer layout (see acl-store.ts). */
export class ZooKeeperAclStore implements AclStore {
  /** Per change path, the last sequence number processed. */
  private readonly lastSeen = new Map<string, number>();

  constructor(
    private readonly zk: ZooKeeperClient,
    private readonly log: Logger,
  ) {}

  async loadAll(): Promise<PatternAcls[]> {
    // Notices written while loading are re-read afterwards; reading one twice is harmless.
    for (const path of [LITERAL_CHANGES, EXTENDED_CHANGES]) {
      this.lastSeen.set(path, lastSequence(await childrenOrNone(this.zk, path), CHANGE_PREFIX));
    }
    const patterns: ResourcePattern[] = [];
    for (const patternType of [PATTERN_LITERAL, PATTERN_PREFIXED] as const) {
      for (const typeName of await childrenOrNone(this.zk, ROOTS[patternType])) {
        const resourceType = resourceTypeFromName(typeName);
        if (resourceType === undefined) continue;
        const names = await childrenOrNone(this.zk, `${ROOTS[patternType]}/${typeName}`);
        for (const name of names) patterns.push({ resourceType, name, patternType });
      }
    }
    const loaded = await mapLimit(patterns, LOAD_CONCURRENCY, async (pattern) => ({
      pattern,
      entries: (await this.read(pattern)).entries,
    }));
    return loaded.filter((p) => p.entries.length > 0);
  }

  async update(updates: readonly AclUpdate[]): Promise<PatternAcls[]> {
    return await mapLimit(updates, LOAD_CONCURRENCY, async (u) => {
      const entries = await this.updateOne(u);
      await this.notify(u.pattern);
      return { pattern: u.pattern, entries };
    });
  }

  watch(changed: (acls: PatternAcls) => void, reload: () => void): () => void {
    let stopped = false;
    const poll = (path: string) => {
      if (stopped) return;
      this.processChanges(path, changed, () => poll(path)).catch((error) => {
        this.log.warn(`ACL change notices at ${path} not read: ${(error as Error).message}`);
        setTimeout(() => poll(path), 1000).unref();
      });
    };
    const unsubscribe = this.zk.onSessionEvent((event) => {
      if (event !== "session-recreated" || stopped) return;
      reload();
      poll(LITERAL_CHANGES);
      poll(EXTENDED_CHANGES);
    });
    poll(LITERAL_CHANGES);
    poll(EXTENDED_CHANGES);
    return () => {
      stopped = true;
      unsubscribe();
    };
  }

  /** Reads the new notices under `path` (re-arming the watch) and re-reads what they name. */
  private async processChanges(
    path: string,
    changed: (acls: PatternAcls) => void,
    rewatch: () => void,
  ): Promise<void> {
    await this.zk.mkdirp(path);
    const children = await this.zk.getChildren(path, { watch: rewatch });
    const last = this.lastSeen.get(path) ?? -1;
    const fresh = children.filter((c) => sequenceOf(c, CHANGE_PREFIX) > last).sort();
    for (const child of fresh) {
      const pattern = await this.readNotice(path, child);
      this.lastSeen.set(
        path,
        Math.max(this.lastSeen.get(path) ?? -1, sequenceOf(child, CHANGE_PREFIX)),
      );
      if (pattern === null) continue;
      changed({ pattern, entries: (await this.read(pattern)).entries });
    }
  }

  private async readNotice(path: string, child: string): Promise<ResourcePattern | null> {
    try {
      const { data, stat } = await this.zk.getData(`${path}/${child}`);
      if (Date.now() - stat.ctimeMs > CHANGE_EXPIRATION_MS) {
        await this.zk.delete(`${path}/${child}`).catch(() => {});
      }
      const pattern = decodeNotice(path, new TextDecoder().decode(data));
      if (pattern === null) this.log.warn(`Unreadable ACL change notice ${path}/${child}`);
      return pattern;
    } catch (error) {
      if (error instanceof NoNodeError) return null;
      throw error;
    }
  }

  private async updateOne(u: AclUpdate): Promise<readonly AccessControlEntry[]> {
    const path = pathOf(u.pattern);
    for (;;) {
      const { entries, version } = await this.read(u.pattern);
      const next = u.change(entries);
      try {
        if (next.length === 0) {
          if (version >= 0) await this.zk.delete(path, { version });
        } else if (version < 0) {
          await this.zk.create(path, encodeEntries(next), { createParents: true });
        } else {
          await this.zk.setData(path, encodeEntries(next), { version });
        }
        return next;
      } catch (error) {
        // Another broker changed the znode between the read and the write: read it again.
        const raced =
          error instanceof BadVersionError ||
          error instanceof NodeExistsError ||
          error instanceof NoNodeError;
        if (!raced) throw error;
      }
    }
  }

  private async notify(p: ResourcePattern): Promise<void> {
    const literal = p.patternType === PATTERN_LITERAL;
    const data = literal
      ? `${RESOURCE_TYPE_ENUM_NAMES[p.resourceType]}:${p.name}`
      : JSON.stringify({
          version: 1,
          resourceType: RESOURCE_TYPE_ENUM_NAMES[p.resourceType],
          name: p.name,
          patternType: patternTypeName(p.patternType),
        });
    const path = `${literal ? LITERAL_CHANGES : EXTENDED_CHANGES}/${CHANGE_PREFIX}`;
    await this.zk.create(path, encoder.encode(data), {
      mode: "persistent-sequential",
      createParents: true,
    });
  }

  /** The pattern's entries and znode version; version -1 when it has no znode. */
  private async read(p: ResourcePattern) {
    try {
      const { data, stat } = await this.zk.getData(pathOf(p));
      return { entries: decodeEntries(data), version: stat.version };
    } catch (error) {
      if (error instanceof NoNodeError) return { entries: [], version: -1 };
      throw error;
    }
  }
}

/** A notice's pattern: `TOPIC:name` under the literal path, JSON under the extended one. */
function decodeNotice(path: string, text: string): ResourcePattern | null {
  if (path === LITERAL_CHANGES) {
    const colon = text.indexOf(":");
    const resourceType = colon < 0 ? undefined : resourceTypeFromName(text.slice(0, colon));
    if (resourceType === undefined) return null;
    return { resourceType, name: text.slice(colon + 1), patternType: PATTERN_LITERAL };
  }
  try {
    const json = JSON.parse(text) as { resourceType?: string; name?: string; patternType?: string };
    const resourceType = resourceTypeFromName(String(json.resourceType));
    const patternType = patternTypeFromName(String(json.patternType));
    if (resourceType === undefined || patternType === undefined) return null;
    if (typeof json.name !== "string") return null;
    return { resourceType, name: json.name, patternType };
  } catch {
    return null;
  }
}
