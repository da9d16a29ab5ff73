/**
 * Committed offsets in ZooKeeper, in the layout Kafka's ZooKeeper-based consumers used, so tools
 * that read that layout still work:
 *
 *   /consumers/<group>                                    JSON: {"version":1,
 *                                                          "protocolType":"consumer"}
 *   /consumers/<group>/offsets/<topic>/<partition>        the offset in decimal, UTF-8 ("4217")
 *   /consumers/<group>/offsets-meta/<topic>/<partition>   JSON: {"version":1,"offset":"4217",
 *                                                          "leaderEpoch":5,"metadata":"...",
 *                                                          "commitTimestampMs":1700000000000}
 *
 * The offset znode holds nothing but the number because old tools parse its whole content as a
 * long. The rest of a commit lives in a sibling tree that old tools never look at. The JSON
 * repeats the offset: when a tool rewrites an offset znode (a manual reset), the JSON no longer
 * matches it and is ignored, so a stale leader epoch or metadata never sticks to the new offset.
 * Group ids and topic names that are not valid znode names are percent-encoded (znode-name.ts).
 *
 * The group znode's data is what Kafka's group metadata record keeps of an Empty group that
 * clients can see: its protocol type, so that a broker taking the group over after a failover
 * lists and describes it as the previous coordinator did. Kafka's ZooKeeper-era consumers left
 * that znode's data empty; an empty or foreign value reads as "no protocol type".
 *
 * The group's membership (members, generation or epochs, assignments) is one more znode,
 * `/consumers/<group>/membership`, holding the JSON record of group-membership-record.ts.
 *
 * One commit of many partitions is one ZooKeeper round trip: a multi of create-or-setData
 * operations. Choosing create or setData needs to know which znodes exist, so each group keeps
 * an in-memory set of its existing paths, filled by `loadGroup`. If ZooKeeper disagrees (another
 * writer created or deleted znodes) the multi fails with NodeExists or NoNode, nothing is
 * applied, and the commit reloads the group and retries once. Commits of one group may run
 * concurrently: ZooKeeper applies one session's requests in order, and paths a pending commit
 * will create count as existing for the commits behind it.
 *
 * A commit bigger than ZooKeeper's request limit (about 1 MB: only with long metadata strings on
 * hundreds of partitions) is split into several multis, each atomic.
 *
 * Unavailability (ZooKeeper down, no reply before `offsetCommitTimeoutMs`, session expired)
 * becomes KafkaError(COORDINATOR_NOT_AVAILABLE), which clients retry; Kafka's own group
 * coordinator maps a timed-out offset write to the same code.
 */

import { type TopicPartitionKey, topicPartitionKey } from "../common/topic-partition.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { assert } from "../util/assert.ts";
import { mapLimit } from "../util/map-limit.ts";
import type { ZnodeStat, ZooKeeperOp } from "../zookeeper/znode.ts";
import { decodeZnodeName, encodeZnodeName } from "../zookeeper/znode-name.ts";
import {
  estimateMultiBytes,
  MAX_REQUEST_BYTES,
  ZooKeeperClient,
  type ZooKeeperClientOptions,
} from "../zookeeper/zookeeper-client.ts";
import {
  NodeExistsError,
  NoNodeError,
  NotEmptyError,
  ZooKeeperError,
  ZooKeeperUnavailableError,
} from "../zookeeper/zookeeper-errors.ts";
import type { CommittedOffset, OffsetStore, StoredGroupMetadata } from "./offset-store.ts";

export interface ZooKeeperOffsetStoreOptions {
  /**
   * Upper bound on one store operation, waiting for ZooKeeper included (Kafka's
   * offset.commit.timeout.ms).
   */
  readonly offsetCommitTimeoutMs?: number;
  /**
   * Groups whose znode cache is kept; the least recently used beyond this are dropped and
   * reloaded from ZooKeeper on their next commit.
   */
  readonly cachedGroupsMax?: number;
}

/** Kafka's offset.commit.timeout.ms default. */
const DEFAULT_OFFSET_COMMIT_TIMEOUT_MS = 5_000;
const DEFAULT_CACHED_GROUPS_MAX = 10_000;
/** Reads of a group are pipelined, this many requests at a time. */
const READ_CONCURRENCY = 256;
/** Leaves room under ZooKeeper's request limit for the estimate's error. */
const CHUNK_BYTES_MAX = Math.floor(MAX_REQUEST_BYTES * 0.9);
const CONSUMERS_PATH = "/consumers";
const META_FORMAT_VERSION = 1;
const NO_LEADER_EPOCH = -1;

