import type { Assignment } from "./consumer-group-assignors.ts";

/**
 * A share group (KIP-932, Kafka's ShareGroup): members subscribe to topics and the coordinator
 * assigns partitions to them with the simple assignor. Unlike a consumer group, a partition may
 * have many members: records are handed out one acquisition at a time by the partition's leader
 * (server/share-partition.ts), so no revocation is needed and a member takes its new assignment
 * on its next heartbeat.
 */

export interface ShareMember {
  readonly memberId: string;
  memberEpoch: number;
  rackId: string | null;
  clientId: string;
  clientHost: string;
  subscribedTopicNames: string[];
  assigned: Assignment;
  sessionTimer: ReturnType<typeof setTimeout> | null;
}

export type ShareGroupState = "Empty" | "Stable";

export const SHARE_ASSIGNOR_NAME = "simple";

export class ShareGroup {
  readonly members = new Map<string, ShareMember>();
  groupEpoch = 0;
  assignmentEpoch = 0;
  /**
   * Every topic the group was assigned while this coordinator held it (bounded by the topics
   * that exist): DeleteGroups deletes the group's state of their partitions even after the
   * members that subscribed to them left, as Kafka's group keeps its initialized partitions.
   */
  readonly assignedTopics = new Set<string>();
  private partitionCounts = new Map<string, number>();

  constructor(readonly groupId: string) {}

  get state(): ShareGroupState {
    return this.members.size === 0 ? "Empty" : "Stable";
  }

  subscribedTopics(): Set<string> {
    const topics = new Set<string>();
    for (const m of this.members.values()) for (const t of m.subscribedTopicNames) topics.add(t);
    return topics;
  }

  /** New partition counts bump the epoch, as a subscribed topic's metadata change does. */
  updatePartitionCounts(counts: Map<string, number>): void {
    const same =
      counts.size === this.partitionCounts.size &&
      [...counts].every(([t, n]) => this.partitionCounts.get(t) === n);
    if (same) return;
    this.partitionCounts = counts;
    this.groupEpoch++;
  }

  /**
   * Kafka's SimpleAssignor for members with any subscriptions: each topic's partitions are
   * spread over its subscribers in member id order; with more subscribers than partitions,
   * each member gets one partition and partitions are shared (member i takes partition
   * i mod count), so every member has work and every partition has a consumer.
   */
  maybeComputeAssignment(): void {
    if (this.assignmentEpoch === this.groupEpoch) return;
    const ids = [...this.members.keys()].sort();
    const target = new Map(ids.map((id) => [id, new Map<string, Set<number>>()]));
    const give = (id: string, topic: string, p: number) => {
      const assigned = target.get(id)!;
      let set = assigned.get(topic);
      if (set === undefined) assigned.set(topic, (set = new Set()));
      set.add(p);
    };
    for (const [topic, count] of this.partitionCounts) {
      const subscribers = ids.filter((id) =>
        this.members.get(id)!.subscribedTopicNames.includes(topic),
      );
      if (subscribers.length === 0 || count === 0) continue;
      this.assignedTopics.add(topic);
      const n = Math.max(count, subscribers.length);
      for (let i = 0; i < n; i++) give(subscribers[i % subscribers.length]!, topic, i % count);
    }
    for (const [id, assigned] of target) this.members.get(id)!.assigned = assigned;
    this.assignmentEpoch = this.groupEpoch;
  }

  /** Every partition some member is assigned, by topic. */
  assignedPartitions(): Assignment {
    const all = new Map<string, Set<number>>();
    for (const m of this.members.values()) {
      for (const [topic, partitions] of m.assigned) {
        let set = all.get(topic);
        if (set === undefined) all.set(topic, (set = new Set()));
        for (const p of partitions) set.add(p);
      }
    }
    return all;
  }
}
