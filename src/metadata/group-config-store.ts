/**
 * Where group configs (Kafka 4's GROUP config resource: `consumer.session.timeout.ms`,
 * `share.auto.offset.reset`, ...) live. Kafka 4 keeps them in its KRaft metadata log as
 * ConfigRecords; Quill's metadata is in ZooKeeper, so they take the layout of topic and client
 * configs there: `/config/groups/<group>` (the group id sanitized as Kafka's Sanitizer does for
 * client-ids, since group ids may hold `/`) holding `{"version":1,"config":{...}}`, and every
 * write adds `{"version":2,"entity_path":"groups/<group>"}` under `/config/changes`, which every
 * broker follows, so a config set through any broker applies on all of them.
 *
 * Embedded mode: `group-configs.json` in the first log dir, group id to configs, replaced
 * atomically on every change (a broker that kept share groups' `share.auto.offset.reset` in
 * `share-group-configs.json` has it read from there once).
 */
import { join } from "node:path";
import { readFileIfExists, writeFileAtomically } from "../storage/durable-file.ts";
import type { Logger } from "../util/logger.ts";
import { desanitize, sanitize } from "../zookeeper/kafka-sanitizer.ts";
import { childrenOrNone } from "../zookeeper/sequential-children.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import { ConfigChangeNotices } from "./config-change-notices.ts";
import { readEntityConfig, writeEntityConfig } from "./entity-config-znode.ts";

export type GroupConfigValues = Readonly<Record<string, string>>;

export const CONFIG_GROUPS_PATH = "/config/groups";
/** Groups with configs a local store keeps (ZooKeeper mode is bounded by ZooKeeper). */
const LOCAL_GROUPS_MAX = 100_000;
const FILE_NAME = "group-configs.json";
const OLD_SHARE_FILE_NAME = "share-group-configs.json";

export interface GroupConfigStore {
  /** Every group's configs. */
  loadAll(): Promise<Map<string, GroupConfigValues>>;
  /** Replaces the group's configs (none: removes them) and tells every broker. */
  write(groupId: string, configs: GroupConfigValues): Promise<void>;
  /**
   * Calls `changed` whenever another writer changes a group's configs, and `reload` when all
   * must be read again. Returns the function that stops following.
   */
  follow(changed: (groupId: string, c: GroupConfigValues) => void, reload: () => void): () => void;
}

const GROUP_PREFIX = "groups/";

export class ZooKeeperGroupConfigStore implements GroupConfigStore {
  private readonly notices: ConfigChangeNotices;

  constructor(
    private readonly zk: ZooKeeperClient,
    log: Logger,
  ) {
    const wanted = (path: string) => path.startsWith(GROUP_PREFIX) && !path.includes("/", 7);
    this.notices = new ConfigChangeNotices(zk, log, wanted);
  }

  async loadAll(): Promise<Map<string, GroupConfigValues>> {
    await this.notices.skipExisting();
    const all = new Map<string, GroupConfigValues>();
    for (const child of await childrenOrNone(this.zk, CONFIG_GROUPS_PATH)) {
      const configs = await readEntityConfig(this.zk, `${CONFIG_GROUPS_PATH}/${child}`);
      if (Object.keys(configs).length > 0) all.set(desanitize(child), configs);
    }
    return all;
  }

  async write(groupId: string, configs: GroupConfigValues): Promise<void> {
    await writeEntityConfig(this.zk, `${CONFIG_GROUPS_PATH}/${sanitize(groupId)}`, configs);
    await this.notices.notify(`${GROUP_PREFIX}${sanitize(groupId)}`);
  }

  follow(changed: (groupId: string, c: GroupConfigValues) => void, reload: () => void) {
    return this.notices.follow(async (path) => {
      const child = path.slice(GROUP_PREFIX.length);
      changed(desanitize(child), await readEntityConfig(this.zk, `${CONFIG_GROUPS_PATH}/${child}`));
    }, reload);
  }
}

/** `group-configs.json` in the first log dir; only this broker writes it. */
export class LocalGroupConfigStore implements GroupConfigStore {
  private readonly file: string;
  private readonly all = new Map<string, GroupConfigValues>();

  constructor(logDir: string) {
    this.file = join(logDir, FILE_NAME);
    const bytes = readFileIfExists(this.file);
    if (bytes !== null) {
      const parsed = JSON.parse(new TextDecoder().decode(bytes)) as Record<string, object>;
      for (const [group, configs] of Object.entries(parsed)) {
        this.all.set(group, configs as GroupConfigValues);
      }
      return;
    }
    const old = readFileIfExists(join(logDir, OLD_SHARE_FILE_NAME));
    if (old === null) return;
    const resets = JSON.parse(new TextDecoder().decode(old)) as Record<string, string>;
    for (const [group, reset] of Object.entries(resets)) {
      this.all.set(group, { "share.auto.offset.reset": reset });
    }
  }

  async loadAll() {
    return new Map(this.all);
  }

  async write(groupId: string, configs: GroupConfigValues) {
    const empty = Object.keys(configs).length === 0;
    if (!empty && !this.all.has(groupId) && this.all.size >= LOCAL_GROUPS_MAX) {
      throw new Error(`more than ${LOCAL_GROUPS_MAX} groups with configs`);
    }
    if (empty) this.all.delete(groupId);
    else this.all.set(groupId, configs);
    const text = JSON.stringify(Object.fromEntries(this.all), null, 1);
    writeFileAtomically(this.file, new TextEncoder().encode(text));
  }

  /** The broker applies its own writes as it makes them. */
  follow() {
    return () => {};
  }
}
