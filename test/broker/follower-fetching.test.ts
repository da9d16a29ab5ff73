/**
 * Fetching from the closest replica (KIP-392) on three in-process brokers in three racks with a
 * real ZooKeeper: the leader names an in-sync follower in the consumer's rack as preferred read
 * replica, the follower serves v11+ consumers up to its high watermark, older fetches are still
 * refused there, and Kafka 3.9's Java consumer with client.rack reads everything through it.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ensureKafkaDist } from "../../scripts/bench-vs-kafka/kafka-dist.ts";
import type { PartitionIndex } from "../../src/common/branded.ts";
import { RACK_AWARE_REPLICA_SELECTOR } from "../../src/config/broker-config.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { KafkaClient } from "../support/kafka-client.ts";
import { runToolInJvm } from "../support/tool-jvm.ts";
import { waitUntil } from "../support/wait-until.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";

const TOPIC = "racked";
const RECORDS = 10;
let zk: ZooKeeperServer;
const brokers: InProcessBroker[] = [];
let leader: InProcessBroker;
let follower: InProcessBroker;

const partitionOn = (b: InProcessBroker) =>
  b.broker.services.replicaManager.partitionState(TOPIC, 0 as PartitionIndex);

beforeAll(async () => {
  zk = await startZooKeeper();
  for (let id = 0; id < 3; id++) {
    brokers.push(
      await startInProcessBroker({
        settings: {
          "broker.id": String(id),
          "broker.rack": `rack-${id}`,
          "replica.selector.class": RACK_AWARE_REPLICA_SELECTOR,
          "zookeeper.connect": `${zk.connectString}/racks`,
          "default.replication.factor": "3",
          "replica.fetch.wait.max.ms": "100",
        },
      }),
    );
  }
  // The controller may not list the last broker yet: Kafka answers INVALID_REPLICATION_FACTOR
  // then, as Quill does, so ask again until all three are there.
  let createError = -1;
  await waitUntil(
    async () => {
      const admin = await KafkaClient.connect(brokers[0]!.port);
      const created = await admin.request(ApiKey.CreateTopics, 7, {
        topics: [{ name: TOPIC, numPartitions: 1, replicationFactor: 3, configs: [] }],
      });
      admin.close();
      createError = created.topics[0]!.errorCode;
      return createError !== ErrorCode.INVALID_REPLICATION_FACTOR;
    },
    30_000,
    "three live brokers for CreateTopics",
    200,
  );
  expect(createError).toBe(ErrorCode.NONE);
  await waitUntil(() => brokers.some((b) => partitionOn(b)?.isLeader === true), 30_000, "a leader");
  leader = brokers.find((b) => partitionOn(b)!.isLeader)!;
  follower = brokers.find((b) => b !== leader)!;
  // acks=-1 waits for every ISR member: let both followers fetch once before producing.
  const followerIds = brokers.filter((b) => b !== leader).map((b) => b.broker.services.brokerId);
  await waitUntil(
    () => followerIds.every((id) => (partitionOn(leader)?.follower(id)?.logEndOffset ?? -1n) >= 0n),
    30_000,
    "both followers fetching",
  );
  const client = await KafkaClient.connect(leader.port);
  const records = buildRecordBatch(
    Array.from({ length: RECORDS }, (_, i) => ({ value: new TextEncoder().encode(`v${i}`) })),
  );
  const res = await client.request(ApiKey.Produce, 9, {
    transactionalId: null,
    acks: -1,
    timeoutMs: 10_000,
    topicData: [{ name: TOPIC, partitionData: [{ index: 0, records }] }],
  });
  client.close();
  expect(res.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.NONE);
  await waitUntil(
    () => brokers.every((b) => partitionOn(b)?.log.highWatermark === BigInt(RECORDS)),
    30_000,
    "every replica's high watermark",
  );
}, 120_000);

afterAll(async () => {
  for (const b of brokers) await b.stop();
  await zk?.stop();
}, 30_000);

async function fetchFrom(b: InProcessBroker, rackId: string, version = 12) {
  const client = await KafkaClient.connect(b.port);
  try {
    const res = await client.request(ApiKey.Fetch, version, {
      replicaId: -1,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [
        {
          topic: TOPIC,
          partitions: [
            {
              partition: 0,
              currentLeaderEpoch: -1,
              fetchOffset: 0n,
              lastFetchedEpoch: -1,
              logStartOffset: -1n,
              partitionMaxBytes: 1 << 20,
            },
          ],
        },
      ],
      forgottenTopicsData: [],
      rackId,
    });
    return res.responses[0]!.partitions[0]!;
  } finally {
    client.close();
  }
}

const sizeOf = (records: unknown) => (records instanceof Uint8Array ? records.byteLength : 0);
const rackOf = (b: InProcessBroker) => `rack-${b.broker.services.brokerId}`;

test("the leader points a consumer to the follower in its rack, which serves it", async () => {
  const pointed = await fetchFrom(leader, rackOf(follower));
  expect(pointed.errorCode).toBe(ErrorCode.NONE);
  expect(pointed.preferredReadReplica).toBe(follower.broker.services.brokerId);
  expect(sizeOf(pointed.records)).toBe(0);
  const served = await fetchFrom(follower, rackOf(follower));
  expect(served).toMatchObject({ errorCode: ErrorCode.NONE, highWatermark: BigInt(RECORDS) });
  expect(sizeOf(served.records)).toBeGreaterThan(0);
  // The leader's own rack, or no rack: the leader serves.
  const own = await fetchFrom(leader, rackOf(leader));
  expect(own.preferredReadReplica).toBe(-1);
  expect(sizeOf(own.records)).toBeGreaterThan(0);
  expect((await fetchFrom(leader, "")).preferredReadReplica).toBe(-1);
  // Before v11 a consumer may read only from the leader.
  expect((await fetchFrom(follower, "", 10)).errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
});

test("Kafka's Java consumer with client.rack reads every record from its rack's follower", async () => {
  const dist = await ensureKafkaDist();
  if ("missing" in dist) throw new Error(`Kafka's tools are not available: ${dist.missing}`);
  const bytesOut = () =>
    follower.broker.services.metrics.topicTraffic(() => true).find(([t]) => t === TOPIC)?.[1]
      .bytesOut ?? 0;
  const before = bytesOut();
  const args = [
    ...["--bootstrap-server", leader.bootstrap, "--topic", TOPIC, "--from-beginning"],
    ...["--max-messages", String(RECORDS), "--timeout-ms", "60000"],
    ...["--consumer-property", `client.rack=${rackOf(follower)}`],
  ];
  const tool = "org.apache.kafka.tools.consumer.ConsoleConsumer";
  const { code, stdout: out, stderr: err } = await runToolInJvm(dist.classpath, tool, args);
  expect(code, err).toBe(0);
  const values = out.split("\n").filter((l) => l !== "");
  expect(values).toEqual(Array.from({ length: RECORDS }, (_, i) => `v${i}`));
  expect(bytesOut()).toBeGreaterThan(before);
}, 120_000);
