/**
 * Kafka's internal topics (`Topic.isInternal`): the group offsets, transaction state and share
 * group state topics. Regex subscriptions never match them, as in Kafka.
 */
/** Kafka's group metadata topic: in a cluster its partitions' leaders coordinate the groups. */
export const GROUP_METADATA_TOPIC = "__consumer_offsets";

export const INTERNAL_TOPICS: ReadonlySet<string> = new Set([
  "__consumer_offsets",
  "__transaction_state",
  "__share_group_state",
]);

/** The names of a cluster's topics, with a version that moves whenever the set changes. */
export interface TopicNames {
  readonly version: number;
  /** Sorted; internal topics left out. */
  readonly names: readonly string[];
}
