// /metrics and /health/ready of a two-broker ZooKeeper cluster (broker processes): records in
// per topic add up to exactly what kafkajs produced, one broker is the active controller, the
// ZooKeeper session shows, and a follower frozen with SIGSTOP makes its leader shrink the ISR
// (under-replicated 1) and expand it again once it runs. The leader is the controller: an ISR
// change is committed by the controller, which a frozen controller could not do. A group's lag
// shows on its coordinator also for a partition only the other broker holds (ListOffsets).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { ChildBroker } from "../support/child-broker.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { freePorts, startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import { createTopicWithAssignment, until } from "./cluster-harness.ts";

let zooKeeper: ZooKeeperServer;
const brokers: { id: number; broker: ChildBroker; admin: string }[] = [];

beforeAll(async () => {
  zooKeeper = await startZooKeeper();
  const ports = await freePorts(2);
  const started = await Promise.all(
    [1, 2].map((id, i) =>
      ChildBroker.start({
        settings: {
          "zookeeper.connect": zooKeeper.connectString,
          "zookeeper.session.timeout.ms": "6000",
          "broker.id": String(id),
          "default.replication.factor": "2",
          "replica.lag.time.max.ms": "1000",
          "admin.listeners": `127.0.0.1:${ports[i]}`,
        },
      }),
    ),
  );
  started.forEach((broker, i) => {
    brokers.push({ id: i + 1, broker, admin: `http://127.0.0.1:${ports[i]}` });
  });
}, 60_000);

afterAll(async () => {
  for (const b of brokers) if (b.broker.running) process.kill(b.broker.pid, "SIGCONT");
  await Promise.all(brokers.map((b) => b.broker.remove()));
  await zooKeeper.stop();
});

