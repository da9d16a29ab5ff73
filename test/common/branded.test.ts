/**
 * The brands are compile-time only, so this test's checks are the `@ts-expect-error` lines:
 * `tsc --noEmit` fails if one of them stops being an error (a brand lost on the way). At run
 * time it checks that branded values are their plain numbers and bigints.
 */
import { expect, test } from "bun:test";
import type { BrokerId, LeaderEpoch, Offset, PartitionIndex } from "../../src/common/branded.ts";
import type { PartitionStateZnode } from "../../src/metadata/kafka-znodes.ts";
import type { PartitionState } from "../../src/server/metadata-cache.ts";
import type { PartitionLeadership } from "../../src/server/partition.ts";
import type { FetchEntry } from "../../src/server/replica-manager.ts";
import type { EpochEntry } from "../../src/storage/leader-epoch-file-cache.ts";

const state: PartitionLeadership = {
  topic: "t",
  partition: 2,
  topicId: new Uint8Array(16),
  leader: 1,
  leaderEpoch: 7,
  partitionEpoch: 3,
  isr: [1, 2],
  replicas: [1, 2, 3],
};

test("values of one kind are refused where another is expected", () => {
  // @ts-expect-error a leader epoch is not a broker id
  const leader: BrokerId = state.leaderEpoch;
  // @ts-expect-error a broker id is not a partition index
  const partition: PartitionIndex = state.leader;
  // @ts-expect-error a partition index is not a leader epoch
  const epoch: LeaderEpoch = state.partition;
  const znode: PartitionStateZnode = {
    // @ts-expect-error the znode's leader is a broker id, not an epoch
    leader: state.leaderEpoch,
    leaderEpoch: state.leaderEpoch,
    isr: state.isr,
    controllerEpoch: 1,
  };
  const cached: PartitionState = { ...state, leaderId: state.leader, offlineReplicas: [] };
  const fetch: FetchEntry = {
    topic: "t",
    partition: cached.partition,
    fetchOffset: 0n,
    partitionMaxBytes: 1024,
    // @ts-expect-error the metadata cache's leader id is not the epoch a fetch checks
    currentLeaderEpoch: cached.leaderId,
  };
  expect([leader, partition, epoch, znode.leader]).toEqual([7, 1, 2, 7]);
  expect(fetch.currentLeaderEpoch).toBe(1);
});

test("plain literals and arithmetic need no cast, and a brand is its plain value", () => {
  const entry: EpochEntry = { epoch: state.leaderEpoch, startOffset: 40n };
  const next: Offset = entry.startOffset + 1n;
  expect(next).toBe(41n);
  expect(typeof entry.epoch).toBe("number");
});
