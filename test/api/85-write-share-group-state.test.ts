// The share coordinator's APIs on the wire (Initialize/Read/Write/DeleteShareGroupState and
// ReadShareGroupStateSummary) against an in-process broker that leads every __share_group_state
// partition: FindCoordinator key type 2 creates the topic and names the broker; a write is read
// back, its summary too; a deposed leader's write (older leader epoch) is FENCED_LEADER_EPOCH
// and an old state epoch FENCED_STATE_EPOCH; an oversized state is INVALID_REQUEST; a delete
// forgets the state but not its state epoch (a leader holding the deleted state is fenced); the
// state survives a restart (it is in the log, read back when the partitions are loaded).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { coordinatorKey } from "../../src/coordinator/share-state-log.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { KafkaClient, startTestBroker, type TestBroker } from "../support/kafka-client.ts";
import { waitUntil } from "../support/wait-until.ts";

const GROUP = "sg";
const topicId = new Uint8Array(16).fill(7);
let b: TestBroker;
let client: KafkaClient;

beforeAll(async () => {
  b = await startTestBroker({ "share.coordinator.state.topic.num.partitions": "2" });
  client = await KafkaClient.connect(b.port);
});

afterAll(async () => {
  client.close();
  await b.stop();
});

const batch = (first: bigint, last: bigint, deliveryState: number, deliveryCount: number) => ({
  firstOffset: first,
  lastOffset: last,
  deliveryState,
  deliveryCount,
});

async function write(leaderEpoch: number, stateEpoch: number, batches: unknown[]) {
  const res = await client.request(ApiKey.WriteShareGroupState, 1, {
    groupId: GROUP,
    topics: [
      {
        topicId,
        partitions: [
          {
            partition: 0,
            stateEpoch,
            leaderEpoch,
            startOffset: 10n,
            deliveryCompleteCount: -1,
            stateBatches: batches as ReturnType<typeof batch>[],
          },
        ],
      },
    ],
  });
  return res.results[0]!.partitions[0]!.errorCode;
}

async function read(leaderEpoch: number) {
  const res = await client.request(ApiKey.ReadShareGroupState, 0, {
    groupId: GROUP,
    topics: [{ topicId, partitions: [{ partition: 0, leaderEpoch }] }],
  });
  return res.results[0]!.partitions[0]!;
}

test("FindCoordinator key type 2 creates __share_group_state and names this broker", async () => {
  const key = coordinatorKey({ groupId: GROUP, topicId, partition: 0 });
  const res = await client.request(ApiKey.FindCoordinator, 6, {
    keyType: 2,
    coordinatorKeys: [key],
  });
  expect(res.coordinators[0]!.errorCode).toBe(ErrorCode.NONE);
  expect(res.coordinators[0]!.nodeId).toBe(b.broker.services.brokerId);
  expect(b.broker.services.metadataCache.topic("__share_group_state")?.partitions).toHaveLength(2);
});

test("a write is read back; older leader and state epochs are fenced; oversized is refused", async () => {
  expect((await read(3)).startOffset).toBe(-1n);
  expect(await write(3, 1, [batch(10n, 12n, 2, 1), batch(13n, 13n, 0, 2)])).toBe(ErrorCode.NONE);
  const got = await read(3);
  expect(got.errorCode).toBe(ErrorCode.NONE);
  expect(got.stateEpoch).toBe(1);
  expect(got.startOffset).toBe(10n);
  expect(got.stateBatches).toEqual([batch(10n, 12n, 2, 1), batch(13n, 13n, 0, 2)]);
  expect(await write(2, 1, [])).toBe(ErrorCode.FENCED_LEADER_EPOCH);
  expect((await read(2)).errorCode).toBe(ErrorCode.FENCED_LEADER_EPOCH);
  // A read with a newer leader epoch fences the older leader's later writes.
  expect((await read(4)).errorCode).toBe(ErrorCode.NONE);
  expect(await write(3, 1, [])).toBe(ErrorCode.FENCED_LEADER_EPOCH);
  expect(await write(4, 0, [])).toBe(ErrorCode.FENCED_STATE_EPOCH);
  const tooMany = Array.from({ length: 10_001 }, (_, i) => batch(BigInt(i), BigInt(i), 0, 1));
  expect(await write(4, 1, tooMany)).toBe(ErrorCode.INVALID_REQUEST);
  expect((await read(4)).stateBatches).toHaveLength(2);
  // The summary (ReadShareGroupStateSummary): start offset, epochs and the completed offsets
  // (10-12 acknowledged); an old leader epoch in it fences nothing.
  const summary = await client.request(ApiKey.ReadShareGroupStateSummary, 1, {
    groupId: GROUP,
    topics: [{ topicId, partitions: [{ partition: 0, leaderEpoch: 1 }] }],
  });
  expect(summary.results[0]!.partitions[0]).toEqual({
    partition: 0,
    errorCode: ErrorCode.NONE,
    errorMessage: null,
    stateEpoch: 1,
    leaderEpoch: 3,
    startOffset: 10n,
    deliveryCompleteCount: 3,
  });
});

test("the state survives a restart; DeleteShareGroupState forgets it", async () => {
  client.close();
  b = await b.restart();
  client = await KafkaClient.connect(b.port);
  const res = await client.request(ApiKey.FindCoordinator, 6, {
    keyType: 2,
    coordinatorKeys: [coordinatorKey({ groupId: GROUP, topicId, partition: 0 })],
  });
  expect(res.coordinators[0]!.errorCode).toBe(ErrorCode.NONE);
  // The first request after the restart loads the partition.
  const loaded = async () => (await read(4)).errorCode !== ErrorCode.COORDINATOR_LOAD_IN_PROGRESS;
  await waitUntil(loaded, 10_000, "loaded");
  const got = await read(4);
  expect(got.errorCode).toBe(ErrorCode.NONE);
  expect(got.stateBatches).toEqual([batch(10n, 12n, 2, 1), batch(13n, 13n, 0, 2)]);
  const deleted = await client.request(ApiKey.DeleteShareGroupState, 0, {
    groupId: GROUP,
    topics: [{ topicId, partitions: [{ partition: 0 }] }],
  });
  expect(deleted.results[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
  const gone = await read(4);
  expect(gone.startOffset).toBe(-1n);
  expect(gone.stateBatches).toEqual([]);
  // The state epoch outlives the state: a leader still holding the deleted state is fenced,
  // also after the coordinator loads the partition again (a restart), so it cannot bring the
  // state back; a leader that read the deletion writes under the new epoch.
  expect(gone.stateEpoch).toBe(2);
  expect(await write(4, 1, [batch(10n, 12n, 2, 1)])).toBe(ErrorCode.FENCED_STATE_EPOCH);
  client.close();
  b = await b.restart();
  client = await KafkaClient.connect(b.port);
  await client.request(ApiKey.FindCoordinator, 6, {
    keyType: 2,
    coordinatorKeys: [coordinatorKey({ groupId: GROUP, topicId, partition: 0 })],
  });
  await waitUntil(loaded, 10_000, "loaded again");
  expect(await write(4, 1, [batch(10n, 12n, 2, 1)])).toBe(ErrorCode.FENCED_STATE_EPOCH);
  expect((await read(4)).startOffset).toBe(-1n);
  expect(await write(4, 2, [])).toBe(ErrorCode.NONE);
  expect((await read(4)).startOffset).toBe(10n);
});
