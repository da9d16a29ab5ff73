/**
 * Where committed consumer-group offsets live. Two implementations share this interface:
 * the embedded local file store (the default for a single broker) and the ZooKeeper store
 * (Kafka's `/consumers/<group>/offsets/<topic>/<partition>` layout, for cluster mode).
 */
import type { TopicPartitionKey } from "../common/topic-partition.ts";

export interface CommittedOffset {
  readonly offset: bigint;
  readonly leaderEpoch: number;
  readonly metadata: string | null;
  readonly commitTimestampMs: number;
}

/**
 * What a group keeps beside its offsets so that whichever broker coordinates it next shows it
 * as before: its protocol type (Kafka keeps it in the group metadata record). Members,
 * generation and assignment are kept in the membership record (storeMembership).
 */
export interface StoredGroupMetadata {
  readonly protocolType: string | null;
}

export interface OffsetStore {
  /**
   * Loads every committed offset of a group, keyed by partition (called when
   * this broker becomes its coordinator, and on first use).
   */
  loadGroup(groupId: string): Promise<Map<TopicPartitionKey, CommittedOffset>>;
  /**
   * Persists all offsets of one OffsetCommit atomically in one round trip; throws
   * KafkaError(COORDINATOR_NOT_AVAILABLE | REQUEST_TIMED_OUT) on store unavailability
   * (retriable).
   */
  commit(
    groupId: string,
    offsets: readonly { topic: string; partition: number; committed: CommittedOffset }[],
  ): Promise<void>;
  deleteOffsets(
    groupId: string,
    partitions: readonly { topic: string; partition: number }[],
  ): Promise<void>;
  /** Records the group's protocol type; it is read back only while the group has offsets. */
  storeGroupMetadata(groupId: string, metadata: StoredGroupMetadata): Promise<void>;
  /** The group's metadata when it has committed offsets (a stored group), else null. */
  describeStoredGroup(groupId: string): Promise<StoredGroupMetadata | null>;
  /**
   * Replaces the group's membership record (group-membership-record.ts), or removes it (null):
   * what a broker coordinating the group next reads to carry on without a rebalance.
   */
  storeMembership(groupId: string, record: Uint8Array | null): Promise<void>;
  /** The group's membership record, or null when none is stored. */
  loadMembership(groupId: string): Promise<Uint8Array | null>;
  /** Removes the group's offsets, metadata and membership. */
  deleteGroup(groupId: string): Promise<void>;
  /** Groups that have committed offsets (for ListGroups after restart). */
  listGroups(): Promise<string[]>;
  /**
   * Group ids starting with `prefix` that the store has an entry for, with offsets or not, in
   * one listing (the reserved ids of pending transactional offsets, read on every
   * transaction marker: listGroups reads every group's offsets too).
   */
  listGroupIds(prefix: string): Promise<string[]>;
  close(): Promise<void>;
}