interface MetaRecord {
  readonly version: number;
  readonly offset: string;
  readonly leaderEpoch: number;
  readonly metadata: string | null;
  readonly commitTimestampMs: number;
}

/** What this store knows of one group: which znodes exist, and the offsets they hold. */
interface GroupCache {
  readonly existing: Set<string>;
  readonly offsets: Map<TopicPartitionKey, CommittedOffset>;
  /** Set when an operation failed with an unknown outcome: reload before trusting `existing`. */
  stale: boolean;
}

export class ZooKeeperOffsetStore implements OffsetStore {
  private readonly groups = new Map<string, GroupCache>();
  private readonly loading = new Map<string, Promise<GroupCache>>();
  private readonly timeoutMs: number;
  private readonly cachedGroupsMax: number;
  private closed = false;

  /** Uses `zk` without owning it: `close()` leaves the client open unless `ownsClient` is set. */
  constructor(
    private readonly zk: ZooKeeperClient,
    options: ZooKeeperOffsetStoreOptions = {},
    private readonly ownsClient = false,
  ) {
    this.timeoutMs = options.offsetCommitTimeoutMs ?? DEFAULT_OFFSET_COMMIT_TIMEOUT_MS;
    assert(this.timeoutMs > 0, `offsetCommitTimeoutMs ${this.timeoutMs} must be > 0`);
    this.cachedGroupsMax = options.cachedGroupsMax ?? DEFAULT_CACHED_GROUPS_MAX;
    assert(this.cachedGroupsMax > 0, `cachedGroupsMax ${this.cachedGroupsMax} must be > 0`);
  }

  /** Connects its own client to `host:port[,host:port][/chroot]`; `close()` closes it. */
  static async connect(
    connectString: string,
    clientOptions: ZooKeeperClientOptions,
    options: ZooKeeperOffsetStoreOptions = {},
  ): Promise<ZooKeeperOffsetStore> {
    const zk = await ZooKeeperClient.connect(connectString, clientOptions);
    return new ZooKeeperOffsetStore(zk, options, true);
  }

  async loadGroup(groupId: string): Promise<Map<TopicPartitionKey, CommittedOffset>> {
    const cache = await this.guard(() => this.reload(groupId, this.deadline()));
    return new Map(cache.offsets);
  }

  async commit(
    groupId: string,
    offsets: readonly { topic: string; partition: number; committed: CommittedOffset }[],
  ): Promise<void> {
    if (offsets.length === 0) return;
    const deadlineMs = this.deadline();
    await this.guard(async () => {
      const cache = await this.cached(groupId, deadlineMs);
      await this.retryOnceOnTreeChange(groupId, cache, deadlineMs, (current) => {
        return this.commitOnce(groupId, current, offsets, deadlineMs);
      });
    });
  }

  async deleteOffsets(
    groupId: string,
    partitions: readonly { topic: string; partition: number }[],
  ): Promise<void> {
    if (partitions.length === 0) return;
    const deadlineMs = this.deadline();
    await this.guard(async () => {
      const cache = await this.cached(groupId, deadlineMs);
      await this.retryOnceOnTreeChange(groupId, cache, deadlineMs, (current) => {
        return this.deleteOnce(groupId, current, partitions, deadlineMs);
      });
    });
  }

  /** Removes the group's whole subtree, old consumers' `ids` and `owners` included. */
  async deleteGroup(groupId: string): Promise<void> {
    const deadlineMs = this.deadline();
    const root = groupPath(groupId);
    this.groups.delete(groupId);
    await this.guard(async () => {
      try {
        await this.deleteTree(root, deadlineMs);
      } catch (error) {
        if (!(error instanceof NoNodeError || error instanceof NotEmptyError)) throw error;
        // Something changed the tree while it was being listed: list it again, once.
        await this.deleteTree(root, deadlineMs);
      }
    });
  }

  async storeGroupMetadata(groupId: string, metadata: StoredGroupMetadata): Promise<void> {
    if (metadata.protocolType === null) return;
    const data = encodeGroupRecord(metadata.protocolType);
    const deadlineMs = this.deadline();
    await this.guard(async () => {
      const cache = await this.cached(groupId, deadlineMs);
      await this.retryOnceOnTreeChange(groupId, cache, deadlineMs, async (current) => {
        const ops: ZooKeeperOp[] = [];
        ensureOp(current.existing, ops, CONSUMERS_PATH);
        ensureOp(current.existing, ops, groupPath(groupId), data);
        await this.zk.multi(ops, { timeoutMs: deadlineMs - Date.now() });
      });
    });
  }

