/**
 * Topic metadata kept in ZooKeeper in Kafka's layout (see kafka-znodes.ts), for cluster mode.
 *
 * Reads come from an in-memory copy, because MetadataStore's reads are synchronous and Metadata
 * requests must not wait for ZooKeeper. The copy follows ZooKeeper through watches on
 * `/brokers/topics` (children), on each topic's znode and on each `/config/topics/<topic>`, so
 * topics created, changed or deleted by another process (another broker, an operator's tool, a
 * test writing znodes) appear here; `onChange` listeners hear about those outside changes.
 *
 * A topic counts as deleted only when its deletion is seen happen (a watch fires, a marker is
 * processed) or its id changes. Topics merely missing after a new session (ZooKeeper restored
 * from an old snapshot, or wiped) leave the copy but are not reported as deleted, so a broker
 * keeps their data, as Kafka's brokers keep logs the controller never told them to delete.
 *
 * Writes are multis conditional on the znode versions last read, so two writers cannot both
 * win. Deletion follows Kafka's protocol: a marker `/admin/delete_topics/<topic>` asks for it.
 * Kafka's controller would then delete the topic; Quill has no controller yet, so the broker
 * that is asked deletes the topic's znodes itself, and every broker also acts on markers that
 * others write (`kafka-topics.sh --zookeeper ... --delete`, or a deletion cut short by a crash).
 *
 * Concurrency: all ZooKeeper work of this store, writes and watch-triggered reloads alike, runs
 * one task at a time in arrival order, so a reload never interleaves with a write.
 */

import { randomBytes } from "node:crypto";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { assert } from "../util/assert.ts";
import type { Logger } from "../util/logger.ts";
import { mapLimit } from "../util/map-limit.ts";
import { retryOnConnectionLoss } from "../zookeeper/retry-on-connection-loss.ts";
import type { ZnodeStat, ZooKeeperOp } from "../zookeeper/znode.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import {
  BadVersionError,
  NodeExistsError,
  NoNodeError,
  NotEmptyError,
  ZooKeeperError,
  ZooKeeperUnavailableError,
} from "../zookeeper/zookeeper-errors.ts";
import {
  CLUSTER_ID_PATH,
  DELETE_TOPICS_PATH,
  decodeClusterId,
  decodeTopicAssignment,
  decodeTopicConfig,
  deleteTopicPath,
  encodeClusterId,
  encodeTopicAssignment,
  isLegalTopicName,
  MalformedZnodeError,
  PERSISTENT_PATHS,
  TOPICS_PATH,
  topicConfigPath,
  topicIdFromBase64,
  topicIdToBase64,
  topicPath,
} from "./kafka-znodes.ts";
import { type MetadataStore, TOPICS_MAX, type TopicRecord } from "./metadata-store.ts";
import {
  chunkOps,
  createTopicOps,
  deleteTopicOps,
  type TopicZnodeVersions,
  updateTopicOps,
} from "./topic-znode-ops.ts";

export interface ZooKeeperMetadataStoreOptions {
  /**
   * Deadline of one write (a CreateTopics, say), its wait for earlier store work and for a
   * connection included; also the deadline of each read.
   */
  readonly requestTimeoutMs: number;
  /** Kafka's delete.topic.enable: whether deletion markers written by others are acted on. */
  readonly deleteTopicEnable: boolean;
  /**
   * A cluster broker's store: the active controller carries out deletions (StopReplica to the
   * replicas first, then the znodes), so this store only writes the marker and waits for the
   * topic to go, and leaves markers to the controller. False: the store deletes the znodes.
   */
  readonly controllerDeletesTopics?: boolean;
  readonly log: Logger;
}

/** How often a deletion left to the controller is checked for completion. */
const DELETION_POLL_MS = 50;

interface CachedTopic extends TopicZnodeVersions {
  readonly record: TopicRecord;
  /** The topic znode holds a reassignment's adding/removing replicas (the controller's). */
  readonly reassigning: boolean;
}

/** What an outside change did; the new state is in `topics()`. */
export interface MetadataChange {
  /** Topics seen deleted (or replaced by a topic of the same name with another id). */
  readonly deletedTopics: readonly string[];
}

