// ShareFetch and ShareAcknowledge on the wire against an in-process broker: acquisition,
// share-session epochs and their errors, acknowledgements, the long poll, and the share-partition
// state surviving a clean restart (embedded mode keeps it in the data dir).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { RecordState } from "../../src/server/share-partition.ts";
import {
  acquiredRecords,
  KafkaClient,
  type ShareAck,
  shareFetchPartition0,
  startTestBroker,
  type TestBroker,
} from "../support/kafka-client.ts";

const TOPIC = "queue";
const GROUP = "sg";
let b: TestBroker;
let client: KafkaClient;
let topicId: Uint8Array;

/** Creates a topic of one partition and returns its id. */
async function createTopic(name: string): Promise<Uint8Array> {
  await client.request(ApiKey.CreateTopics, 7, {
    topics: [{ name, numPartitions: 1, replicationFactor: 1 }],
    timeoutMs: 5000,
  });
  return b.broker.services.metadataCache.topic(name)!.topicId;
}

/** Produces `count` records valued "0", "1", ... to partition 0 of `topic`. */
async function produceNumbered(topic: string, count: number): Promise<void> {
  const records = Array.from({ length: count }, (_, i) => ({
    value: new TextEncoder().encode(`${i}`),
  }));
  await client.request(ApiKey.Produce, 9, {
    acks: 1,
    timeoutMs: 5000,
    topicData: [{ name: topic, partitionData: [{ index: 0, records: buildRecordBatch(records) }] }],
  });
}

beforeAll(async () => {
  b = await startTestBroker({ "group.share.record.lock.duration.ms": "60000" });
  client = await KafkaClient.connect(b.port);
  topicId = await createTopic(TOPIC);
  // Joining assigns the partition, whose state starts at the log end (latest): 0.
  expect((await heartbeat("m1")).errorCode).toBe(ErrorCode.NONE);
  await produceNumbered(TOPIC, 5);
});

afterAll(async () => {
  client.close();
  await b.stop();
});

function heartbeat(memberId: string) {
  return client.request(ApiKey.ShareGroupHeartbeat, 1, {
    groupId: GROUP,
    memberId,
    memberEpoch: 0,
    subscribedTopicNames: [TOPIC],
  });
}

type Ack = ShareAck;

function shareFetch(memberId: string, epoch: number, acks: Ack[] = [], maxWaitMs = 0) {
  return shareFetchPartition0(client, {
    groupId: GROUP,
    memberId,
    topicId,
    epoch,
    maxWaitMs,
    acks,
  });
}

function acknowledge(memberId: string, epoch: number, acks: Ack[]) {
  return client.request(ApiKey.ShareAcknowledge, 1, {
    groupId: GROUP,
    memberId,
    shareSessionEpoch: epoch,
    topics: [{ topicId, partitions: [{ partitionIndex: 0, acknowledgementBatches: acks }] }],
  });
}

const ack = (first: bigint, last: bigint, type: number): Ack => ({
  firstOffset: first,
  lastOffset: last,
  acknowledgeTypes: [type],
});

