/**
 * Quill clusters for tests: broker processes (`quill serve --zookeeper`) on one ZooKeeper
 * connect string, Metadata read raw from each broker, waits for every broker to answer the
 * same, topics created raw and records produced with kafkajs.
 */
import { expect } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey, type MetadataResponse } from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { internalTopicReplication } from "../support/broker-harness.ts";
import { type BrokerCommand, ChildBroker } from "../support/child-broker.ts";
import { requestOnce } from "../support/kafka-client.ts";

export const SESSION_TIMEOUT_MS = 4_000;

export interface Cluster {
  readonly connect: string;
  readonly brokers: Map<number, ChildBroker>;
  readonly zk: ZooKeeperClient;
  close(): Promise<void>;
}

export async function startCluster(
  connect: string,
  /** The same for every broker, or per broker id (1-3). */
  extraSettings: Readonly<Record<string, string>> | ((id: number) => Record<string, string>) = {},
  env: Readonly<Record<string, string>> = {},
  command: BrokerCommand = "source",
): Promise<Cluster> {
  const brokers = new Map<number, ChildBroker>();
  const started = await Promise.all(
    [1, 2, 3].map((id) =>
      ChildBroker.start({
        command,
        settings: {
          "zookeeper.connect": connect,
          "zookeeper.session.timeout.ms": String(SESSION_TIMEOUT_MS),
          "broker.id": String(id),
          "default.replication.factor": "3",
          "num.partitions": "3",
          // Coordinators fail over with their internal topics' partitions: three replicas.
          ...internalTopicReplication(3),
          ...(typeof extraSettings === "function" ? extraSettings(id) : extraSettings),
        },
        env,
      }),
    ),
  );
  for (const [i, b] of started.entries()) brokers.set(i + 1, b);
  const zk = await ZooKeeperClient.connect(connect, {
    sessionTimeoutMs: 4_000,
    connectTimeoutMs: 5_000,
  });
  return {
    connect,
    brokers,
    zk,
    close: async () => {
      await zk.close();
      await Promise.all([...brokers.values()].map((b) => b.remove()));
    },
  };
}

export function metadata(broker: ChildBroker): Promise<MetadataResponse> {
  return requestOnce(broker.port, ApiKey.Metadata, 12, {
    topics: null,
    allowAutoTopicCreation: false,
  });
}

/** Brokers, controller and partition leaders, as one comparable string. */
export function summary(m: MetadataResponse): string {
  const brokers = m.brokers
    .map((b) => `${b.nodeId}@${b.port}`)
    .sort()
    .join(",");
  const topics = [...m.topics]
    .sort((a, b) => (a.name ?? "").localeCompare(b.name ?? ""))
    .map(
      (t) =>
        `${t.name}:` +
        t.partitions
          .map((p) => `${p.partitionIndex}=${p.leaderId}/${p.leaderEpoch}[${p.isrNodes.join(",")}]`)
          .join(" "),
    );
  return `controller ${m.controllerId}; brokers ${brokers}; ${topics.join("; ")}`;
}

export async function until<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  what: string,
  pollMs = 100,
): Promise<T> {
  const deadlineMs = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadlineMs) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
    await Bun.sleep(pollMs);
  }
}

/** Waits until every running broker answers the same metadata listing `brokerCount` brokers. */
export async function consistentMetadata(
  cluster: Cluster,
  brokerCount: number,
  timeoutMs = 15_000,
) {
  const running = [...cluster.brokers.values()].filter((b) => b.running);
  // What each broker answered last, for the error when the metadata never settles.
  let lastSummaries: string[] = [];
  try {
    return await until(
      async () => {
        const answers = await Promise.all(running.map(metadata));
        lastSummaries = answers.map(summary);
        const first = answers[0]!;
        const settled =
          first.brokers.length === brokerCount &&
          first.controllerId >= 0 &&
          first.topics.every((t) => t.partitions.every((p) => p.leaderId >= 0));
        return new Set(lastSummaries).size === 1 && settled ? first : undefined;
      },
      timeoutMs,
      `consistent metadata over ${brokerCount} brokers`,
    );
  } catch (error) {
    const seen = lastSummaries.map((s, i) => `port ${running[i]!.port}: ${s}`).join("\n");
    throw new Error(`${(error as Error).message}; last answers:\n${seen}`);
  }
}

/**
 * A preferred leader election of every partition, as kafka-leader-election.sh asks it: after
 * kills and restarts, the leaders (of the internal topics too) go back to their first replicas.
 */
export async function preferredLeaders(cluster: Cluster, any: ChildBroker): Promise<void> {
  const { controllerId } = await metadata(any);
  await requestOnce(cluster.brokers.get(controllerId)!.port, ApiKey.ElectLeaders, 2, {
    electionType: 0,
    topicPartitions: null,
    timeoutMs: 30_000,
  });
  const running = [...cluster.brokers.values()].filter((b) => b.running).length;
  await consistentMetadata(cluster, running, 60_000);
}

export async function createTopic(
  broker: ChildBroker,
  name: string,
  partitions: number,
  configs: readonly { name: string; value: string }[] = [],
) {
  const response = await requestOnce(broker.port, ApiKey.CreateTopics, 7, {
    topics: [{ name, numPartitions: partitions, replicationFactor: 3, assignments: [], configs }],
    timeoutMs: 10_000,
    validateOnly: false,
  });
  expect(response.topics[0]!.errorCode).toBe(ErrorCode.NONE);
}

/** The bootstrap list of the brokers still running, as Kafka's tools take it. */
export function runningBootstrap(cluster: Cluster): string {
  return [...cluster.brokers.values()]
    .filter((b) => b.running)
    .map((b) => b.bootstrap)
    .join(",");
}

/** Creates a topic with an explicit replica assignment (one broker list per partition). */
export async function createTopicWithAssignment(
  broker: ChildBroker,
  name: string,
  assignment: readonly (readonly number[])[],
) {
  const response = await requestOnce(broker.port, ApiKey.CreateTopics, 7, {
    topics: [
      {
        name,
        numPartitions: -1,
        replicationFactor: -1,
        assignments: assignment.map((ids, partitionIndex) => ({
          partitionIndex,
          brokerIds: [...ids],
        })),
        configs: [],
      },
    ],
    timeoutMs: 10_000,
    validateOnly: false,
  });
  expect(response.topics[0]!.errorCode).toBe(ErrorCode.NONE);
}

/** One acks=all produce straight to `broker`, without retries; resolves with its error code. */
export async function produceAcksAll(broker: ChildBroker, topic: string, timeoutMs: number) {
  const records = buildRecordBatch([{ value: new TextEncoder().encode("direct") }]);
  const res = await requestOnce(broker.port, ApiKey.Produce, 9, {
    transactionalId: null,
    acks: -1,
    timeoutMs,
    topicData: [{ name: topic, partitionData: [{ index: 0, records }] }],
  });
  return res.responses[0]!.partitionResponses[0]!.errorCode;
}

export async function produceWithKafkajs(cluster: Cluster, topic: string, values: string[]) {
  const bootstrap = runningBootstrap(cluster).split(",");
  const kafka = new Kafka({
    clientId: "three-brokers",
    brokers: bootstrap,
    logLevel: logLevel.NOTHING,
    retry: { retries: 8, initialRetryTime: 200 },
  });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    return await producer.send({ topic, acks: -1, messages: values.map((value) => ({ value })) });
  } finally {
    await producer.disconnect();
  }
}
