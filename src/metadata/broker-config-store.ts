/**
 * Where dynamic broker configs are kept. In a cluster: Kafka's znodes, `/config/brokers/<id>`
 * and `/config/brokers/<default>` (`{"version":1,"config":{..}}`), each write followed by a
 * `/config/changes/config_change_<seq>` notification as Kafka's AdminZkClient writes one, so
 * Kafka's tooling and brokers reading the layout see the change. Each broker follows the two
 * znodes it depends on with data watches, which also catch writers that send no notification.
 * Notifications older than 15 minutes are deleted by the next writer (Kafka's brokers purge
 * them after the same delay), so `/config/changes` stays bounded.
 *
 * Embedded mode: `dynamic-broker-configs.json` in the first log dir, replaced atomically, so a
 * change made with kafka-configs.sh survives a restart as it does in Kafka.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../util/logger.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import { NoNodeError } from "../zookeeper/zookeeper-errors.ts";
import {
  brokerConfigPath,
  CONFIG_BROKERS_PATH,
  CONFIG_CHANGE_PREFIX,
  CONFIG_CHANGES_PATH,
  DEFAULT_CONFIG_ENTITY,
  decodeEntityConfig,
  encodeConfigChange,
  encodeEntityConfig,
} from "./kafka-znodes.ts";

export { DEFAULT_CONFIG_ENTITY };

/** Kafka's ZkConfigManager change expiration: notifications older than this are deleted. */
export const CONFIG_CHANGE_EXPIRATION_MS = 15 * 60 * 1000;
/** Pause before reading a watched znode again after ZooKeeper failed to answer. */
const RETRY_MS = 1_000;

export type EntityConfigs = ReadonlyMap<string, string>;

export interface BrokerConfigStore {
  /** The stored configs of one entity (a broker id, or DEFAULT_CONFIG_ENTITY); empty if none. */
  read(entity: string): Promise<EntityConfigs>;
  /** Replaces the entity's configs (an empty map removes them) and tells the other brokers. */
  write(entity: string, configs: EntityConfigs): Promise<void>;
  /**
   * Calls `onChange` with an entity's configs whenever another writer changes them (and once at
   * the start); returns the function that stops following.
   */
  follow(
    entities: readonly string[],
    onChange: (entity: string, c: EntityConfigs) => void,
  ): () => void;
}

export class ZooKeeperBrokerConfigStore implements BrokerConfigStore {
  constructor(
    private readonly zk: ZooKeeperClient,
    private readonly log: Logger,
  ) {}

  async read(entity: string): Promise<EntityConfigs> {
    try {
      const { data } = await this.zk.getData(brokerConfigPath(entity));
      return new Map(Object.entries(decodeEntityConfig(brokerConfigPath(entity), data)));
    } catch (error) {
      if (error instanceof NoNodeError) return new Map();
      throw error;
    }
  }

  async write(entity: string, configs: EntityConfigs): Promise<void> {
    const path = brokerConfigPath(entity);
    const data = encodeEntityConfig(Object.fromEntries(configs));
    try {
      await this.zk.setData(path, data);
    } catch (error) {
      if (!(error instanceof NoNodeError)) throw error;
      await this.zk.mkdirp(CONFIG_BROKERS_PATH);
      await this.zk.create(path, data);
    }
    await this.zk.create(CONFIG_CHANGE_PREFIX, encodeConfigChange("brokers", entity), {
      mode: "persistent-sequential",
      createParents: true,
    });
    await this.purgeOldNotifications().catch((error: unknown) => {
      this.log.warn(`purging old config change notifications failed: ${String(error)}`);
    });
  }

  private async purgeOldNotifications(): Promise<void> {
    const children = await this.zk.getChildren(CONFIG_CHANGES_PATH);
    const cutoffMs = Date.now() - CONFIG_CHANGE_EXPIRATION_MS;
    for (const child of children) {
      const path = `${CONFIG_CHANGES_PATH}/${child}`;
      const stat = await this.zk.exists(path);
      if (stat !== null && stat.ctimeMs < cutoffMs) {
        await this.zk.delete(path).catch((error: unknown) => {
          if (!(error instanceof NoNodeError)) throw error;
        });
      }
    }
  }

  follow(
    entities: readonly string[],
    onChange: (entity: string, c: EntityConfigs) => void,
  ): () => void {
    let stopped = false;
    const readAndWatch = (entity: string): void => {
      if (stopped) return;
      const path = brokerConfigPath(entity);
      const again = () => readAndWatch(entity);
      this.watchOnce(path, again)
        .then((configs) => {
          if (!stopped) onChange(entity, configs);
        })
        .catch((error: unknown) => {
          this.log.warn(`reading ${path} failed, retrying: ${String(error)}`);
          setTimeout(again, RETRY_MS).unref();
        });
    };
    // A new session has none of the old watches: read again and watch anew.
    const unsubscribe = this.zk.onSessionEvent((event) => {
      if (event === "session-recreated") for (const e of entities) readAndWatch(e);
    });
    for (const e of entities) readAndWatch(e);
    return () => {
      stopped = true;
      unsubscribe();
    };
  }

  /** Reads the znode with a data watch, or watches for its creation when it is missing. */
  private async watchOnce(path: string, fired: () => void): Promise<EntityConfigs> {
    try {
      const { data } = await this.zk.getData(path, { watch: fired });
      return new Map(Object.entries(decodeEntityConfig(path, data)));
    } catch (error) {
      if (!(error instanceof NoNodeError)) throw error;
      const stat = await this.zk.exists(path, { watch: fired });
      // Created between the two reads: the exists watch will not fire for it, so read again.
      if (stat !== null) return this.watchOnceAfterCreate(path);
      return new Map();
    }
  }

  private async watchOnceAfterCreate(path: string): Promise<EntityConfigs> {
    const { data } = await this.zk.getData(path);
    return new Map(Object.entries(decodeEntityConfig(path, data)));
  }
}

/** Embedded mode's store: one JSON file of every entity's configs, replaced atomically. */
export class LocalBrokerConfigStore implements BrokerConfigStore {
  private readonly file: string;
  private readonly all: Map<string, Record<string, string>>;

  constructor(logDir: string) {
    this.file = join(logDir, "dynamic-broker-configs.json");
    const text = existsSync(this.file) ? readFileSync(this.file, "utf8") : "{}";
    this.all = new Map(Object.entries(JSON.parse(text) as Record<string, Record<string, string>>));
  }

  async read(entity: string): Promise<EntityConfigs> {
    return new Map(Object.entries(this.all.get(entity) ?? {}));
  }

  async write(entity: string, configs: EntityConfigs): Promise<void> {
    if (configs.size === 0) this.all.delete(entity);
    else this.all.set(entity, Object.fromEntries(configs));
    const temp = `${this.file}.tmp`;
    writeFileSync(temp, JSON.stringify(Object.fromEntries(this.all), null, 2));
    renameSync(temp, this.file);
  }

  follow(
    entities: readonly string[],
    onChange: (entity: string, c: EntityConfigs) => void,
  ): () => void {
    // One broker, one writer: its own writes are applied by the writer, so only the start.
    for (const e of entities) onChange(e, new Map(Object.entries(this.all.get(e) ?? {})));
    return () => {};
  }
}
