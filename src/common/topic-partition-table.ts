/**
 * Values by topic name, then by partition index: the per-partition lookups of the produce and
 * fetch paths. A Map keyed by `topicPartitionKey` builds a key string and hashes it per lookup
 * (at 10,000 partitions a profile put 9% of the broker's CPU per Produce request in two such
 * lookups); here a lookup hashes the topic name and indexes an array. It mirrors, rather than
 * replaces, the keyed maps its owners iterate and delete from by key.
 */
export class TopicPartitionTable<V> {
  private readonly byTopic = new Map<string, { values: (V | undefined)[]; count: number }>();

  get(topic: string, partition: number): V | undefined {
    return this.byTopic.get(topic)?.values[partition];
  }

  set(topic: string, partition: number, value: V): void {
    if (!Number.isInteger(partition) || partition < 0) {
      throw new RangeError(`partition index ${partition} of ${topic}`);
    }
    let entry = this.byTopic.get(topic);
    if (entry === undefined) {
      entry = { values: [], count: 0 };
      this.byTopic.set(topic, entry);
    }
    const values = entry.values;
    // Dense, never holey: a write far past the end of a short array (logs are made and loaded
    // out of order) would turn it into JavaScriptCore's sparse storage, a hash lookup per read.
    while (values.length <= partition) values.push(undefined);
    if (values[partition] === undefined) entry.count++;
    values[partition] = value;
  }

  delete(topic: string, partition: number): void {
    const entry = this.byTopic.get(topic);
    if (entry?.values[partition] === undefined) return;
    entry.values[partition] = undefined;
    // A deleted topic leaves nothing behind.
    if (--entry.count === 0) this.byTopic.delete(topic);
  }
}
