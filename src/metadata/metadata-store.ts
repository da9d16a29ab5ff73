/**
 * What the broker knows about topics, independent of where it is kept. The embedded default keeps it
 * in a local file ({@link LocalMetadataStore}); cluster mode will keep it in ZooKeeper under
 * `/brokers/topics/<topic>` and `/config/topics/<topic>`, behind this same interface.
 */
/**
 * Most topics any store keeps (and AdminManager lets clients create), so a runaway client cannot
 * grow the metadata file or the znode tree forever.
 */
export const TOPICS_MAX = 100_000;

export interface TopicRecord {
  readonly name: string;
  /** Kafka topic id: 16 random bytes, hex-encoded here so the record stays plain JSON. */
  readonly topicIdHex: string;
  /** Replica assignment: partition index -> broker ids (the first is the preferred leader). */
  readonly assignment: readonly (readonly number[])[];
  /** Topic-level config overrides only; defaults come from the broker config. */
  readonly configs: Readonly<Record<string, string>>;
}

export interface MetadataStore {
  readonly clusterId: string;
  topics(): readonly TopicRecord[];
  topic(name: string): TopicRecord | undefined;
  /** A reassignment of the topic runs (the controller's adding/removing replicas are set). */
  isReassigning(name: string): boolean;
  createTopic(topic: TopicRecord): Promise<void>;
  deleteTopic(name: string): Promise<void>;
  updateTopic(topic: TopicRecord): Promise<void>;
  close(): Promise<void>;
}