  async storeMembership(groupId: string, record: Uint8Array | null): Promise<void> {
    const deadlineMs = this.deadline();
    await this.guard(async () => {
      const cache = await this.cached(groupId, deadlineMs);
      await this.retryOnceOnTreeChange(groupId, cache, deadlineMs, async (current) => {
        const path = membershipPath(groupId);
        const ops: ZooKeeperOp[] = [];
        if (record === null) {
          if (!current.existing.has(path)) return;
          ops.push({ type: "delete", path });
          current.existing.delete(path);
        } else {
          ensureOp(current.existing, ops, CONSUMERS_PATH);
          ensureOp(current.existing, ops, groupPath(groupId));
          ensureOp(current.existing, ops, path, record);
        }
        await this.zk.multi(ops, { timeoutMs: deadlineMs - Date.now() });
      });
    });
  }

  async loadMembership(groupId: string): Promise<Uint8Array | null> {
    const deadlineMs = this.deadline();
    return this.guard(async () => {
      await this.catchUp(deadlineMs);
      const options = { timeoutMs: deadlineMs - Date.now() };
      const node = await this.zk.getData(membershipPath(groupId), options).catch(nullOnNoNode);
      return node?.data ?? null;
    });
  }

  /** The group znode's metadata, for a group with a topic under `offsets` (as listGroups). */
  async describeStoredGroup(groupId: string): Promise<StoredGroupMetadata | null> {
    const deadlineMs = this.deadline();
    return this.guard(async () => {
      const root = groupPath(groupId);
      await this.catchUp(deadlineMs);
      const [node, topics] = await Promise.all([
        this.zk.getData(root, { timeoutMs: deadlineMs - Date.now() }).catch(nullOnNoNode),
        this.childrenOrEmpty(`${root}/offsets`, deadlineMs),
      ]);
      if (node === null || topics.length === 0) return null;
      return { protocolType: parseGroupRecord(node.data) };
    });
  }

  /** Groups with at least one topic under `/consumers/<group>/offsets`. */
  async listGroups(): Promise<string[]> {
    const deadlineMs = this.deadline();
    return this.guard(async () => {
      await this.catchUp(deadlineMs);
      const names = await this.childrenOrEmpty(CONSUMERS_PATH, deadlineMs);
      const topicLists = await mapLimit(names, READ_CONCURRENCY, (name) => {
        return this.childrenOrEmpty(`${CONSUMERS_PATH}/${name}/offsets`, deadlineMs);
      });
      return names.filter((_, i) => topicLists[i].length > 0).map(decodeZnodeName);
    });
  }

