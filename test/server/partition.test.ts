import { afterEach, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { Partition, type PartitionLeadership } from "../../src/server/partition.ts";
import { LogManager } from "../../src/storage/log-manager.ts";
import type { UnifiedLog } from "../../src/storage/unified-log.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";
import { batch, removeDir, tempDir } from "../storage/helpers.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function openLog(): UnifiedLog {
  const dir = tempDir("quill-partition-");
  const logs = LogManager.open({ logDirs: [dir], logger: SILENT_LOGGER });
  cleanups.push(() => {
    logs.close();
    removeDir(dir);
  });
  return logs.getOrCreateLog("t", 0);
}

const TOPIC_ID = new Uint8Array(16).fill(7);
const leadership = (over: Partial<PartitionLeadership> = {}): PartitionLeadership => ({
  topic: "t",
  partition: 0,
  topicId: TOPIC_ID,
  leader: 1,
  leaderEpoch: 1,
  partitionEpoch: 1,
  isr: [1, 2, 3],
  replicas: [1, 2, 3],
  ...over,
});

function leaderWithRecords(count: number): { p: Partition; log: UnifiedLog } {
  const log = openLog();
  const p = Partition.fromLeadership(log, 1, leadership());
  p.makeLeader(leadership(), 1_000);
  for (let i = 0; i < count; i++) log.appendAsLeader(batch(1), -1);
  return { p, log };
}

test("the sole replica's high watermark follows its log end offset", () => {
  const log = openLog();
  const p = Partition.soleReplica(log, 0, TOPIC_ID);
  log.appendAsLeader(batch(3), -1);
  expect(log.highWatermark).toBe(0n);
  expect(p.maybeIncrementHighWatermark()).toBe(true);
  expect(log.highWatermark).toBe(3n);
  expect(p.isr).toEqual([0]);
});

test("the high watermark is the smallest follower LEO over the ISR and waits for every one", () => {
  const { p, log } = leaderWithRecords(5);
  expect(log.highWatermark).toBe(0n);
  p.updateFollowerFetchState(2, 5n, 1_100);
  expect(p.maybeIncrementHighWatermark()).toBe(false); // Follower 3 has not fetched yet.
  p.updateFollowerFetchState(3, 3n, 1_100);
  expect(p.maybeIncrementHighWatermark()).toBe(true);
  expect(log.highWatermark).toBe(3n);
  p.updateFollowerFetchState(3, 5n, 1_200);
  p.maybeIncrementHighWatermark();
  expect(log.highWatermark).toBe(5n);
});

test("the high watermark never moves backwards on the leader", () => {
  const { p, log } = leaderWithRecords(4);
  p.updateFollowerFetchState(2, 4n, 1_100);
  p.updateFollowerFetchState(3, 4n, 1_100);
  p.maybeIncrementHighWatermark();
  expect(log.highWatermark).toBe(4n);
  // A follower reporting a lower offset (it truncated) does not pull the HW down.
  p.updateFollowerFetchState(3, 2n, 1_200);
  expect(p.maybeIncrementHighWatermark()).toBe(false);
  expect(log.highWatermark).toBe(4n);
});

test("replicas outside the ISR do not hold the high watermark", () => {
  const log = openLog();
  const state = leadership({ isr: [1, 2] });
  const p = Partition.fromLeadership(log, 1, state);
  p.makeLeader(state, 0);
  log.appendAsLeader(batch(2), -1);
  p.updateFollowerFetchState(2, 2n, 10);
  p.maybeIncrementHighWatermark();
  expect(log.highWatermark).toBe(2n);
});

test("a follower that has not caught up for replica.lag.time.max.ms is out of sync", () => {
  const { p } = leaderWithRecords(3);
  p.updateFollowerFetchState(2, 3n, 1_500); // Caught up at 1500.
  p.updateFollowerFetchState(3, 1n, 1_500); // Behind since becoming leader at 1000.
  expect(p.outOfSyncReplicas(1_900, 1_000)).toEqual([]);
  expect(p.outOfSyncReplicas(2_001, 1_000)).toEqual([3]);
  expect(p.outOfSyncReplicas(2_501, 1_000)).toEqual([2, 3]);
});

test("a follower reaching the leader's LEO of its previous fetch was caught up then", () => {
  const { p, log } = leaderWithRecords(3);
  p.updateFollowerFetchState(2, 1n, 5_000); // Leader LEO was 3 at this fetch.
  log.appendAsLeader(batch(1), -1); // The leader keeps moving: LEO 4.
  p.updateFollowerFetchState(2, 3n, 9_000); // Reached 3: caught up as of 5000, not 9000.
  expect(p.follower(2)!.lastCaughtUpTimeMs).toBe(5_000);
});

test("replicas outside the ISR that reached the high watermark may join it", () => {
  const log = openLog();
  const state = leadership({ isr: [1, 2] });
  const p = Partition.fromLeadership(log, 1, state);
  p.makeLeader(state, 0);
  log.appendAsLeader(batch(4), -1);
  p.updateFollowerFetchState(2, 4n, 10);
  p.maybeIncrementHighWatermark();
  p.updateFollowerFetchState(3, 3n, 10);
  expect(p.catchingUpReplicas()).toEqual([]);
  p.updateFollowerFetchState(3, 4n, 20);
  expect(p.catchingUpReplicas()).toEqual([3]);
});