/** Pause before retrying a reload that failed because ZooKeeper was unavailable. */
const RETRY_DELAY_MS = 500;
/** Deleting a topic that other brokers delete at the same time converges within a few tries. */
const DELETE_ATTEMPTS_MAX = 5;
/** Topics are read this many at a time when the whole tree is loaded. */
const READ_CONCURRENCY = 256;

export class ZooKeeperMetadataStore implements MetadataStore {
  private cached = new Map<string, CachedTopic>();
  /** Watches currently registered ("children:/path", "data:/path"), so none is set twice. */
  private readonly armed = new Set<string>();
  /** Reload tasks waiting in the queue, by key, so a burst of events queues one reload. */
  private readonly queuedKeys = new Set<string>();
  private readonly retryTimers = new Map<string, ReturnType<typeof setTimeout>>();
  private readonly listeners = new Set<(change: MetadataChange) => void>();
  private queue: Promise<void> = Promise.resolve();
  private closed = false;
  /** Counts new sessions, so work begun in an earlier session can be recognised. */
  private sessionEpoch = 0;
  private readonly unsubscribe: () => void;

  private constructor(
    private readonly zk: ZooKeeperClient,
    readonly clusterId: string,
    private readonly options: ZooKeeperMetadataStoreOptions,
  ) {
    assert(
      options.requestTimeoutMs > 0,
      `requestTimeoutMs ${options.requestTimeoutMs} must be > 0`,
    );
    this.unsubscribe = zk.onSessionEvent((event) => {
      if (event !== "session-recreated") return;
      // A new session has none of the old watches: read everything again and watch anew.
      // Reloads queued in the old session are dropped: what they would find missing was not
      // seen deleted, and loadAll reads it all anyway.
      this.sessionEpoch++;
      this.armed.clear();
      for (const timer of this.retryTimers.values()) clearTimeout(timer);
      this.retryTimers.clear();
      this.schedule("all", () => this.loadAll());
    });
  }

