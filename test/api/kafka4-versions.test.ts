// The versions Kafka 4 clients send that Quill serves beyond 3.9's: each is answered as its
// version note says (the Java 4.4 client's run is test/e2e/kafka4-java.test.ts).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { KafkaClient } from "../support/kafka-client.ts";
import { waitUntil } from "../support/wait-until.ts";

let b: InProcessBroker;
let client: KafkaClient;
beforeAll(async () => {
  b = await startInProcessBroker({ settings: { "transaction.state.log.num.partitions": "1" } });
  client = await KafkaClient.connect(b.port);
  const created = await client.request(ApiKey.CreateTopics, 7, {
    topics: [{ name: "k4", numPartitions: 1, replicationFactor: 1 }],
  });
  expect(created.topics[0]!.errorCode).toBe(ErrorCode.NONE);
}, 60_000);
afterAll(async () => {
  client?.close();
  await b?.stop();
});

test("ApiVersions advertises the Kafka 4 versions the handlers implement", async () => {
  const res = await client.request(ApiKey.ApiVersions, 4, {
    clientSoftwareName: "apache-kafka-java",
    clientSoftwareVersion: "4.4.0",
  });
  const max = new Map(res.apiKeys.map((k) => [k.apiKey, k.maxVersion]));
  expect(max.get(ApiKey.Produce)).toBe(13);
  expect(max.get(ApiKey.ApiVersions)).toBe(5);
  expect(max.get(ApiKey.DescribeCluster)).toBe(2);
  expect(max.get(ApiKey.DescribeLogDirs)).toBe(5);
  expect(max.get(ApiKey.ListTransactions)).toBe(2);
  expect(max.get(ApiKey.Fetch)).toBe(18);
  expect(max.get(ApiKey.ListOffsets)).toBe(11);
  expect(max.get(ApiKey.Metadata)).toBe(13);
  expect(max.get(ApiKey.DescribeGroups)).toBe(6);
  expect(max.get(ApiKey.OffsetCommit)).toBe(10);
  expect(max.get(ApiKey.OffsetFetch)).toBe(10);
  expect(max.get(ApiKey.ConsumerGroupHeartbeat)).toBe(1);
});

test("Metadata v13 answers with a top-level error code of NONE", async () => {
  const res = await client.request(ApiKey.Metadata, 13, { topics: [{ name: "k4" }] });
  expect(res.errorCode).toBe(ErrorCode.NONE);
  expect(res.topics.map((t) => [t.name, t.errorCode])).toEqual([["k4", ErrorCode.NONE]]);
});

test("ListOffsets v11: EARLIEST_PENDING_UPLOAD (-6) is offset -1 without tiered storage", async () => {
  const ask = (timestamp: bigint) =>
    client.request(ApiKey.ListOffsets, 11, {
      replicaId: -1,
      topics: [{ name: "k4", partitions: [{ partitionIndex: 0, timestamp }] }],
    });
  const pending = (await ask(-6n)).topics[0]!.partitions[0]!;
  expect([pending.errorCode, pending.offset]).toEqual([ErrorCode.NONE, -1n]);
  const latest = (await ask(-1n)).topics[0]!.partitions[0]!;
  expect([latest.errorCode, latest.offset]).toEqual([ErrorCode.NONE, 0n]);
});

test("DescribeGroups v6: an unknown group is GROUP_ID_NOT_FOUND with a message", async () => {
  const v6 = await client.request(ApiKey.DescribeGroups, 6, { groups: ["nobody"] });
  expect(v6.groups[0]).toMatchObject({
    groupId: "nobody",
    errorCode: ErrorCode.GROUP_ID_NOT_FOUND,
    errorMessage: "Group nobody not found.",
  });
  const v5 = await client.request(ApiKey.DescribeGroups, 5, { groups: ["nobody"] });
  expect(v5.groups[0]).toMatchObject({ errorCode: ErrorCode.NONE, groupState: "Dead" });
  const del = await client.request(ApiKey.DeleteGroups, 3, { groupsNames: ["nobody"] });
  expect(del.results).toEqual([
    { groupId: "nobody", errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: null },
  ]);
});

