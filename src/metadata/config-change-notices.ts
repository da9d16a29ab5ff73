/**
 * Kafka's config change notices in ZooKeeper mode: a writer of an entity's config znode
 * (`/config/users/alice`, `/config/groups/g`) adds `{"version":2,"entity_path":"users/alice"}`
 * as a sequential child of `/config/changes`; every broker watches the children and re-reads the
 * entities named by the notices it has not seen, as Kafka's ZkConfigManager does. Notices older
 * than 15 minutes are deleted by whoever reads them, so `/config/changes` stays bounded.
 */
import type { Logger } from "../util/logger.ts";
import { childrenOrNone, lastSequence, sequenceOf } from "../zookeeper/sequential-children.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import { NoNodeError } from "../zookeeper/zookeeper-errors.ts";
import { CONFIG_CHANGE_PREFIX, CONFIG_CHANGES_PATH } from "./kafka-znodes.ts";

/** Kafka's brokers delete change notices older than this (ZkConfigManager). */
const CONFIG_CHANGE_EXPIRATION_MS = 15 * 60 * 1000;
/** Pause before reading the change notices again after ZooKeeper failed to answer. */
const RETRY_MS = 1_000;
const CHANGE_NODE = CONFIG_CHANGE_PREFIX.slice(CONFIG_CHANGES_PATH.length + 1);

export class ConfigChangeNotices {
  private lastSeen = -1;

  /** `wanted` says which entity paths this follower cares about. */
  constructor(
    private readonly zk: ZooKeeperClient,
    private readonly log: Logger,
    private readonly wanted: (entityPath: string) => boolean,
  ) {}

  /** Marks the notices there now as seen: called before the entities are loaded whole. */
  async skipExisting(): Promise<void> {
    this.lastSeen = lastSequence(await childrenOrNone(this.zk, CONFIG_CHANGES_PATH), CHANGE_NODE);
  }

  /** Tells every broker that the entity's config znode changed. */
  async notify(entityPath: string): Promise<void> {
    const notice = JSON.stringify({ version: 2, entity_path: entityPath });
    await this.zk.create(CONFIG_CHANGE_PREFIX, new TextEncoder().encode(notice), {
      mode: "persistent-sequential",
      createParents: true,
    });
  }

  /**
   * Calls `changed` for each wanted entity a new notice names, and `reload` when every entity
   * must be read again (a new ZooKeeper session). Returns the function that stops following.
   */
  follow(changed: (entityPath: string) => Promise<void>, reload: () => void): () => void {
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

  /** Reads the new notices (re-arming the watch) and hands on the entities they name. */
  private async processChanges(
    changed: (entityPath: string) => Promise<void>,
    rewatch: () => void,
  ): Promise<void> {
    await this.zk.mkdirp(CONFIG_CHANGES_PATH);
    const children = await this.zk.getChildren(CONFIG_CHANGES_PATH, { watch: rewatch });
    const fresh = children.filter((c) => sequenceOf(c, CHANGE_NODE) > this.lastSeen).sort();
    for (const child of fresh) {
      const path = await this.readNotice(child);
      this.lastSeen = Math.max(this.lastSeen, sequenceOf(child, CHANGE_NODE));
      if (path === null || !this.wanted(path)) continue;
      await changed(path);
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
