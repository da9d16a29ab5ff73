// The cluster's share-state persister orders a deletion after the key's running write: the
// coordinator here stands in for one whose write answers later than its delete (a write of
// the group's last acknowledgements still out when DeleteShareGroupOffsets comes), with the
// metadata naming this broker as the leader of the key's __share_group_state partition.
import { expect, test } from "bun:test";
import type { ShareCoordinator } from "../../src/coordinator/share-coordinator.ts";
import { ShareStatePersister } from "../../src/coordinator/share-persister.ts";
import { SHARE_STATE_TOPIC } from "../../src/coordinator/share-state-log.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import type { MetadataCache } from "../../src/server/metadata-cache.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";

const BROKER_ID = 1;
const NONE = { errorCode: ErrorCode.NONE, errorMessage: null, state: null };

function setUp() {
  const calls: string[] = [];
  const stored = new Set<string>();
  const coordinator = {
    async write(key: { partition: number }) {
      calls.push("write");
      await Bun.sleep(30);
      stored.add(`p${key.partition}`);
      return NONE;
    },
    async delete(key: { partition: number }) {
      calls.push("delete");
      stored.delete(`p${key.partition}`);
      return NONE;
    },
    read() {
      calls.push("read");
      return NONE;
    },
  } as unknown as ShareCoordinator;
  const leaders = { partitions: [{ leaderId: BROKER_ID }], topicId: "share-state-id" };
  const cache = {
    brokerConfig: { "broker.id": BROKER_ID },
    topic: (name: string) =>
      name === SHARE_STATE_TOPIC ? leaders : { topicId: `${name}-id`, partitions: [] },
    broker: (id: number) => (id === BROKER_ID ? { nodeId: id } : undefined),
  } as unknown as MetadataCache;
  const unused = {
    clientFor: () => Promise.reject(new Error("no other broker")),
    dropClient: () => {},
  };
  const persister = new ShareStatePersister(coordinator, cache, unused, 1_000, SILENT_LOGGER);
  return { persister, calls, stored };
}

test("a removal waits for the running write, and a load for the removal", async () => {
  const { persister, calls, stored } = setUp();
  const epochs = { leaderEpoch: 0, stateEpoch: 1 };
  const saved = persister.save("g", "t", 0, epochs, () => ({ startOffset: 5n, records: [] }));
  await Bun.sleep(5); // the write is out
  persister.remove("g", "t", 0);
  const loaded = persister.load("g", "t", 0, 0);
  expect(await saved).toBe(ErrorCode.NONE);
  expect((await loaded).snapshot).toBeNull();
  expect(calls).toEqual(["write", "delete", "read"]);
  expect(stored.size).toBe(0);
});