test("OffsetCommit and OffsetFetch v10 name topics by id; an unknown id is UNKNOWN_TOPIC_ID", async () => {
  const meta = await client.request(ApiKey.Metadata, 13, { topics: [{ name: "k4" }] });
  const topicId = meta.topics[0]!.topicId;
  const stranger = new Uint8Array(16).fill(9);
  const commit = await client.request(ApiKey.OffsetCommit, 10, {
    groupId: "g10",
    generationIdOrMemberEpoch: -1,
    topics: [
      { topicId, partitions: [{ partitionIndex: 0, committedOffset: 7n }] },
      { topicId: stranger, partitions: [{ partitionIndex: 0, committedOffset: 1n }] },
    ],
  });
  expect(commit.topics.map((t) => [t.topicId, t.partitions[0]!.errorCode])).toEqual([
    [topicId, ErrorCode.NONE],
    [stranger, ErrorCode.UNKNOWN_TOPIC_ID],
  ]);
  const fetched = await client.request(ApiKey.OffsetFetch, 10, {
    groups: [{ groupId: "g10", topics: [{ topicId, partitionIndexes: [0] }] }],
  });
  const topic = fetched.groups[0]!.topics[0]!;
  expect(topic.topicId).toEqual(topicId);
  expect(topic.partitions[0]).toMatchObject({ committedOffset: 7n, errorCode: ErrorCode.NONE });
  const all = await client.request(ApiKey.OffsetFetch, 10, {
    groups: [{ groupId: "g10", topics: null }],
  });
  expect(all.groups[0]!.topics.map((t) => t.topicId)).toEqual([topicId]);
});