test("an ISR change in flight counts the replicas being added; the answer installs it", () => {
  const { p, log } = leaderWithRecords(2);
  const state = leadership({ isr: [1, 2] });
  p.makeLeader(state, 0);
  p.beginIsrChange([1, 2, 3]);
  expect(p.maximalIsr).toEqual([1, 2, 3]);
  p.updateFollowerFetchState(2, 2n, 10);
  expect(p.maybeIncrementHighWatermark()).toBe(false); // 3 is counted while being added.
  const committed = {
    errorCode: ErrorCode.NONE,
    leaderEpoch: 1,
    partitionEpoch: 2,
    isr: [1, 2, 3],
  };
  expect(p.completeIsrChange(committed)).toBe(true);
  expect([p.isr, p.partitionEpoch, p.pendingIsr]).toEqual([[1, 2, 3], 2, null]);
  expect(log.highWatermark).toBe(0n);
  // A stale answer (an older leader epoch) changes nothing.
  p.beginIsrChange([1, 2]);
  const stale = { errorCode: ErrorCode.NONE, leaderEpoch: 0, partitionEpoch: 3, isr: [1, 2] };
  expect(p.completeIsrChange(stale)).toBe(false);
  expect(p.isr).toEqual([1, 2, 3]);
});

test("an ISR expansion whose answer was lost stays pending: the HW still waits for the joiner", () => {
  // The chaos harness lost an acknowledged record this way: the controller applied [1,2,3],
  // its answer timed out, the leader went back to [1,2] and acknowledged with broker 3 lacking
  // the record; the next leader, chosen from [1,2,3] in ZooKeeper, was broker 3.
  const { p, log } = leaderWithRecords(2);
  const state = leadership({ isr: [1, 2] });
  p.makeLeader(state, 0);
  p.beginIsrChange([1, 2, 3]);
  for (const errorCode of [
    ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.NOT_CONTROLLER,
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.INVALID_UPDATE_VERSION,
  ]) {
    const lost = { errorCode, leaderEpoch: -1, partitionEpoch: -1, isr: [] };
    expect(p.completeIsrChange(lost)).toBe(false);
    expect(p.pendingIsr).toEqual([1, 2, 3]);
  }
  p.updateFollowerFetchState(2, 2n, 10);
  expect(p.maybeIncrementHighWatermark()).toBe(false);
  expect(log.highWatermark).toBe(0n);
  // The controller saying it did not apply the change ends it; then 1 and 2 make the HW.
  const refused = {
    errorCode: ErrorCode.INELIGIBLE_REPLICA,
    leaderEpoch: -1,
    partitionEpoch: -1,
    isr: [],
  };
  expect(p.completeIsrChange(refused)).toBe(false);
  expect(p.pendingIsr).toBeNull();
  expect(p.maybeIncrementHighWatermark()).toBe(true);
  expect(log.highWatermark).toBe(2n);
});

test("acks=-1 completes once the HW passes the batch, with AFTER_APPEND below min.insync", () => {
  const { p } = leaderWithRecords(2);
  expect(p.checkEnoughReplicasReachOffset(2n, 2).outcome).toBe("waiting");
  p.updateFollowerFetchState(2, 2n, 10);
  p.updateFollowerFetchState(3, 2n, 10);
  p.maybeIncrementHighWatermark();
  expect(p.checkEnoughReplicasReachOffset(2n, 2)).toEqual({
    outcome: "done",
    errorCode: ErrorCode.NONE,
  });
  expect(p.checkEnoughReplicasReachOffset(2n, 4)).toEqual({
    outcome: "done",
    errorCode: ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
  });
});

test("controller decisions: newer epochs win, equal epochs need a newer partition epoch", () => {
  const { p } = leaderWithRecords(0);
  expect(p.isNewerThanCurrent(leadership({ leaderEpoch: 2 }))).toBe(true);
  expect(p.isNewerThanCurrent(leadership({ partitionEpoch: 2 }))).toBe(true);
  expect(p.isNewerThanCurrent(leadership())).toBe(false);
  expect(p.isNewerThanCurrent(leadership({ leaderEpoch: 0, partitionEpoch: 9 }))).toBe(false);
});

test("a follower's HW is the leader's capped at its LEO; a new leader forgets LEOs", () => {
  const log = openLog();
  const p = Partition.fromLeadership(log, 2, leadership());
  p.makeFollower(leadership());
  log.appendAsLeader(batch(3), -1);
  p.updateFollowerHighWatermark(10n);
  expect(log.highWatermark).toBe(3n);
  p.makeLeader(leadership({ leader: 2, leaderEpoch: 2 }), 50);
  expect(p.follower(1)!.logEndOffset).toBe(-1n);
  expect(p.leaderEpochStartOffset).toBe(3n);
  expect(p.outOfSyncReplicas(60, 30_000)).toEqual([]);
});

test("the low watermark is the smallest log start offset of leader and live followers", () => {
  const { p, log } = leaderWithRecords(10);
  const allAlive = () => true;
  // Followers that have not fetched in this epoch hold it at -1: DeleteRecords waits for them.
  expect(p.lowWatermark(allAlive)).toBe(-1n);
  p.updateFollowerFetchState(2, 10n, 1_100, 0n);
  p.updateFollowerFetchState(3, 10n, 1_100, 0n);
  p.maybeIncrementHighWatermark();
  log.maybeIncrementLogStartOffset(6n, "test");
  expect(p.lowWatermark(allAlive)).toBe(0n);
  p.updateFollowerFetchState(2, 10n, 1_200, 6n);
  expect(p.lowWatermark(allAlive)).toBe(0n);
  p.updateFollowerFetchState(3, 10n, 1_200, 4n);
  expect(p.lowWatermark(allAlive)).toBe(4n);
  // A follower on a broker that is gone does not hold it back, as in Kafka.
  expect(p.lowWatermark((id) => id !== 3)).toBe(6n);
  p.updateFollowerFetchState(3, 10n, 1_300, 6n);
  expect(p.lowWatermark(allAlive)).toBe(6n);
});
