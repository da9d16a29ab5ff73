/**
 * Where client quotas live, as Kafka 3.9 in ZooKeeper mode keeps them: each quota entity is the
 * config znode Kafka's ConfigCommand and AlterClientQuotas write, `/config/users/<user>`,
 * `/config/users/<user>/clients/<client-id>` or `/config/clients/<client-id>` (names sanitized
 * as Kafka's `Sanitizer`, `<default>` for a default), holding
 * `{"version":1,"config":{"producer_byte_rate":"1024"}}` beside any SCRAM credentials of the
 * user. Every write adds `{"version":2,"entity_path":"users/alice"}` under `/config/changes`;
 * every broker follows those notices and re-reads the entity named, as Kafka's
 * DynamicConfigManager does, so a quota set through any broker (or Kafka's tools) applies on
 * all of them.
 *
 * Embedded mode: `client-quotas.json` in the first log dir, entity path to configs, replaced
 * atomically (write, fdatasync, rename) on every change.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomically } from "../storage/durable-file.ts";
import type { Logger } from "../util/logger.ts";
import { desanitize, sanitize } from "../zookeeper/kafka-sanitizer.ts";
import { childrenOrNone } from "../zookeeper/sequential-children.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import { ConfigChangeNotices } from "./config-change-notices.ts";
import { readEntityConfig, writeEntityConfig } from "./entity-config-znode.ts";
import { DEFAULT_CONFIG_ENTITY } from "./kafka-znodes.ts";

/**
 * A quota entity as its config path below `/config`: `users/<u>`, `users/<u>/clients/<c>` or
 * `clients/<c>`, each name sanitized or `<default>`. Sanitized names hold no `/` or `<`, so
 * the path names one entity.
 */
export type QuotaEntityPath = string & { readonly __brand: "QuotaEntityPath" };

/** A user or client-id of an entity: a name, or null for `<default>`. */
export interface QuotaEntity {
  /** Absent: the entity has no user part. */
  readonly user?: string | null;
  readonly clientId?: string | null;
}

/** Most quota entities a local store keeps (ZooKeeper mode is bounded by ZooKeeper). */
const LOCAL_ENTITIES_MAX = 100_000;

const part = (name: string | null) => (name === null ? DEFAULT_CONFIG_ENTITY : sanitize(name));
const unpart = (name: string) => (name === DEFAULT_CONFIG_ENTITY ? null : desanitize(name));

/** The config path of an entity with a user, a client-id or both; null for neither. */
export function quotaEntityPath(entity: QuotaEntity): QuotaEntityPath | null {
  const { user, clientId } = entity;
  if (user !== undefined && clientId !== undefined) {
    return `users/${part(user)}/clients/${part(clientId)}` as QuotaEntityPath;
  }
  if (user !== undefined) return `users/${part(user)}` as QuotaEntityPath;
  if (clientId !== undefined) return `clients/${part(clientId)}` as QuotaEntityPath;
  return null;
}

/** The entity a config path names, or null when the path is not a quota entity's. */
export function quotaEntityOf(path: string): QuotaEntity | null {
  const p = path.split("/");
  if (p.length === 2 && p[0] === "users") return { user: unpart(p[1]!) };
  if (p.length === 2 && p[0] === "clients") return { clientId: unpart(p[1]!) };
  if (p.length === 4 && p[0] === "users" && p[2] === "clients") {
    return { user: unpart(p[1]!), clientId: unpart(p[3]!) };
  }
  return null;
}

export type EntityConfigs = Readonly<Record<string, string>>;

export interface ClientQuotaStore {
  /** Every quota entity's configs (all of its keys: a user's may hold SCRAM credentials). */
  loadAll(): Promise<Map<QuotaEntityPath, EntityConfigs>>;
  read(path: QuotaEntityPath): Promise<EntityConfigs>;
  /** Replaces the entity's configs and tells every broker. */
  write(path: QuotaEntityPath, configs: EntityConfigs): Promise<void>;
  /**
   * Calls `changed` with an entity's configs whenever another writer changes them, and
   * `reload` when every entity must be read again (a new ZooKeeper session). Returns the
   * function that stops following.
   */
  follow(
    changed: (path: QuotaEntityPath, c: EntityConfigs) => void,
    reload: () => void,
  ): () => void;
}

/** Kafka's znodes and `/config/changes` notices (see the top of this file). */
export class ZooKeeperClientQuotaStore implements ClientQuotaStore {
  private readonly notices: ConfigChangeNotices;

  constructor(
    private readonly zk: ZooKeeperClient,
    log: Logger,
  ) {
    this.notices = new ConfigChangeNotices(zk, log, (path) => quotaEntityOf(path) !== null);
  }

  async loadAll(): Promise<Map<QuotaEntityPath, EntityConfigs>> {
    // Notices written while loading are read afterwards; reading an entity twice is harmless.
    await this.notices.skipExisting();
    const paths: string[] = [];
    for (const user of await childrenOrNone(this.zk, "/config/users")) {
      paths.push(`users/${user}`);
      for (const c of await childrenOrNone(this.zk, `/config/users/${user}/clients`)) {
        paths.push(`users/${user}/clients/${c}`);
      }
    }
    for (const c of await childrenOrNone(this.zk, "/config/clients")) paths.push(`clients/${c}`);
    const all = new Map<QuotaEntityPath, EntityConfigs>();
    for (const path of paths) {
      const configs = await this.read(path as QuotaEntityPath);
      if (Object.keys(configs).length > 0) all.set(path as QuotaEntityPath, configs);
    }
    return all;
  }

  read(path: QuotaEntityPath): Promise<EntityConfigs> {
    return readEntityConfig(this.zk, `/config/${path}`);
  }

  async write(path: QuotaEntityPath, configs: EntityConfigs): Promise<void> {
    await writeEntityConfig(this.zk, `/config/${path}`, configs);
    await this.notices.notify(path);
  }

  follow(changed: (path: QuotaEntityPath, c: EntityConfigs) => void, reload: () => void) {
    return this.notices.follow(async (path) => {
      changed(path as QuotaEntityPath, await this.read(path as QuotaEntityPath));
    }, reload);
  }
}

/** `client-quotas.json` in the first log dir; only this broker writes it. */
export class LocalClientQuotaStore implements ClientQuotaStore {
  private readonly file: string;
  private readonly all: Map<QuotaEntityPath, EntityConfigs>;

  constructor(logDir: string) {
    this.file = join(logDir, "client-quotas.json");
    const text = existsSync(this.file) ? readFileSync(this.file, "utf8") : "{}";
    const parsed = JSON.parse(text) as Record<string, EntityConfigs>;
    this.all = new Map(Object.entries(parsed) as [QuotaEntityPath, EntityConfigs][]);
  }

  async loadAll() {
    return new Map(this.all);
  }

  async read(path: QuotaEntityPath) {
    return this.all.get(path) ?? {};
  }

  async write(path: QuotaEntityPath, configs: EntityConfigs) {
    const empty = Object.keys(configs).length === 0;
    if (!empty && !this.all.has(path) && this.all.size >= LOCAL_ENTITIES_MAX) {
      throw new Error(`more than ${LOCAL_ENTITIES_MAX} client quota entities`);
    }
    if (empty) this.all.delete(path);
    else this.all.set(path, configs);
    const text = JSON.stringify(Object.fromEntries(this.all), null, 1);
    writeFileAtomically(this.file, new TextEncoder().encode(text));
  }

  /** The broker applies its own writes as it makes them. */
  follow() {
    return () => {};
  }
}
