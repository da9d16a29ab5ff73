/**
 * Where SCRAM credentials live: Kafka's `/config/users/<user>` znodes in ZooKeeper mode (so
 * credentials made by Kafka's own tools work), a file in the first log dir in embedded mode.
 * Each holds, per user, per mechanism, Kafka's text form of the salted credential.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { desanitize, sanitize } from "../zookeeper/kafka-sanitizer.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import { NoNodeError } from "../zookeeper/zookeeper-errors.ts";
import {
  formatScramCredential,
  parseScramCredential,
  type ScramCredential,
  type ScramMechanism,
} from "./scram.ts";

export interface ScramCredentialStore {
  get(user: string, mechanism: ScramMechanism): Promise<ScramCredential | undefined>;
  /** Every mechanism of `user` that has a credential, with its iterations. */
  describe(user: string): Promise<{ mechanism: ScramMechanism; iterations: number }[]>;
  users(): Promise<string[]>;
  set(user: string, mechanism: ScramMechanism, credential: ScramCredential): Promise<void>;
  /** False when there was nothing to delete. */
  delete(user: string, mechanism: ScramMechanism): Promise<boolean>;
}

type UserConfigs = Record<string, string>;

/** Most users a local store keeps. */
const LOCAL_USERS_MAX = 100_000;
const MECHANISMS: readonly ScramMechanism[] = ["SCRAM-SHA-256", "SCRAM-SHA-512"];

abstract class ConfigBackedStore implements ScramCredentialStore {
  protected abstract read(user: string): Promise<UserConfigs | undefined>;
  protected abstract write(user: string, configs: UserConfigs): Promise<void>;
  abstract users(): Promise<string[]>;

  async get(user: string, mechanism: ScramMechanism) {
    const text = (await this.read(user))?.[mechanism];
    return text === undefined ? undefined : (parseScramCredential(text) ?? undefined);
  }

  async describe(user: string) {
    const configs = (await this.read(user)) ?? {};
    return MECHANISMS.flatMap((mechanism) => {
      const c = configs[mechanism] === undefined ? null : parseScramCredential(configs[mechanism]);
      return c === null ? [] : [{ mechanism, iterations: c.iterations }];
    });
  }

  async set(user: string, mechanism: ScramMechanism, credential: ScramCredential) {
    const configs = { ...((await this.read(user)) ?? {}) };
    configs[mechanism] = formatScramCredential(credential);
    await this.write(user, configs);
  }

  async delete(user: string, mechanism: ScramMechanism) {
    const configs = { ...((await this.read(user)) ?? {}) };
    if (configs[mechanism] === undefined) return false;
    delete configs[mechanism];
    await this.write(user, configs);
    return true;
  }
}

/** Kafka's layout: `{"version":1,"config":{"SCRAM-SHA-512":"salt=…"}}`; quotas share it. */
export class ZooKeeperScramCredentialStore extends ConfigBackedStore {
  constructor(private readonly zk: ZooKeeperClient) {
    super();
  }

  private path = (user: string) => `/config/users/${sanitize(user)}`;

  protected async read(user: string): Promise<UserConfigs | undefined> {
    try {
      const { data } = await this.zk.getData(this.path(user));
      const json = JSON.parse(new TextDecoder().decode(data)) as { config?: UserConfigs };
      return json.config ?? {};
    } catch (error) {
      if (error instanceof NoNodeError) return undefined;
      throw error;
    }
  }

  protected async write(user: string, configs: UserConfigs): Promise<void> {
    const data = new TextEncoder().encode(JSON.stringify({ version: 1, config: configs }));
    try {
      await this.zk.setData(this.path(user), data);
    } catch (error) {
      if (!(error instanceof NoNodeError)) throw error;
      await this.zk.mkdirp("/config/users");
      await this.zk.create(this.path(user), data);
    }
    // Kafka's brokers learn of a change through a sequential node under /config/changes.
    await this.zk
      .create(
        "/config/changes/config_change_",
        new TextEncoder().encode(
          JSON.stringify({ version: 2, entity_path: `users/${sanitize(user)}` }),
        ),
        { mode: "persistent-sequential", createParents: true },
      )
      .catch(() => {});
  }

  async users(): Promise<string[]> {
    try {
      return (await this.zk.getChildren("/config/users")).map(desanitize);
    } catch (error) {
      if (error instanceof NoNodeError) return [];
      throw error;
    }
  }
}

/** `scram-credentials.json` in the first log dir, replaced atomically on every change. */
export class LocalScramCredentialStore extends ConfigBackedStore {
  private readonly file: string;
  private readonly all: Map<string, UserConfigs>;

  constructor(logDir: string) {
    super();
    this.file = join(logDir, "scram-credentials.json");
    const text = existsSync(this.file) ? readFileSync(this.file, "utf8") : "{}";
    this.all = new Map(Object.entries(JSON.parse(text) as Record<string, UserConfigs>));
  }

  protected async read(user: string) {
    return this.all.get(user);
  }

  protected async write(user: string, configs: UserConfigs) {
    if (!this.all.has(user) && this.all.size >= LOCAL_USERS_MAX) {
      throw new Error(`more than ${LOCAL_USERS_MAX} SCRAM users`);
    }
    if (Object.keys(configs).length === 0) this.all.delete(user);
    else this.all.set(user, configs);
    const temp = `${this.file}.tmp`;
    writeFileSync(temp, JSON.stringify(Object.fromEntries(this.all)));
    renameSync(temp, this.file);
  }

  async users() {
    return [...this.all.keys()];
  }
}