test("fetch acquires, sessions check epochs, acknowledgements apply, the state survives a restart", async () => {
  const first = await shareFetch("m1", 0);
  expect(first.errorCode).toBe(ErrorCode.NONE);
  const part = first.responses[0]!.partitions[0]!;
  expect(part.acquiredRecords).toEqual([{ firstOffset: 0n, lastOffset: 4n, deliveryCount: 1 }]);
  expect((part.records as Uint8Array).length).toBeGreaterThan(0);

  expect((await shareFetch("m1", 5)).errorCode).toBe(ErrorCode.INVALID_SHARE_SESSION_EPOCH);
  expect((await shareFetch("nobody", 1)).errorCode).toBe(ErrorCode.SHARE_SESSION_NOT_FOUND);
  expect((await acknowledge("m1", 0, [])).errorCode).toBe(ErrorCode.INVALID_SHARE_SESSION_EPOCH);
  const opening = await shareFetch("m2", 0, [ack(0n, 0n, 1)]);
  expect(opening.errorCode).toBe(ErrorCode.INVALID_REQUEST);

  // Accept 0-1, reject 2: the start moves to 3. Acknowledging 0 again is too late.
  const acked = await acknowledge("m1", 1, [ack(0n, 1n, 1), ack(2n, 2n, 3)]);
  expect(acked.errorCode).toBe(ErrorCode.NONE);
  expect(acked.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
  const again = await acknowledge("m1", 2, [ack(0n, 0n, 1)]);
  expect(again.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.INVALID_RECORD_STATE);
  const sp = b.broker.services.sharePartitionManager.sharePartition(GROUP, TOPIC, 0)!;
  expect(sp.startOffset).toBe(3n);

  // 3 and 4 are still m1's: nothing to acquire, so the fetch waits out MaxWaitMs.
  const started = Date.now();
  const waited = await shareFetch("m1", 3, [], 300);
  expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  expect(waited.responses.flatMap((t) => t.partitions)).toEqual([]);

  client.close();
  b = await b.restart();
  client = await KafkaClient.connect(b.port);
  // The locks did not survive, the rest did: 3 and 4 come back with their second delivery.
  expect((await heartbeat("m3")).errorCode).toBe(ErrorCode.NONE);
  const after = await shareFetch("m3", 0);
  expect(after.responses[0]!.partitions[0]!.acquiredRecords).toEqual([
    { firstOffset: 3n, lastOffset: 4n, deliveryCount: 2 },
  ]);
}, 30_000);

test("share-group offsets: described, and deleted only once the group has no members", async () => {
  const describe = await client.request(ApiKey.DescribeShareGroupOffsets, 1, {
    groups: [{ groupId: GROUP, topics: null }],
  });
  const row = describe.groups[0]!.topics[0]!.partitions[0]!;
  expect(row.startOffset).toBe(3n);
  expect(row.lag).toBe(2n);
  const del = () =>
    client.request(ApiKey.DeleteShareGroupOffsets, 0, {
      groupId: GROUP,
      topics: [{ topicName: TOPIC }],
    });
  expect((await del()).errorCode).toBe(ErrorCode.NON_EMPTY_GROUP);
  const leave = await client.request(ApiKey.ShareGroupHeartbeat, 1, {
    groupId: GROUP,
    memberId: "m3",
    memberEpoch: -1,
  });
  expect(leave.errorCode).toBe(ErrorCode.NONE);
  expect((await del()).responses[0]!.errorCode).toBe(ErrorCode.NONE);
  const shares = b.broker.services.sharePartitionManager;
  expect(shares.sharePartition(GROUP, TOPIC, 0)).toBeUndefined();
});

test("share.auto.offset.reset=earliest, a group config, starts a new group at the log start", async () => {
  const alter = (value: string) =>
    client.request(ApiKey.IncrementalAlterConfigs, 1, {
      resources: [
        {
          resourceType: 32,
          resourceName: "sg-earliest",
          configs: [{ name: "share.auto.offset.reset", configOperation: 0, value }],
        },
      ],
    });
  expect((await alter("sometimes")).responses[0]!.errorCode).toBe(ErrorCode.INVALID_CONFIG);
  expect((await alter("earliest")).responses[0]!.errorCode).toBe(ErrorCode.NONE);
  const joined = await client.request(ApiKey.ShareGroupHeartbeat, 1, {
    groupId: "sg-earliest",
    memberId: "e1",
    memberEpoch: 0,
    subscribedTopicNames: [TOPIC],
  });
  expect(joined.errorCode).toBe(ErrorCode.NONE);
  const shares = b.broker.services.sharePartitionManager;
  expect(shares.sharePartition("sg-earliest", TOPIC, 0)!.startOffset).toBe(0n);
  // Kept in the data dir across a restart.
  client.close();
  b = await b.restart();
  client = await KafkaClient.connect(b.port);
  expect(b.broker.services.sharePartitionManager.groupConfigs.autoOffsetReset("sg-earliest")).toBe(
    "earliest",
  );
});

/** A topic of 150 records and a share group whose in-flight window is 100 records. */
async function windowGroup(group: string, topic: string): Promise<Uint8Array> {
  const id = await createTopic(topic);
  const window = await client.request(ApiKey.IncrementalAlterConfigs, 1, {
    resources: [
      {
        resourceType: 32,
        resourceName: group,
        configs: [{ name: "share.partition.max.record.locks", configOperation: 0, value: "100" }],
      },
    ],
  });
  expect(window.responses[0]!.errorCode).toBe(ErrorCode.NONE);
  const joined = await client.request(ApiKey.ShareGroupHeartbeat, 1, {
    groupId: group,
    memberId: "a",
    memberEpoch: 0,
    subscribedTopicNames: [topic],
  });
  expect(joined.errorCode).toBe(ErrorCode.NONE);
  await produceNumbered(topic, 150);
  return id;
}

test("a full in-flight window: a holder's waiting fetch ends for its acknowledgements, which wake the starved member", async () => {
  const group = "sg-window";
  const id = await windowGroup(group, "window");
  // One connection per member: a Kafka client has one request in flight per broker.
  const [ca, cb] = [await KafkaClient.connect(b.port), await KafkaClient.connect(b.port)];
  const fetch = (c: KafkaClient, member: string, epoch: number, maxWaitMs: number) =>
    shareFetchPartition0(c, { groupId: group, memberId: member, topicId: id, epoch, maxWaitMs });
  const acquired = acquiredRecords;
  try {
    // a fills the window (100 records) and fetches ahead, as the Java client does.
    expect(acquired(await fetch(ca, "a", 0, 0))).toEqual([
      { firstOffset: 0n, lastOffset: 99n, deliveryCount: 1 },
    ]);
    const ahead = fetch(ca, "a", 1, 120_000);
    await Bun.sleep(50);
    // b finds the window full: a's waiting fetch ends (empty) long before its 120 s, so a can
    // send its acknowledgements; b keeps waiting and gets the records they make room for.
    const starved = fetch(cb, "b", 0, 120_000);
    expect(acquired(await ahead)).toEqual([]);
    const acked = await ca.request(ApiKey.ShareAcknowledge, 1, {
      groupId: group,
      memberId: "a",
      shareSessionEpoch: 2,
      topics: [
        {
          topicId: id,
          partitions: [{ partitionIndex: 0, acknowledgementBatches: [ack(0n, 99n, 1)] }],
        },
      ],
    });
    expect(acked.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    expect(acquired(await starved)).toEqual([
      { firstOffset: 100n, lastOffset: 149n, deliveryCount: 1 },
    ]);
  } finally {
    ca.close();
    cb.close();
  }
}, 30_000);

test("v2: RENEW keeps a record the member's under IsRenewAck only; renewing fetches nothing", async () => {
  const group = "sg-renew";
  const id = await windowGroup(group, "renew");
  const c = await KafkaClient.connect(b.port);
  const partitions = (acks: Ack[]) => [
    { topicId: id, partitions: [{ partitionIndex: 0, acknowledgementBatches: acks }] },
  ];
  const fetch = (epoch: number, fields: Record<string, unknown>, acks: Ack[] = []) =>
    c.request(ApiKey.ShareFetch, 2, {
      groupId: group,
      memberId: "r",
      shareSessionEpoch: epoch,
      maxWaitMs: 0,
      minBytes: 1,
      maxBytes: 1 << 20,
      maxRecords: 10,
      batchSize: 10,
      shareAcquireMode: 1,
      isRenewAck: false,
      topics: partitions(acks),
      ...fields,
    });
  const renewOnly = { minBytes: 0, maxBytes: 0, maxRecords: 0, isRenewAck: true };
  const acknowledge = (epoch: number, isRenewAck: boolean, acks: Ack[], version = 2) =>
    c.request(ApiKey.ShareAcknowledge, version, {
      groupId: group,
      memberId: "r",
      shareSessionEpoch: epoch,
      isRenewAck,
      topics: partitions(acks),
    });
  const ackError = (r: { responses: { partitions: { errorCode: number }[] }[] }) =>
    r.responses[0]!.partitions[0]!.errorCode;
  try {
    expect((await fetch(0, { shareAcquireMode: 7 })).errorCode).toBe(ErrorCode.INVALID_REQUEST);
    const got = await fetch(0, {});
    expect(got.responses[0]!.partitions[0]!.acquiredRecords).toEqual([
      { firstOffset: 0n, lastOffset: 9n, deliveryCount: 1 },
    ]);
    // IsRenewAck with fetch fields set is refused as a whole (Kafka's check).
    const mixed = await fetch(1, { isRenewAck: true }, [ack(0n, 0n, 4)]);
    expect(mixed.errorCode).toBe(ErrorCode.INVALID_REQUEST);
    expect(mixed.errorMessage).toContain("maxRecords must be set to 0");
    // RENEW needs IsRenewAck (and v2).
    expect(ackError(await acknowledge(1, false, [ack(0n, 0n, 4)]))).toBe(ErrorCode.INVALID_REQUEST);
    expect(ackError(await acknowledge(2, false, [ack(0n, 0n, 4)], 1))).toBe(
      ErrorCode.INVALID_REQUEST,
    );
    const renewed = await fetch(3, renewOnly, [ack(0n, 4n, 4)]);
    expect(renewed.errorCode).toBe(ErrorCode.NONE);
    const part = renewed.responses[0]!.partitions[0]!;
    expect(part.acknowledgeErrorCode).toBe(ErrorCode.NONE);
    expect(part.acquiredRecords).toEqual([]);
    const sp = b.broker.services.sharePartitionManager.sharePartition(group, "renew", 0)!;
    expect(sp.stateOf(0n)).toEqual({ state: RecordState.ACQUIRED, deliveryCount: 1 });
    const renewAck = await acknowledge(4, true, [ack(5n, 9n, 4)]);
    expect(ackError(renewAck)).toBe(ErrorCode.NONE);
    expect(renewAck.acquisitionLockTimeoutMs).toBe(60_000);
    // Still the member's: it accepts them all and the start moves past them.
    expect(ackError(await acknowledge(5, false, [ack(0n, 9n, 1)]))).toBe(ErrorCode.NONE);
    expect(sp.startOffset).toBe(10n);
  } finally {
    c.close();
  }
}, 30_000);

test("a share session ends with its connection: the member's records come back at once, unless a new session replaced it", async () => {
  const group = "sg-disconnect";
  const id = await createTopic("disconnect");
  const joined = await client.request(ApiKey.ShareGroupHeartbeat, 1, {
    groupId: group,
    memberId: "d1",
    memberEpoch: 0,
    subscribedTopicNames: ["disconnect"],
  });
  expect(joined.errorCode).toBe(ErrorCode.NONE);
  await produceNumbered("disconnect", 3);
  const fetch = (c: KafkaClient, member: string, epoch: number, acks: Ack[] = []) =>
    shareFetchPartition0(c, {
      groupId: group,
      memberId: member,
      topicId: id,
      epoch,
      maxWaitMs: 0,
      acks,
    });
  const acquired = acquiredRecords;
  const [first, second, other] = await Promise.all(
    [0, 1, 2].map(() => KafkaClient.connect(b.port)),
  );
  try {
    expect(acquired(await fetch(first!, "d1", 0))).toEqual([
      { firstOffset: 0n, lastOffset: 2n, deliveryCount: 1 },
    ]);
    // d1 comes back on a new connection before the old one is seen to close: its new session
    // replaces the old, and the records stay d1's (Kafka's initial-epoch replacement).
    expect(acquired(await fetch(second!, "d1", 0))).toEqual([]);
    expect(acquired(await fetch(other!, "d2", 0))).toEqual([]);
    // The old connection closing does not end the new session.
    first!.close();
    await Bun.sleep(200);
    expect(acquired(await fetch(other!, "d2", 1))).toEqual([]);
    const accepted = await fetch(second!, "d1", 1, [ack(0n, 0n, 1)]);
    expect(accepted.responses[0]!.partitions[0]!.acknowledgeErrorCode).toBe(ErrorCode.NONE);
    // The connection of the live session closes: 1 and 2 are released at once, not after the
    // 60 s lock, and d2 gets them on their second delivery.
    second!.close();
    await Bun.sleep(200);
    expect(acquired(await fetch(other!, "d2", 2))).toEqual([
      { firstOffset: 1n, lastOffset: 2n, deliveryCount: 2 },
    ]);
  } finally {
    for (const c of [first, second, other]) c!.close();
  }
}, 30_000);