  /**
   * Creates Kafka's top-level paths, reads or creates `/cluster/id`, loads every topic and
   * starts watching. Rejects with ZooKeeperUnavailableError when ZooKeeper does not answer.
   */
  static async open(
    zk: ZooKeeperClient,
    options: ZooKeeperMetadataStoreOptions,
  ): Promise<ZooKeeperMetadataStore> {
    // mkdirp retries a create lost with its connection; so does the cluster id's, which is safe
    // to repeat (a create that was applied is then found and read).
    await Promise.all(PERSISTENT_PATHS.map((path) => zk.mkdirp(path)));
    const clusterId = await retryOnConnectionLoss(
      () => getOrCreateClusterId(zk),
      zk.sessionTimeoutMs,
    );
    const store = new ZooKeeperMetadataStore(zk, clusterId, options);
    try {
      await store.exclusive(() => store.loadAll());
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  topics(): readonly TopicRecord[] {
    return [...this.cached.values()].map((t) => t.record);
  }

  topic(name: string): TopicRecord | undefined {
    return this.cached.get(name)?.record;
  }

  isReassigning(name: string): boolean {
    return this.cached.get(name)?.reassigning ?? false;
  }

  /**
   * Calls `listener` after topics changed in ZooKeeper through someone else (not through this
   * store's own writes). Returns the unsubscribe function.
   */
  onChange(listener: (change: MetadataChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async createTopic(topic: TopicRecord): Promise<void> {
    await this.write(topic.name, async (deadlineMs) => {
      // The caller checked; another process may have created it since.
      if (this.cached.has(topic.name)) {
        throw new KafkaError(
          ErrorCode.TOPIC_ALREADY_EXISTS,
          `Topic '${topic.name}' already exists.`,
        );
      }
      assert(this.cached.size < TOPICS_MAX, `topic limit ${TOPICS_MAX} reached`);
      // A config left by an earlier topic of this name (Kafka deletes it, others may not).
      const config = await this.zk.exists(topicConfigPath(topic.name), {
        timeoutMs: deadlineMs - Date.now(),
      });
      const stats = await this.runOps(createTopicOps(topic, config?.version ?? null), deadlineMs);
      const configVersion = stats.get(topicConfigPath(topic.name))?.version ?? 0;
      this.cached.set(topic.name, {
        record: topic,
        topicVersion: 0,
        configVersion,
        reassigning: false,
      });
    });
    // Reading the new znodes back sets the watches that report others' changes to them.
    this.schedule(`topic:${topic.name}`, () => this.reloadTopic(topic.name));
  }

  async updateTopic(topic: TopicRecord): Promise<void> {
    await this.write(topic.name, async (deadlineMs) => {
      const current = this.cached.get(topic.name);
      checkStillUpdatable(topic, current);
      checkNotReassigning(topic, current);
      const ops = updateTopicOps(current.record, topic, current);
      const stats = await this.runOps(ops, deadlineMs);
      const configWritten = ops.some((op) => op.path === topicConfigPath(topic.name));
      this.cached.set(topic.name, {
        record: topic,
        reassigning: current.reassigning,
        topicVersion: stats.get(topicPath(topic.name))?.version ?? current.topicVersion,
        // A config znode created by this write has version 0 and no setData stat.
        configVersion: configWritten
          ? (stats.get(topicConfigPath(topic.name))?.version ?? 0)
          : current.configVersion,
      });
    });
  }

  /**
   * Marks the topic for deletion (`/admin/delete_topics/<topic>`), then deletes its znodes,
   * its config and the marker. If this broker dies half-way, the marker remains and any broker
   * finishes the deletion.
   */
  async deleteTopic(name: string): Promise<void> {
    const byController = this.options.controllerDeletesTopics === true;
    await this.write(name, async (deadlineMs) => {
      try {
        const timeoutMs = deadlineMs - Date.now();
        await this.zk.create(deleteTopicPath(name), undefined, { timeoutMs });
      } catch (error) {
        if (!(error instanceof NodeExistsError)) throw error;
      }
      if (byController) return;
      await this.deleteTopicZnodes(name, deadlineMs);
      this.cached.delete(name);
    });
    if (!byController) return;
    // Outside the write queue: the controller may take a while (a replica's broker offline).
    await this.awaitTopicGone(name, Date.now() + this.options.requestTimeoutMs);
    this.cached.delete(name);
  }

  /** Waits for the controller to remove the topic's znode; REQUEST_TIMED_OUT at the deadline. */
  private async awaitTopicGone(name: string, deadlineMs: number): Promise<void> {
    while ((await this.zk.exists(topicPath(name), { timeoutMs: this.readTimeoutMs })) !== null) {
      if (Date.now() >= deadlineMs) {
        throw new KafkaError(
          ErrorCode.REQUEST_TIMED_OUT,
          `Topic '${name}' is marked for deletion; the controller has not finished deleting it.`,
        );
      }
      await Bun.sleep(DELETION_POLL_MS);
    }
  }

  /** Stops watching; the ZooKeeper client belongs to the caller and stays open. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    for (const timer of this.retryTimers.values()) clearTimeout(timer);
    this.retryTimers.clear();
    this.listeners.clear();
    await this.queue;
  }

  // ---- writes --------------------------------------------------------------------------------

  /**
   * Runs one write in the queue and turns ZooKeeper's answers into Kafka errors a client can
   * act on. After a failure the topic is read again, since its znodes may differ from the copy.
   */
  private async write(name: string, body: (deadlineMs: number) => Promise<void>): Promise<void> {
    assert(!this.closed, "metadata store is closed");
    const deadlineMs = Date.now() + this.options.requestTimeoutMs;
    try {
      await this.exclusive(() => {
        // Starting now, a write could be applied and still be reported as timed out.
        if (Date.now() >= deadlineMs) {
          throw new ZooKeeperUnavailableError("earlier ZooKeeper work took the whole deadline", {
            op: "write",
            path: topicPath(name),
          });
        }
        return body(deadlineMs);
      });
    } catch (error) {
      if (!(error instanceof ZooKeeperError)) throw error;
      this.schedule(`topic:${name}`, () => this.reloadTopic(name));
      throw toKafkaError(name, error);
    }
  }

  /** Runs the operations as multis in order; returns the stats of the setData operations. */
  private async runOps(
    ops: readonly ZooKeeperOp[],
    deadlineMs: number,
  ): Promise<Map<string, ZnodeStat>> {
    const stats = new Map<string, ZnodeStat>();
    for (const chunk of chunkOps(ops)) {
      const results = await this.zk.multi(chunk, { timeoutMs: deadlineMs - Date.now() });
      results.forEach((result, i) => {
        if (result.type === "setData") stats.set(chunk[i]!.path, result.stat);
      });
    }
    return stats;
  }

  private deleteTopicZnodes(name: string, deadlineMs: number): Promise<void> {
    return deleteTopicZnodes(this.zk, name, deadlineMs);
  }

  // ---- reading and watching ------------------------------------------------------------------

  /** Reads every topic, replacing the copy; also (re)starts watching the deletion markers. */
  private async loadAll(): Promise<void> {
    const names = await this.topicNames();
    const loaded = await mapLimit(names, READ_CONCURRENCY, (name) => this.readTopic(name));
    const next = new Map<string, CachedTopic>();
    for (const topic of loaded) if (topic !== null) next.set(topic.record.name, topic);
    const changed = !sameTopics(this.cached, next);
    const missing = [...this.cached.keys()].filter((name) => !next.has(name));
    if (missing.length > 0) {
      this.options.log.warn(
        `topics no longer in ZooKeeper after a new session, kept ` +
          `on disk but no longer served: ${missing.join(", ")}`,
      );
    }
    const replaced = [...next.values()].filter((t) => {
      const old = this.cached.get(t.record.name);
      return old !== undefined && old.record.topicIdHex !== t.record.topicIdHex;
    });
    this.cached = next;
    if (changed) this.emitChange(replaced.map((t) => t.record.name));
    if (this.options.controllerDeletesTopics !== true) await this.processDeletionMarkers();
  }

  /** The legal topic names under `/brokers/topics`, watching for children to come and go. */
  private async topicNames(): Promise<string[]> {
    const children = await this.watched(
      `children:${TOPICS_PATH}`,
      () => {
        this.schedule("topics", () => this.reloadTopicList());
      },
      (watch) => this.zk.getChildren(TOPICS_PATH, { watch, timeoutMs: this.readTimeoutMs }),
    );
    const legal = children.filter((name) => isLegalTopicName(name)).sort();
    if (legal.length !== children.length) {
      this.options.log.warn(
        `ignoring znodes under ${TOPICS_PATH} that are not legal ` +
          `topic names: ${children.filter((name) => !isLegalTopicName(name)).join(", ")}`,
      );
    }
    if (legal.length > TOPICS_MAX) {
      this.options.log.warn(
        `${legal.length} topics in ZooKeeper; this broker follows ` +
          `only the first ${TOPICS_MAX}`,
      );
    }
    return legal.slice(0, TOPICS_MAX);
  }

  /** Children of `/brokers/topics` changed: read topics that appeared, drop those gone. */
  private async reloadTopicList(): Promise<void> {
    const epoch = this.sessionEpoch;
    const names = new Set(await this.topicNames());
    if (epoch !== this.sessionEpoch) return;
    const deleted = [...this.cached.keys()].filter((name) => !names.has(name));
    for (const name of deleted) this.cached.delete(name);
    const added = [...names].filter((name) => !this.cached.has(name));
    let changed = deleted.length > 0;
    const loaded = await mapLimit(added, READ_CONCURRENCY, (n) => this.readTopic(n));
    for (const topic of loaded) {
      if (topic === null) continue;
      this.cached.set(topic.record.name, topic);
      changed = true;
    }
    if (changed) this.emitChange(deleted);
  }

  /** A topic's znode or config changed: read both again. */
  private async reloadTopic(name: string): Promise<void> {
    const epoch = this.sessionEpoch;
    const before = this.cached.get(name)?.record;
    const after = await this.readTopic(name);
    // Begun in an earlier session: a topic missing now was not seen deleted (loadAll follows).
    if (epoch !== this.sessionEpoch) return;
    if (after === null) this.cached.delete(name);
    else this.cached.set(name, after);
    if (JSON.stringify(before) === JSON.stringify(after?.record)) return;
    const gone = before !== undefined && before.topicIdHex !== after?.record.topicIdHex;
    this.emitChange(gone ? [name] : []);
  }

  /**
   * Reads a topic's assignment and config, watching both; null when it does not exist. The
   * config is read only for a topic that exists, so deleted topics leave no watches behind.
   */
  private async readTopic(name: string): Promise<CachedTopic | null> {
    const topic = await this.readAssignment(name);
    if (topic === null) return null;
    const config = await this.readConfig(name);
    return {
      record: {
        name,
        topicIdHex: topic.topicIdHex,
        assignment: topic.assignment,
        configs: config.configs,
      },
      topicVersion: topic.version,
      configVersion: config.version,
      reassigning: topic.reassigning,
    };
  }

  private async readAssignment(name: string) {
    const path = topicPath(name);
    try {
      const { data, stat } = await this.watched(
        `data:${path}`,
        () => {
          this.schedule(`topic:${name}`, () => this.reloadTopic(name));
        },
        (watch) => this.zk.getData(path, { watch, timeoutMs: this.readTimeoutMs }),
      );
      const znode = decodeTopicAssignment(name, data);
      if (znode.topicIdBase64 === null) {
        return await this.assignTopicId(name, znode.assignment, stat.version);
      }
      // decodeTopicAssignment has checked that the id holds 16 bytes.
      const topicIdHex = topicIdFromBase64(znode.topicIdBase64)!;
      const reassigning =
        znode.addingReplicas !== undefined || znode.removingReplicas !== undefined;
      return { topicIdHex, assignment: znode.assignment, version: stat.version, reassigning };
    } catch (error) {
      if (error instanceof NoNodeError) return null;
      if (!(error instanceof MalformedZnodeError)) throw error;
      this.options.log.warn(`ignoring topic ${name}: ${error.message}`);
      return null;
    }
  }

  /**
   * A topic written without an id (by an old tool, or by hand) gets one, as Kafka's controller
   * gives it, conditionally so that brokers racing to do it agree on one id. Returns null when
   * another writer won; the data watch then brings its version.
   */
  private async assignTopicId(
    name: string,
    assignment: TopicRecord["assignment"],
    version: number,
  ) {
    const topicIdHex = randomBytes(16).toString("hex");
    const data = encodeTopicAssignment({ topicIdBase64: topicIdToBase64(topicIdHex), assignment });
    try {
      const stat = await this.zk.setData(topicPath(name), data, {
        version,
        timeoutMs: this.readTimeoutMs,
      });
      this.options.log.info(`gave topic ${name} the id ${topicIdToBase64(topicIdHex)}`);
      // The rewrite carries no adding/removing replicas (a topic without an id has none).
      return { topicIdHex, assignment, version: stat.version, reassigning: false };
    } catch (error) {
      if (error instanceof BadVersionError || error instanceof NoNodeError) return null;
      throw error;
    }
  }

  /** The topic's overrides; a missing config znode is watched for its creation. */
  private async readConfig(
    name: string,
  ): Promise<{ configs: Record<string, string>; version: number | null }> {
    const path = topicConfigPath(name);
    const onEvent = () => this.schedule(`topic:${name}`, () => this.reloadTopic(name));
    const stat = await this.watched(`exists:${path}`, onEvent, (watch) => {
      return this.zk.exists(path, { watch, timeoutMs: this.readTimeoutMs });
    });
    if (stat === null) return { configs: {}, version: null };
    try {
      const { data, stat: current } = await this.zk.getData(path, {
        timeoutMs: this.readTimeoutMs,
      });
      return { configs: decodeTopicConfig(name, data), version: current.version };
    } catch (error) {
      if (error instanceof NoNodeError) return { configs: {}, version: null };
      if (!(error instanceof MalformedZnodeError)) throw error;
      this.options.log.warn(`ignoring the config of topic ${name}: ${error.message}`);
      return { configs: {}, version: stat.version };
    }
  }

  /**
   * Acts on `/admin/delete_topics/<topic>` markers: deletes each topic (or, with
   * delete.topic.enable=false, only the marker, as Kafka's controller does) and keeps watching.
   */
  private async processDeletionMarkers(): Promise<void> {
    const markers = await this.watched(
      `children:${DELETE_TOPICS_PATH}`,
      () => {
        this.schedule("markers", () => this.processDeletionMarkers());
      },
      (watch) => {
        return this.zk.getChildren(DELETE_TOPICS_PATH, { watch, timeoutMs: this.readTimeoutMs });
      },
    );
    for (const name of markers.filter((m) => isLegalTopicName(m))) {
      const deadlineMs = Date.now() + this.options.requestTimeoutMs;
      if (!this.options.deleteTopicEnable) {
        this.options.log.warn(
          `ignoring the deletion of topic ${name} requested in ` +
            `${DELETE_TOPICS_PATH}: delete.topic.enable is false`,
        );
        await this.zk
          .delete(deleteTopicPath(name), { timeoutMs: this.readTimeoutMs })
          .catch(ignoreNoNode);
        continue;
      }
      this.options.log.info(`deleting topic ${name} as ${deleteTopicPath(name)} asks`);
      await this.deleteTopicZnodes(name, deadlineMs).catch(ignoreNoNode);
      if (this.cached.delete(name)) this.emitChange([name]);
    }
  }

  /**
   * Issues a read with a watch unless the same watch is already registered (ZooKeeper would
   * fire both, and every reload would add another). A failed read registered no watch.
   */
  private async watched<T>(
    key: string,
    onFire: () => void,
    read: (watch: (() => void) | undefined) => Promise<T>,
  ): Promise<T> {
    const watch = this.armed.has(key)
      ? undefined
      : () => {
          this.armed.delete(key);
          if (!this.closed) onFire();
        };
    if (watch !== undefined) this.armed.add(key);
    try {
      return await read(watch);
    } catch (error) {
      if (watch !== undefined) this.armed.delete(key);
      throw error;
    }
  }

  // ---- the task queue ------------------------------------------------------------------------

  private exclusive<T>(task: () => Promise<T>): Promise<T> {
    const result = this.queue.then(task);
    this.queue = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  /**
   * Queues a reload unless one with the same key is already waiting; one that fails because
   * ZooKeeper is unavailable is retried after a pause (the watch that asked for it has fired
   * and will not fire again).
   */
  private schedule(key: string, task: () => Promise<void>): void {
    if (this.closed || this.queuedKeys.has(key)) return;
    this.queuedKeys.add(key);
    const epoch = this.sessionEpoch;
    const current = () => !this.closed && (epoch === this.sessionEpoch || key === "all");
    this.exclusive(() => {
      this.queuedKeys.delete(key);
      return current() ? task() : Promise.resolve();
    }).catch((error: unknown) => {
      if (!current()) return;
      if (!(error instanceof ZooKeeperUnavailableError)) {
        this.options.log.warn(`reading topic metadata (${key}) failed: ${String(error)}`);
      }
      if (this.retryTimers.has(key)) return;
      const timer = setTimeout(() => {
        this.retryTimers.delete(key);
        this.schedule(key, task);
      }, RETRY_DELAY_MS);
      timer.unref();
      this.retryTimers.set(key, timer);
    });
  }

  private get readTimeoutMs(): number {
    return this.options.requestTimeoutMs;
  }

  private emitChange(deletedTopics: readonly string[]): void {
    for (const listener of [...this.listeners]) listener({ deletedTopics });
  }
}

/**
 * Kafka's `getOrGenerateClusterId`: read `/cluster/id`, or create it with a new id; when two
 * brokers race, the create of one fails and it reads the winner's id.
 */
async function getOrCreateClusterId(zk: ZooKeeperClient): Promise<string> {
  try {
    return decodeClusterId((await zk.getData(CLUSTER_ID_PATH)).data);
  } catch (error) {
    if (!(error instanceof NoNodeError)) throw error;
  }
  const clusterId = randomBytes(16).toString("base64url");
  try {
    await zk.create(CLUSTER_ID_PATH, encodeClusterId(clusterId), { createParents: true });
    return clusterId;
  } catch (error) {
    if (!(error instanceof NodeExistsError)) throw error;
    return decodeClusterId((await zk.getData(CLUSTER_ID_PATH)).data);
  }
}

/** What a client can do about a failed write: retry later, or learn that the topic exists. */
function toKafkaError(topic: string, error: ZooKeeperError): KafkaError {
  if (error instanceof ZooKeeperUnavailableError) {
    return new KafkaError(
      ErrorCode.REQUEST_TIMED_OUT,
      `ZooKeeper did not answer in time while changing topic '${topic}'.`,
      { cause: error },
    );
  }
  if (error instanceof NodeExistsError && error.path === topicPath(topic)) {
    return new KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${topic}' already exists.`, {
      cause: error,
    });
  }
  // NOT_CONTROLLER is retriable: clients refresh metadata and send the request again.
  return new KafkaError(
    ErrorCode.NOT_CONTROLLER,
    `Topic '${topic}' changed in ZooKeeper while this broker changed it (${error.message}); ` +
      "retry.",
    { cause: error },
  );
}

/**
 * The caller built `next` from the topic as it was; another process may have deleted the topic
 * since, or replaced it, or grown it: then this update no longer applies.
 */
function checkStillUpdatable(
  next: TopicRecord,
  current: CachedTopic | undefined,
): asserts current is CachedTopic {
  if (current === undefined) {
    throw new KafkaError(
      ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
      `The topic '${next.name}' does not exist.`,
    );
  }
  const replaced = current.record.topicIdHex !== next.topicIdHex;
  if (replaced || current.record.assignment.length > next.assignment.length) {
    throw new KafkaError(
      ErrorCode.NOT_CONTROLLER,
      `Topic '${next.name}' changed in ZooKeeper while this broker changed it; retry.`,
    );
  }
}

/**
 * Kafka refuses to change a topic's partitions while a reassignment of it runs
 * (REASSIGNMENT_IN_PROGRESS): the controller owns the topic znode's adding and removing replicas
 * until the move ends, and a rewrite would drop them.
 */
function checkNotReassigning(next: TopicRecord, current: CachedTopic): void {
  if (!current.reassigning) return;
  if (JSON.stringify(next.assignment) === JSON.stringify(current.record.assignment)) return;
  throw reassignmentInProgress(next.name);
}

/** Kafka's ReassignmentInProgressException for a topic whose partitions may not change now. */
export function reassignmentInProgress(topic: string): KafkaError {
  return new KafkaError(
    ErrorCode.REASSIGNMENT_IN_PROGRESS,
    `A partition reassignment is in progress for the topic '${topic}'.`,
  );
}

function ignoreNoNode(error: unknown): void {
  if (!(error instanceof NoNodeError)) throw error;
}

function sameTopics(a: Map<string, CachedTopic>, b: Map<string, CachedTopic>): boolean {
  if (a.size !== b.size) return false;
  for (const [name, topic] of a) {
    if (JSON.stringify(topic.record) !== JSON.stringify(b.get(name)?.record)) return false;
  }
  return true;
}

/**
 * Deletes what is left of a topic: its subtree, config and marker. Another writer may be
 * deleting the same znodes at once (a store acting on a marker, a controller that lost its
 * place): a multi that fails because a znode vanished or gained a child is retried against a
 * fresh listing, and nothing left to delete is success.
 */
export async function deleteTopicZnodes(
  zk: ZooKeeperClient,
  name: string,
  deadlineMs: number,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      for (const chunk of chunkOps(await topicDeletionOps(zk, name, deadlineMs))) {
        await zk.multi(chunk, { timeoutMs: deadlineMs - Date.now() });
      }
      return;
    } catch (error) {
      const raced = error instanceof NoNodeError || error instanceof NotEmptyError;
      if (!raced || attempt === DELETE_ATTEMPTS_MAX) throw error;
    }
  }
}

async function topicDeletionOps(
  zk: ZooKeeperClient,
  name: string,
  deadlineMs: number,
): Promise<ZooKeeperOp[]> {
  const timeoutMs = () => deadlineMs - Date.now();
  const subtree = await zk.listSubtree(topicPath(name), { timeoutMs: timeoutMs() }).catch((e) => {
    if (e instanceof NoNodeError) return [];
    throw e;
  });
  const [config, marker] = await Promise.all([
    zk.exists(topicConfigPath(name), { timeoutMs: timeoutMs() }),
    zk.exists(deleteTopicPath(name), { timeoutMs: timeoutMs() }),
  ]);
  return deleteTopicOps(name, subtree, config !== null, marker !== null);
}