test("OffsetFetch v9+ checks a KIP-848 member's id and epoch; admin fetches are not", async () => {
  const commit = await client.request(ApiKey.OffsetCommit, 9, {
    groupId: "g9",
    generationIdOrMemberEpoch: -1,
    memberId: "",
    topics: [{ name: "k4", partitions: [{ partitionIndex: 0, committedOffset: 5n }] }],
  });
  expect(commit.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
  const joined = await client.request(ApiKey.ConsumerGroupHeartbeat, 1, {
    groupId: "g9",
    memberId: "m9",
    memberEpoch: 0,
    rebalanceTimeoutMs: 30_000,
    subscribedTopicNames: ["k4"],
  });
  expect(joined.errorCode).toBe(ErrorCode.NONE);
  const fetch = async (version: 9 | 10, memberId: string | null, memberEpoch: number) => {
    const topics = version === 9 ? [{ name: "k4", partitionIndexes: [0] }] : null; // v10: all
    const res = await client.request(ApiKey.OffsetFetch, version, {
      groups: [{ groupId: "g9", memberId, memberEpoch, topics }],
    });
    const group = res.groups[0]!;
    return [group.errorCode, group.topics[0]?.partitions[0]?.committedOffset ?? -1n];
  };
  const epoch = joined.memberEpoch;
  for (const version of [9, 10] as const) {
    expect(await fetch(version, "m9", epoch)).toEqual([ErrorCode.NONE, 5n]);
    expect(await fetch(version, null, -1)).toEqual([ErrorCode.NONE, 5n]);
    expect(await fetch(version, "m9", epoch - 1)).toEqual([ErrorCode.STALE_MEMBER_EPOCH, -1n]);
    expect(await fetch(version, "m9", epoch + 1)).toEqual([ErrorCode.STALE_MEMBER_EPOCH, -1n]);
    expect(await fetch(version, "ghost", epoch)).toEqual([ErrorCode.UNKNOWN_MEMBER_ID, -1n]);
  }
  // Classic groups (and groups this coordinator has no members of) are not checked.
  const classic = await client.request(ApiKey.OffsetFetch, 9, {
    groups: [{ groupId: "g10", memberId: "ghost", memberEpoch: 3, topics: null }],
  });
  expect(classic.groups[0]!.errorCode).toBe(ErrorCode.NONE);
});

test("ApiVersions v5: a client that names another cluster or node must rebootstrap", async () => {
  const ask = (clusterId: string | null, nodeId: number) =>
    client.request(ApiKey.ApiVersions, 5, {
      clientSoftwareName: "apache-kafka-java",
      clientSoftwareVersion: "4.4.0",
      clusterId,
      nodeId,
    });
  const { clusterId, brokerId } = b.broker.services;
  const right = await ask(clusterId, brokerId);
  expect(right.errorCode).toBe(ErrorCode.NONE);
  expect(right.apiKeys.find((k) => k.apiKey === ApiKey.ApiVersions)?.maxVersion).toBe(5);
  expect((await ask(null, -1)).errorCode).toBe(ErrorCode.NONE);
  for (const [c, n] of [
    ["another-cluster", brokerId],
    [clusterId, brokerId + 1],
  ] as const) {
    const res = await ask(c, n);
    expect([res.errorCode, res.apiKeys.length]).toEqual([ErrorCode.REBOOTSTRAP_REQUIRED, 0]);
  }
  // Both or neither, as Kafka's ApiVersionsRequest.isValid.
  expect((await ask(clusterId, -1)).errorCode).toBe(ErrorCode.INVALID_REQUEST);
  expect((await ask(null, brokerId)).errorCode).toBe(ErrorCode.INVALID_REQUEST);
});

test("DescribeCluster v2 and DescribeLogDirs v5: no broker is fenced, no dir cordoned", async () => {
  const cluster = await client.request(ApiKey.DescribeCluster, 2, {
    endpointType: 1,
    includeFencedBrokers: true,
  });
  expect(cluster.errorCode).toBe(ErrorCode.NONE);
  expect(cluster.brokers.map((x) => [x.brokerId, x.port, x.isFenced])).toEqual([
    [b.broker.services.brokerId, b.port, false],
  ]);
  const dirs = await client.request(ApiKey.DescribeLogDirs, 5, {
    topics: [{ topic: "k4", partitions: [0] }],
  });
  expect(dirs.results.map((d) => [d.errorCode, d.isCordoned])).toEqual([[ErrorCode.NONE, false]]);
  expect(dirs.results[0]!.topics.map((t) => t.name)).toEqual(["k4"]);
  expect(dirs.results[0]!.totalBytes).toBeGreaterThan(0n);
});

test("ListTransactions v2: TransactionalIdPattern filters ids; a bad pattern is refused", async () => {
  for (const id of ["orders-1", "orders-2", "billing-1"]) {
    // FindCoordinator creates __transaction_state; COORDINATOR_NOT_AVAILABLE until it is led.
    await waitUntil(
      async () => {
        await client.request(ApiKey.FindCoordinator, 4, { keyType: 1, coordinatorKeys: [id] });
        const init = await client.request(ApiKey.InitProducerId, 5, {
          transactionalId: id,
          transactionTimeoutMs: 60_000,
        });
        return init.errorCode === ErrorCode.NONE;
      },
      10_000,
      `InitProducerId ${id}`,
    );
  }
  const list = async (transactionalIdPattern: string | null) => {
    const res = await client.request(ApiKey.ListTransactions, 2, { transactionalIdPattern });
    return { errorCode: res.errorCode, ids: res.transactionStates.map((t) => t.transactionalId) };
  };
  expect((await list("orders-.*")).ids.sort()).toEqual(["orders-1", "orders-2"]);
  // A whole-id match, as RE2/J's matches(): "orders" alone matches nothing.
  expect((await list("orders")).ids).toEqual([]);
  expect((await list(null)).ids.length).toBe(3);
  expect((await list("")).ids.length).toBe(3);
  for (const bad of ["orders-(", "(a*)*b", "(a|aa)+", "(x)\\1"]) {
    expect(await list(bad)).toEqual({ errorCode: ErrorCode.INVALID_REGULAR_EXPRESSION, ids: [] });
  }
}, 30_000);

test("Produce v13 names topics by id; an unknown id is UNKNOWN_TOPIC_ID", async () => {
  const meta = await client.request(ApiKey.Metadata, 13, { topics: [{ name: "k4" }] });
  const topicId = meta.topics[0]!.topicId;
  const stranger = new Uint8Array(16).fill(7);
  const records = buildRecordBatch([{ key: null, value: new TextEncoder().encode("v13") }]);
  const res = await client.request(ApiKey.Produce, 13, {
    transactionalId: null,
    acks: 1,
    timeoutMs: 5_000,
    topicData: [
      { topicId, partitionData: [{ index: 0, records }] },
      { topicId: stranger, partitionData: [{ index: 0, records }] },
    ],
  });
  expect(res.responses.map((t) => [t.topicId, t.partitionResponses[0]!.errorCode])).toEqual([
    [topicId, ErrorCode.NONE],
    [stranger, ErrorCode.UNKNOWN_TOPIC_ID],
  ]);
  const offset = res.responses[0]!.partitionResponses[0]!.baseOffset;
  const fetched = await client.request(ApiKey.Fetch, 18, {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 0,
    topics: [{ topicId, partitions: [{ partition: 0, fetchOffset: offset }] }],
  });
  const part = fetched.responses[0]!.partitions[0]!;
  expect(part.errorCode).toBe(ErrorCode.NONE);
  expect((part.records as Uint8Array).length).toBe(records.length);
});

test("Metadata v13 by topic id with an empty name (the Java 4 consumer's form) answers the topic", async () => {
  const meta = await client.request(ApiKey.Metadata, 13, { topics: [{ name: "k4" }] });
  const topicId = meta.topics[0]!.topicId;
  const stranger = new Uint8Array(16).fill(5);
  const byId = await client.request(ApiKey.Metadata, 13, {
    topics: [
      { name: "", topicId },
      { name: "", topicId: stranger },
    ],
  });
  // An unknown id keeps the name it was asked with: a null name stops the Java consumer.
  expect(byId.topics.map((t) => [t.name, t.errorCode])).toEqual([
    ["k4", ErrorCode.NONE],
    ["", ErrorCode.UNKNOWN_TOPIC_ID],
  ]);
});
