/**
 * A partition's identity, Kafka's TopicPartition: a topic name and a partition index. Maps and
 * sets keyed by partition use `TopicPartitionKey`, which only this module makes and reads, so
 * no other module builds a key with a separator of its own or parses one back by hand.
 */
export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

declare const topicPartitionKeyBrand: unique symbol;

/**
 * A TopicPartition as a Map key. JavaScript maps compare objects by identity, so the key is a
 * string (equal partitions give equal keys); the brand keeps other strings out of such maps.
 */
export type TopicPartitionKey = string & { readonly [topicPartitionKeyBrand]: true };

/** NUL: Kafka topic names never contain it, and a partition index is digits only. */
const SEPARATOR = "\u0000";

export function topicPartitionKey(topic: string, partition: number): TopicPartitionKey {
  return `${topic}${SEPARATOR}${partition}` as TopicPartitionKey;
}

/** The partition a key names (split at the last separator, after which only digits follow). */
export function topicPartitionOf(key: TopicPartitionKey): TopicPartition {
  const at = key.lastIndexOf(SEPARATOR);
  return { topic: key.slice(0, at), partition: Number(key.slice(at + 1)) };
}