  async listGroupIds(prefix: string): Promise<string[]> {
    const deadlineMs = this.deadline();
    return this.guard(async () => {
      await this.catchUp(deadlineMs);
      const names = await this.childrenOrEmpty(CONSUMERS_PATH, deadlineMs);
      return names.map(decodeZnodeName).filter((id) => id.startsWith(prefix));
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.groups.clear();
    if (this.ownsClient) await this.zk.close();
  }

  private deadline(): number {
    return Date.now() + this.timeoutMs;
  }

  /** The group's cache, loading it first when it is missing or stale (one load at a time). */
  private async cached(groupId: string, deadlineMs: number): Promise<GroupCache> {
    const cache = this.groups.get(groupId);
    if (cache !== undefined && !cache.stale) {
      // Re-inserting keeps the map in least-recently-used order for eviction.
      this.groups.delete(groupId);
      this.groups.set(groupId, cache);
      return cache;
    }
    return this.reload(groupId, deadlineMs);
  }

  private reload(groupId: string, deadlineMs: number): Promise<GroupCache> {
    const pending = this.loading.get(groupId);
    if (pending !== undefined) return pending;
    const load = this.readGroup(groupId, deadlineMs)
      .then((cache) => {
        this.groups.delete(groupId);
        this.groups.set(groupId, cache);
        if (this.groups.size > this.cachedGroupsMax) {
          this.groups.delete(this.groups.keys().next().value!);
        }
        return cache;
      })
      .finally(() => this.loading.delete(groupId));
    this.loading.set(groupId, load);
    return load;
  }

  /**
   * Runs `attempt`; if ZooKeeper's tree differed from the cache (NodeExists, NoNode), reloads
   * the group and runs it once more. Any failure leaves the cache marked stale.
   */
  private async retryOnceOnTreeChange(
    groupId: string,
    cache: GroupCache,
    deadlineMs: number,
    attempt: (cache: GroupCache) => Promise<void>,
  ): Promise<void> {
    try {
      await attempt(cache);
    } catch (error) {
      cache.stale = true;
      if (!(error instanceof NodeExistsError || error instanceof NoNodeError)) throw error;
      const fresh = await this.reload(groupId, deadlineMs);
      try {
        await attempt(fresh);
      } catch (again) {
        fresh.stale = true;
        throw again;
      }
    }
  }

  private async commitOnce(
    groupId: string,
    cache: GroupCache,
    offsets: readonly { topic: string; partition: number; committed: CommittedOffset }[],
    deadlineMs: number,
  ): Promise<void> {
    const units = offsets.map(({ topic, partition, committed }) => {
      return writeOps(cache.existing, groupId, topic, partition, committed);
    });
    for (const chunk of chunkUnits(units)) {
      await this.zk.multi(chunk, { timeoutMs: deadlineMs - Date.now() });
    }
    for (const { topic, partition, committed } of offsets) {
      cache.offsets.set(topicPartitionKey(topic, partition), committed);
    }
  }

  private async deleteOnce(
    groupId: string,
    cache: GroupCache,
    partitions: readonly { topic: string; partition: number }[],
    deadlineMs: number,
  ): Promise<void> {
    const ops: ZooKeeperOp[] = [];
    const deleted = new Set<string>();
    for (const { topic, partition } of partitions) {
      for (const path of [
        offsetPath(groupId, topic, partition),
        metaPath(groupId, topic, partition),
      ]) {
        if (!cache.existing.has(path) || deleted.has(path)) continue;
        ops.push({ type: "delete", path });
        deleted.add(path);
      }
    }
    for (const chunk of chunkUnits(ops.map((op) => [op]))) {
      await this.zk.multi(chunk, { timeoutMs: deadlineMs - Date.now() });
    }
    for (const path of deleted) cache.existing.delete(path);
    for (const { topic, partition } of partitions)
      cache.offsets.delete(topicPartitionKey(topic, partition));
  }

  private async deleteTree(root: string, deadlineMs: number): Promise<void> {
    let paths: string[];
    try {
      paths = await this.zk.listSubtree(root, { timeoutMs: deadlineMs - Date.now() });
    } catch (error) {
      if (error instanceof NoNodeError) return;
      throw error;
    }
    const deletes = paths.reverse().map((path): ZooKeeperOp[] => [{ type: "delete", path }]);
    for (const chunk of chunkUnits(deletes)) {
      await this.zk.multi(chunk, { timeoutMs: deadlineMs - Date.now() });
    }
  }

  /** Reads every offset of a group and which of its znodes exist. */
  private async readGroup(groupId: string, deadlineMs: number): Promise<GroupCache> {
    const existing = new Set<string>();
    const offsets = new Map<TopicPartitionKey, CommittedOffset>();
    const root = groupPath(groupId);
    await this.catchUp(deadlineMs);
    const dirs = [
      CONSUMERS_PATH,
      root,
      `${root}/offsets`,
      `${root}/offsets-meta`,
      membershipPath(groupId),
    ];
    const stats = await Promise.all(
      dirs.map((path) => this.zk.exists(path, { timeoutMs: deadlineMs - Date.now() })),
    );
    dirs.forEach((path, i) => {
      if (stats[i] !== null) existing.add(path);
    });
    const leaves = await this.listLeaves(`${root}/offsets`, deadlineMs, existing);
    const metaLeaves = await this.listLeaves(`${root}/offsets-meta`, deadlineMs, existing);
    const metaSet = new Set(metaLeaves.map((leaf) => leaf.path));
    await mapLimit(leaves, READ_CONCURRENCY, async ({ topic, partition, path }) => {
      const meta = metaPath(groupId, topic, partition);
      const committed = await this.readOffset(path, metaSet.has(meta) ? meta : null, deadlineMs);
      if (committed !== null) offsets.set(topicPartitionKey(topic, partition), committed);
    });
    return { existing, offsets, stale: false };
  }

  /** The `<topic>/<partition>` znodes under `dir`, adding every path seen to `existing`. */
  private async listLeaves(
    dir: string,
    deadlineMs: number,
    existing: Set<string>,
  ): Promise<{ topic: string; partition: number; path: string }[]> {
    const topics = existing.has(dir) ? await this.childrenOrEmpty(dir, deadlineMs) : [];
    const partitionLists = await mapLimit(topics, READ_CONCURRENCY, (topic) => {
      return this.childrenOrEmpty(`${dir}/${topic}`, deadlineMs);
    });
    const leaves: { topic: string; partition: number; path: string }[] = [];
    topics.forEach((topicName, i) => {
      existing.add(`${dir}/${topicName}`);
      for (const partitionName of partitionLists[i]) {
        const path = `${dir}/${topicName}/${partitionName}`;
        existing.add(path);
        const partition = Number(partitionName);
        if (!Number.isInteger(partition) || partition < 0) continue;
        leaves.push({ topic: decodeZnodeName(topicName), partition, path });
      }
    });
    return leaves;
  }

  /** One partition's commit, or null when its offset znode does not hold a decimal number. */
  private async readOffset(
    path: string,
    meta: string | null,
    deadlineMs: number,
  ): Promise<CommittedOffset | null> {
    const [leaf, metaNode] = await Promise.all([
      this.zk.getData(path, { timeoutMs: deadlineMs - Date.now() }).catch(nullOnNoNode),
      meta === null
        ? null
        : this.zk.getData(meta, { timeoutMs: deadlineMs - Date.now() }).catch(nullOnNoNode),
    ]);
    if (leaf === null) return null;
    const text = new TextDecoder().decode(leaf.data).trim();
    if (!/^-?\d{1,19}$/.test(text)) return null;
    return toCommittedOffset(
      BigInt(text),
      leaf.stat,
      metaNode === null ? null : parseMeta(metaNode.data),
    );
  }

  /**
   * Before a group is read: the ZooKeeper server this broker is connected to may be behind
   * the one another coordinator wrote the group's latest commit through, and would answer
   * with older offsets (a committed offset read back moving backwards). After the barrier the
   * reads see every write acknowledged before it (ZooKeeperClient.barrier).
   */
  private catchUp(deadlineMs: number): Promise<void> {
    return this.zk.barrier({ timeoutMs: deadlineMs - Date.now() });
  }

  private async childrenOrEmpty(path: string, deadlineMs: number): Promise<string[]> {
    try {
      return await this.zk.getChildren(path, { timeoutMs: deadlineMs - Date.now() });
    } catch (error) {
      if (error instanceof NoNodeError) return [];
      throw error;
    }
  }

  /** Runs a store operation, turning ZooKeeper failures into the Kafka errors clients expect. */
  private async guard<T>(operation: () => Promise<T>): Promise<T> {
    if (this.closed)
      throw new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "offset store is closed");
    try {
      return await operation();
    } catch (error) {
      throw toKafkaError(error);
    }
  }
}

function groupPath(groupId: string): string {
  if (groupId.length === 0) throw new KafkaError(ErrorCode.INVALID_GROUP_ID, "empty group id");
  return `${CONSUMERS_PATH}/${encodeZnodeName(groupId)}`;
}

function membershipPath(groupId: string): string {
  return `${groupPath(groupId)}/membership`;
}

function offsetPath(groupId: string, topic: string, partition: number): string {
  return `${groupPath(groupId)}/offsets/${encodeZnodeName(topic)}/${partition}`;
}

function metaPath(groupId: string, topic: string, partition: number): string {
  return `${groupPath(groupId)}/offsets-meta/${encodeZnodeName(topic)}/${partition}`;
}

/**
 * The operations that write one partition's commit: creates for missing ancestors, then
 * create-or-setData of the offset and meta znodes. Paths it creates are added to `existing`
 * at once, so later partitions of the same commit (and later commits) do not create them again.
 */
function writeOps(
  existing: Set<string>,
  groupId: string,
  topic: string,
  partition: number,
  committed: CommittedOffset,
): ZooKeeperOp[] {
  assert(Number.isInteger(partition) && partition >= 0, `bad partition ${partition} of ${topic}`);
  const ops: ZooKeeperOp[] = [];
  const root = groupPath(groupId);
  const topicName = encodeZnodeName(topic);
  const ensure = (path: string, data?: Uint8Array) => ensureOp(existing, ops, path, data);
  ensure(CONSUMERS_PATH);
  ensure(root);
  ensure(`${root}/offsets`);
  ensure(`${root}/offsets/${topicName}`);
  ensure(
    `${root}/offsets/${topicName}/${partition}`,
    new TextEncoder().encode(committed.offset.toString()),
  );
  ensure(`${root}/offsets-meta`);
  ensure(`${root}/offsets-meta/${topicName}`);
  ensure(`${root}/offsets-meta/${topicName}/${partition}`, encodeMeta(committed));
  return ops;
}

/**
 * Appends the create (when `existing` lacks the path) or setData (when there is data to write)
 * that leaves `path` in place, and counts the path as existing from now on.
 */
function ensureOp(
  existing: Set<string>,
  ops: ZooKeeperOp[],
  path: string,
  data?: Uint8Array,
): void {
  if (existing.has(path)) {
    if (data !== undefined) ops.push({ type: "setData", path, data });
    return;
  }
  ops.push(data === undefined ? { type: "create", path } : { type: "create", path, data });
  existing.add(path);
}

/** Packs per-partition operation lists into multis under the request size limit. */
function chunkUnits(units: readonly ZooKeeperOp[][]): ZooKeeperOp[][] {
  const chunks: ZooKeeperOp[][] = [];
  let chunk: ZooKeeperOp[] = [];
  let chunkBytes = 0;
  for (const unit of units) {
    const unitBytes = estimateMultiBytes(unit);
    if (chunk.length > 0 && chunkBytes + unitBytes > CHUNK_BYTES_MAX) {
      chunks.push(chunk);
      chunk = [];
      chunkBytes = 0;
    }
    chunk.push(...unit);
    chunkBytes += unitBytes;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

function encodeMeta(committed: CommittedOffset): Uint8Array {
  const record: MetaRecord = {
    version: META_FORMAT_VERSION,
    offset: committed.offset.toString(),
    leaderEpoch: committed.leaderEpoch,
    metadata: committed.metadata,
    commitTimestampMs: committed.commitTimestampMs,
  };
  return new TextEncoder().encode(JSON.stringify(record));
}

function encodeGroupRecord(protocolType: string): Uint8Array {
  const record = { version: META_FORMAT_VERSION, protocolType };
  return new TextEncoder().encode(JSON.stringify(record));
}

/** The protocol type in a group znode's data, or null for empty or foreign data. */
function parseGroupRecord(data: Uint8Array): string | null {
  try {
    const text = new TextDecoder().decode(data);
    const record = JSON.parse(text) as { version?: unknown; protocolType?: unknown };
    if (record.version !== META_FORMAT_VERSION) return null;
    return typeof record.protocolType === "string" ? record.protocolType : null;
  } catch {
    return null;
  }
}

function parseMeta(data: Uint8Array): MetaRecord | null {
  try {
    const record = JSON.parse(new TextDecoder().decode(data)) as Partial<MetaRecord>;
    if (record.version !== META_FORMAT_VERSION || typeof record.offset !== "string") return null;
    if (typeof record.leaderEpoch !== "number" || typeof record.commitTimestampMs !== "number")
      return null;
    if (record.metadata !== null && typeof record.metadata !== "string") return null;
    return record as MetaRecord;
  } catch {
    return null;
  }
}

/**
 * Joins an offset znode with its meta record. A meta record for another offset is stale (a tool
 * rewrote the offset), so the commit then gets no leader epoch, no metadata, and the offset
 * znode's modification time.
 */
function toCommittedOffset(
  offset: bigint,
  stat: ZnodeStat,
  meta: MetaRecord | null,
): CommittedOffset {
  if (meta === null || meta.offset !== offset.toString()) {
    return { offset, leaderEpoch: NO_LEADER_EPOCH, metadata: "", commitTimestampMs: stat.mtimeMs };
  }
  return {
    offset,
    leaderEpoch: meta.leaderEpoch,
    metadata: meta.metadata,
    commitTimestampMs: meta.commitTimestampMs,
  };
}

function nullOnNoNode(error: unknown): null {
  if (error instanceof NoNodeError) return null;
  throw error;
}

function toKafkaError(error: unknown): unknown {
  if (error instanceof KafkaError) return error;
  if (error instanceof ZooKeeperUnavailableError) {
    return new KafkaError(
      ErrorCode.COORDINATOR_NOT_AVAILABLE,
      `ZooKeeper unavailable: ${error.message}`,
      {
        cause: error,
      },
    );
  }
  if (error instanceof ZooKeeperError) {
    return new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, `ZooKeeper error: ${error.message}`, {
      cause: error,
    });
  }
  return error;
}