async function scrape(admin: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${admin}/metrics`)).text();
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

const sum = (all: Map<string, number>[], name: string) =>
  all.reduce((n, s) => n + (s.get(name) ?? 0), 0);

/** Index in `brokers` of the leader of watched-0, found by the first test. */
let leaderAt = -1;

test("cluster metrics follow known traffic, the controller and ZooKeeper", async () => {
  // Ready means registered and listed live by the controller's UpdateMetadata.
  for (const b of brokers) {
    await until(
      async () => ((await fetch(`${b.admin}/health/ready`)).status === 200 ? true : undefined),
      20_000,
      `broker ${b.id} ready`,
    );
  }
  // The controller leads the partition, so freezing the follower (next test) leaves the
  // AlterPartition path to the controller working.
  const controllerAt = await until(
    async () => {
      const s = await Promise.all(brokers.map((b) => scrape(b.admin)));
      const at = s.findIndex((x) => x.get("quill_active_controller") === 1);
      return at < 0 ? undefined : at;
    },
    15_000,
    "an active controller",
  );
  const replicas = [brokers[controllerAt]!.id, brokers[1 - controllerAt]!.id];
  const created = await requestOnce(brokers[0]!.broker.port, ApiKey.CreateTopics, 7, {
    topics: [
      {
        name: "watched",
        numPartitions: -1,
        replicationFactor: -1,
        assignments: [{ partitionIndex: 0, brokerIds: replicas }],
        configs: [],
      },
    ],
    timeoutMs: 10_000,
    validateOnly: false,
  });
  expect(created.topics[0]!.errorCode).toBe(ErrorCode.NONE);
  const kafka = new Kafka({
    brokers: brokers.map((b) => b.broker.bootstrap),
    logLevel: logLevel.NOTHING,
  });
  const producer = kafka.producer();
  await producer.connect();
  const messages = Array.from({ length: 10 }, (_, i) => ({ partition: 0, value: `m${i}` }));
  await producer.send({ topic: "watched", acks: -1, messages });
  await producer.disconnect();
  const end = '{topic="watched",partition="0"}';
  const all = await until(
    async () => {
      const s = await Promise.all(brokers.map((b) => scrape(b.admin)));
      return s.every((x) => x.get(`quill_log_end_offset${end}`) === 10) ? s : undefined;
    },
    15_000,
    "both replicas at offset 10",
  );
  expect(sum(all, 'quill_topic_records_in_total{topic="watched"}')).toBe(10);
  expect(sum(all, "quill_active_controller")).toBe(1);
  for (const s of all) {
    expect(s.get('quill_zookeeper_session_state{state="connected"}')).toBe(1);
    expect(s.get("quill_zookeeper_request_duration_seconds_count")).toBeGreaterThan(0);
    expect(s.get("quill_brokers")).toBe(2);
    expect(s.get("quill_under_replicated_partitions")).toBe(0);
  }
  const found = all.findIndex(
    (s) =>
      s.get("quill_leader_partitions")! > 0 &&
      s.get(`quill_log_end_offset${end}`) === 10 &&
      s.get('quill_topic_records_in_total{topic="watched"}') === 10,
  );
  expect(found).toBe(controllerAt);
  leaderAt = found;
}, 60_000);

/** Commits `offset` for the group on partition 0 of `topic` through its coordinator. */
async function commitOffset(coordinator: ChildBroker, topic: string, offset: bigint) {
  const committed = await requestOnce(coordinator.port, ApiKey.OffsetCommit, 8, {
    groupId: "cluster-laggard",
    generationIdOrMemberEpoch: -1,
    memberId: "",
    groupInstanceId: null,
    retentionTimeMs: -1n,
    topics: [
      {
        name: topic,
        partitions: [
          {
            partitionIndex: 0,
            committedOffset: offset,
            committedLeaderEpoch: -1,
            committedMetadata: null,
          },
        ],
      },
    ],
  });
  expect(committed.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
}

test("the group's coordinator shows its lag, also where the other broker holds the partition", async () => {
  const found = await requestOnce(brokers[0]!.broker.port, ApiKey.FindCoordinator, 3, {
    key: "cluster-laggard",
    keyType: 0,
    coordinatorKeys: [],
  });
  expect(found.errorCode).toBe(ErrorCode.NONE);
  const coordinator = brokers.find((b) => b.id === found.nodeId)!;
  const other = brokers.find((b) => b.id !== found.nodeId)!;
  // "elsewhere" has its only replica on the other broker: 7 records there, 2 read.
  await createTopicWithAssignment(other.broker, "elsewhere", [[other.id]]);
  const kafka = new Kafka({
    brokers: brokers.map((b) => b.broker.bootstrap),
    logLevel: logLevel.NOTHING,
  });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const messages = Array.from({ length: 7 }, (_, i) => ({ partition: 0, value: `e${i}` }));
  await producer.send({ topic: "elsewhere", acks: -1, messages });
  await producer.disconnect();
  await commitOffset(coordinator.broker, "watched", 4n);
  await commitOffset(coordinator.broker, "elsewhere", 2n);
  const lag = (topic: string) =>
    `quill_consumer_group_lag{group="cluster-laggard",topic="${topic}",partition="0"}`;
  // The coordinator hosts a replica of "watched" (replication factor 2 on 2 brokers): 10
  // records, 4 read. For "elsewhere" it asks the leader with ListOffsets every 10 s.
  await until(
    async () => {
      const samples = await scrape(coordinator.admin);
      return samples.get(lag("watched")) === 6 && samples.get(lag("elsewhere")) === 5
        ? true
        : undefined;
    },
    40_000,
    "lag 6 and 5 on the coordinator",
  );
  const page = await (await fetch(`${coordinator.admin}/console/groups/cluster-laggard`)).text();
  expect(page).toMatch(/data-topic="elsewhere"\s+data-partition="0">5</);
}, 60_000);

test("a frozen follower makes its leader shrink the ISR, and expand it once it runs", async () => {
  expect(leaderAt).toBeGreaterThanOrEqual(0);
  const leader = brokers[leaderAt]!;
  const follower = brokers[1 - leaderAt]!;
  process.kill(follower.broker.pid, "SIGSTOP");
  try {
    await until(
      async () => {
        const s = await scrape(leader.admin);
        return s.get("quill_under_replicated_partitions")! >= 1 &&
          s.get("quill_isr_shrinks_total")! >= 1
          ? true
          : undefined;
      },
      15_000,
      "the leader shrinks the ISR without the frozen follower",
    );
  } finally {
    process.kill(follower.broker.pid, "SIGCONT");
  }
  await until(
    async () => {
      const s = await scrape(leader.admin);
      return s.get("quill_under_replicated_partitions") === 0 &&
        s.get("quill_isr_expands_total")! >= 1
        ? true
        : undefined;
    },
    20_000,
    "the follower back in the ISR",
  );
}, 60_000);
