/**
 * Offsets committed inside transactions (TxnOffsetCommit, KIP-98/KIP-447), held until the
 * transaction's marker says COMMIT (they become the group's committed offsets) or ABORT (they
 * are dropped). Consumers never see them before.
 *
 * They are durable where committed offsets are: each (producer, group) pair is stored in the
 * OffsetStore under a reserved group id `__txn_pending:<producerId>:<groupId>`, so a coordinator
 * restarted (or taking over) mid-transaction still commits them when the marker arrives. Kafka
 * keeps them as transactional records in __consumer_offsets; Quill's offsets live in the
 * OffsetStore, so the pending ones live there too. Group ids starting with the prefix are
 * refused for ordinary use.
 *
 * In a cluster the OffsetStore is ZooKeeper, which every broker reads: if the broker that took
 * a TxnOffsetCommit dies before the transaction's marker reaches it, its pending offsets are
 * still in the store, and the broker that now coordinates the group completes them from there
 * when the marker arrives (completeStored). Kafka gets the same from __consumer_offsets'
 * replication.
 */
import {
  type TopicPartitionKey,
  topicPartitionKey,
  topicPartitionOf,
} from "../common/topic-partition.ts";
import type { CommittedOffset, OffsetStore } from "./offset-store.ts";

export const PENDING_GROUP_PREFIX = "__txn_pending:";
/** Producers with pending offsets at once; a bound on what open transactions can hold. */
export const PENDING_PRODUCERS_MAX = 100_000;

export interface PendingOffset {
  readonly topic: string;
  readonly partition: number;
  readonly committed: CommittedOffset;
}

const pendingGroupId = (producerId: bigint, groupId: string) =>
  `${PENDING_GROUP_PREFIX}${producerId}:${groupId}`;

export const isPendingGroupId = (groupId: string) => groupId.startsWith(PENDING_GROUP_PREFIX);

export class PendingTxnOffsets {
  /** producer id -> group id -> partition -> offset */
  private readonly pending = new Map<bigint, Map<string, Map<TopicPartitionKey, PendingOffset>>>();

  constructor(private readonly store: OffsetStore) {}

  /**
   * Reads back the pending offsets the store holds: all of them at coordinator start, or those
   * of the groups `wanted` names (a group this broker just took over: its previous coordinator
   * may have died holding some).
   */
  async load(
    storedGroupIds: readonly string[],
    wanted: (groupId: string) => boolean = () => true,
  ): Promise<void> {
    for (const stored of storedGroupIds) {
      if (!isPendingGroupId(stored)) continue;
      const rest = stored.slice(PENDING_GROUP_PREFIX.length);
      const at = rest.indexOf(":");
      const producerId = BigInt(rest.slice(0, at));
      const groupId = rest.slice(at + 1);
      if (!wanted(groupId)) continue;
      const offsets = await this.store.loadGroup(stored);
      // Completed (and deleted) since the listing: nothing is pending any more.
      if (offsets.size === 0) continue;
      const byKey = this.groupMap(producerId, groupId);
      for (const [key, committed] of offsets)
        byKey.set(key, { ...topicPartitionOf(key), committed });
    }
  }

  private groupMap(producerId: bigint, groupId: string): Map<TopicPartitionKey, PendingOffset> {
    let groups = this.pending.get(producerId);
    if (groups === undefined) {
      groups = new Map();
      this.pending.set(producerId, groups);
    }
    let byKey = groups.get(groupId);
    if (byKey === undefined) {
      byKey = new Map();
      groups.set(groupId, byKey);
    }
    return byKey;
  }

  get producerCount(): number {
    return this.pending.size;
  }

  /** Stores offsets of an open transaction (durably) before they are acknowledged. */
  async add(producerId: bigint, groupId: string, offsets: readonly PendingOffset[]): Promise<void> {
    await this.store.commit(pendingGroupId(producerId, groupId), offsets);
    const byKey = this.groupMap(producerId, groupId);
    for (const o of offsets) byKey.set(topicPartitionKey(o.topic, o.partition), o);
  }

  /** Whether a partition of a group has an offset pending in some open transaction. */
  isPending(groupId: string, topic: string, partition: number): boolean {
    const key = topicPartitionKey(topic, partition);
    for (const groups of this.pending.values()) {
      if (groups.get(groupId)?.has(key) === true) return true;
    }
    return false;
  }

  /** Whether a group has any pending offset (scanned only for requireStable fetches). */
  hasPendingFor(groupId: string): boolean {
    for (const groups of this.pending.values()) if (groups.has(groupId)) return true;
    return false;
  }

  /**
   * Ends a producer's transaction on the groups: `apply` commits each group's offsets (on
   * COMMIT), then the pending copies are deleted. Nothing pending is a no-op (a retried marker).
   */
  async complete(
    producerId: bigint,
    commit: boolean,
    apply: (groupId: string, offsets: readonly PendingOffset[]) => Promise<void>,
  ): Promise<void> {
    const groups = this.pending.get(producerId);
    if (groups === undefined) return;
    for (const [groupId, byKey] of groups) {
      if (commit) await apply(groupId, [...byKey.values()]);
      await this.store.deleteGroup(pendingGroupId(producerId, groupId));
      groups.delete(groupId);
    }
    this.pending.delete(producerId);
  }

  /**
   * Completes, from the store, a producer's pending offsets that no live broker holds in memory
   * (their broker died), for the groups `owns` says this broker coordinates. Runs after
   * complete(), so this broker's own are already gone from the store. One listing of the
   * store's group ids per marker. A live holder may complete the same entry at the same time:
   * both commit the same offsets, and deleting twice is harmless.
   */
  async completeStored(
    producerId: bigint,
    commit: boolean,
    owns: (groupId: string) => boolean,
    apply: (groupId: string, offsets: readonly PendingOffset[]) => Promise<void>,
  ): Promise<void> {
    const prefix = pendingGroupId(producerId, "");
    for (const stored of await this.store.listGroupIds(prefix)) {
      const groupId = stored.slice(prefix.length);
      if (!owns(groupId)) continue;
      const offsets = await this.store.loadGroup(stored);
      const pending = [...offsets].map(([key, committed]) => ({
        ...topicPartitionOf(key),
        committed,
      }));
      if (commit && pending.length > 0) await apply(groupId, pending);
      await this.store.deleteGroup(stored);
    }
  }
}
