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
import { childrenOrNone, lastSequence, sequenceOf } from "../zookeeper/sequential-children.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import { NoNodeError } from "../zookeeper/zookeeper-errors.ts";
import {
  CONFIG_CHANGE_PREFIX,
  CONFIG_CHANGES_PATH,
  DEFAULT_CONFIG_ENTITY,
  decodeEntityConfig,
  encodeEntityConfig,
} from "./kafka-znodes.ts";

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
/** Kafka's brokers delete change notices older than this (ZkConfigManager). */
const CONFIG_CHANGE_EXPIRATION_MS = 15 * 60 * 1000;
/** Pause before reading the change notices again after ZooKeeper failed to answer. */
const RETRY_MS = 1_000;
const CHANGE_NODE = CONFIG_CHANGE_PREFIX.slice(CONFIG_CHANGES_PATH.length + 1);

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
  private lastSeen = -1;

  constructor(
    private readonly zk: ZooKeeperClient,
    private readonly log: Logger,
  ) {}

  async loadAll(): Promise<Map<QuotaEntityPath, EntityConfigs>> {
    // Notices written while loading are read afterwards; reading an entity twice is harmless.
    this.lastSeen = lastSequence(await childrenOrNone(this.zk, CONFIG_CHANGES_PATH), CHANGE_NODE);
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

  async read(path: QuotaEntityPath): Promise<EntityConfigs> {
    try {
      const { data } = await this.zk.getData(`/config/${path}`);
      return decodeEntityConfig(`/config/${path}`, data);
    } catch (error) {
      if (error instanceof NoNodeError) return {};
      throw error;
    }
  }

  async write(path: QuotaEntityPath, configs: EntityConfigs): Promise<void> {
    const data = encodeEntityConfig(configs);
    try {
      await this.zk.setData(`/config/${path}`, data);
    } catch (error) {
      if (!(error instanceof NoNodeError)) throw error;
      await this.zk.create(`/config/${path}`, data, { createParents: true });
    }
    const notice = JSON.stringify({ version: 2, entity_path: path });
    await this.zk.create(CONFIG_CHANGE_PREFIX, new TextEncoder().encode(notice), {
      mode: "persistent-sequential",
      createParents: true,
    });
  }

  follow(changed: (path: QuotaEntityPath, c: EntityConfigs) => void, reload: () => void) {
    let stopped = false;
    const poll = () => {
      if (stopped) return;
      this.processChanges(changed, poll).catch((error: unknown) => {
        this.log.warn(`config change notices not read: ${(error as Error).message}`);
        setTimeout(poll, RETRY_MS).unref();
      });
    };
    const unsubscribe = this.zk.onSessionEvent((event) => {
      if (event !== "session-recreated" || stopped) return;
      reload();
      poll();
    });
    poll();
    return () => {
      stopped = true;
      unsubscribe();
    };
  }

  /** Reads the new notices (re-arming the watch) and re-reads the quota entities they name. */
  private async processChanges(
    changed: (path: QuotaEntityPath, c: EntityConfigs) => void,
    rewatch: () => void,
  ): Promise<void> {
    await this.zk.mkdirp(CONFIG_CHANGES_PATH);
    const children = await this.zk.getChildren(CONFIG_CHANGES_PATH, { watch: rewatch });
    const fresh = children.filter((c) => sequenceOf(c, CHANGE_NODE) > this.lastSeen).sort();
    for (const child of fresh) {
      const path = await this.readNotice(child);
      this.lastSeen = Math.max(this.lastSeen, sequenceOf(child, CHANGE_NODE));
      if (path === null || quotaEntityOf(path) === null) continue;
      changed(path as QuotaEntityPath, await this.read(path as QuotaEntityPath));
    }
  }

  /** The entity path a notice names; null when it is gone or unreadable. */
  private async readNotice(child: string): Promise<string | null> {
    try {
      const path = `${CONFIG_CHANGES_PATH}/${child}`;
      const { data, stat } = await this.zk.getData(path);
      if (Date.now() - stat.ctimeMs > CONFIG_CHANGE_EXPIRATION_MS) {
        await this.zk.delete(path).catch(() => {});
      }
      const json = JSON.parse(new TextDecoder().decode(data)) as { entity_path?: unknown };
      return typeof json.entity_path === "string" ? json.entity_path : null;
    } catch (error) {
      if (error instanceof NoNodeError || error instanceof SyntaxError) return null;
      throw error;
    }
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
