// Raw protocol requests the harness sends itself, with the repository's own codecs, so both
// brokers are probed the same way and no client's retry backoff blurs the start-up figure: the
// first successful produce, topic creation, and waiting until every partition has a leader.
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { KafkaClient } from "../../test/support/kafka-client.ts";

const PRODUCE = 0;
const METADATA = 3;
const CREATE_TOPICS = 19;
const PRODUCE_VERSION = 7;
const METADATA_VERSION = 8;
const CREATE_TOPICS_VERSION = 4;
const TOPIC_ALREADY_EXISTS = 36;
/** Kafka answers this when creation outlasts the request's timeout; it still completes. */
const REQUEST_TIMED_OUT = 7;
const RETRY_MS = 5;
const PROBE_TOPIC = "startup-probe";

export interface TopicSpec {
  readonly name: string;
  readonly partitions: number;
}

/**
 * Retries connect, create the probe topic, produce one record (acks=1) every few milliseconds
 * until a produce succeeds; returns when it did. Any error before then (refused connection, no
 * controller yet, no leader yet) only means the broker is not ready.
 */
export async function waitForFirstProduce(port: number, deadlineMs: number): Promise<void> {
  let lastError = "";
  while (performance.now() < deadlineMs) {
    const client = await KafkaClient.connect(port).catch(() => null);
    if (client !== null) {
      try {
        await createTopics(client, [{ name: PROBE_TOPIC, partitions: 1 }]);
        if (await produceOne(client)) return;
        lastError = "produce not accepted yet";
      } catch (error) {
        lastError = (error as Error).message;
      } finally {
        client.close();
      }
    }
    await Bun.sleep(RETRY_MS);
  }
  throw new Error(`no successful produce on port ${port} before the deadline (${lastError})`);
}

async function produceOne(client: KafkaClient): Promise<boolean> {
  const records = buildRecordBatch([{ value: new TextEncoder().encode("probe") }]);
  const response = await client.request(PRODUCE, PRODUCE_VERSION, {
    transactionalId: null,
    acks: 1,
    timeoutMs: 5_000,
    topicData: [{ name: PROBE_TOPIC, partitionData: [{ index: 0, records }] }],
  });
  return response.responses[0]?.partitionResponses[0]?.errorCode === 0;
}

async function createTopics(client: KafkaClient, topics: readonly TopicSpec[]): Promise<void> {
  const response = await client.request(CREATE_TOPICS, CREATE_TOPICS_VERSION, {
    timeoutMs: 30_000,
    validateOnly: false,
    topics: topics.map((t) => ({
      name: t.name,
      numPartitions: t.partitions,
      replicationFactor: 1,
      assignments: [],
      configs: [],
    })),
  });
  for (const t of response.topics) {
    const pending = t.errorCode === REQUEST_TIMED_OUT;
    if (t.errorCode !== 0 && t.errorCode !== TOPIC_ALREADY_EXISTS && !pending) {
      throw new Error(`CreateTopics ${t.name}: error ${t.errorCode} ${t.errorMessage ?? ""}`);
    }
  }
}

/** Creates the topics and waits until Metadata shows a leader for every partition. */
export async function createTopicsAndWait(
  port: number,
  topics: readonly TopicSpec[],
  deadlineMs: number,
): Promise<void> {
  const client = await KafkaClient.connect(port);
  try {
    await createTopics(client, topics);
    // Each poll is a Metadata answer for every partition: poll 10,000 of them every 500 ms.
    const partitions = topics.reduce((n, t) => n + t.partitions, 0);
    const pollMs = Math.max(RETRY_MS * 4, partitions / 20);
    while (!(await allLeadersKnown(client, topics))) {
      if (performance.now() > deadlineMs) throw new Error("topics got no leaders in time");
      await Bun.sleep(pollMs);
    }
  } finally {
    client.close();
  }
}

async function allLeadersKnown(
  client: KafkaClient,
  topics: readonly TopicSpec[],
): Promise<boolean> {
  const response = await client.request(METADATA, METADATA_VERSION, {
    topics: topics.map((t) => ({ name: t.name })),
    allowAutoTopicCreation: false,
    includeClusterAuthorizedOperations: false,
    includeTopicAuthorizedOperations: false,
  });
  return topics.every((spec) => {
    const topic = response.topics.find((t) => t.name === spec.name);
    return (
      topic !== undefined &&
      topic.errorCode === 0 &&
      topic.partitions.length === spec.partitions &&
      topic.partitions.every((p) => p.errorCode === 0 && p.leaderId >= 0)
    );
  });
}
