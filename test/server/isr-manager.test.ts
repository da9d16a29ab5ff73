/**
 * IsrManager against a real Partition and log, with the controller's AlterPartition answers
 * scripted: a change whose answer is lost stays pending and is sent again until answered; a
 * fenced one stays pending without being sent again.
 */
import { afterEach, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { IsrManager } from "../../src/server/isr-manager.ts";
import { type AlterIsrResult, Partition } from "../../src/server/partition.ts";
import { LogManager } from "../../src/storage/log-manager.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";
import { batch, removeDir, tempDir } from "../storage/helpers.ts";
import { waitUntil } from "../support/wait-until.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/**
 * A leader of t-0 with ISR [1, 2] whose replica 3 has caught up, and an IsrManager whose
 * AlterPartition answers are `answers`, one per request; `sent` records the requests.
 */
function leaderWithCaughtUpReplica(answers: AlterIsrResult[]) {
  const dir = tempDir("quill-isr-manager-");
  const logs = LogManager.open({ logDirs: [dir], logger: SILENT_LOGGER });
  cleanups.push(() => {
    logs.close();
    removeDir(dir);
  });
  const log = logs.getOrCreateLog("t", 0);
  const state = {
    topic: "t",
    partition: 0,
    topicId: new Uint8Array(16).fill(7),
    leader: 1,
    leaderEpoch: 1,
    partitionEpoch: 1,
    isr: [1, 2],
    replicas: [1, 2, 3],
  };
  const p = Partition.fromLeadership(log, 1, state);
  p.makeLeader(state, 0);
  log.appendAsLeader(batch(2), -1);
  p.updateFollowerFetchState(2, 2n, 10);
  p.maybeIncrementHighWatermark();
  p.updateFollowerFetchState(3, 2n, 10);
  const sent: { partitionEpoch: number; isr: readonly number[] }[] = [];
  const manager = new IsrManager({
    alterIsr: async (_topic, _partition, _leaderEpoch, partitionEpoch, isr) => {
      sent.push({ partitionEpoch, isr });
      return answers.shift()!;
    },
    lagTimeMaxMs: 30_000,
    partitions: () => [p],
    isReplicaIsrEligible: () => true,
    onIsrChanged: () => {},
    log: SILENT_LOGGER,
  });
  cleanups.push(() => manager.stop());
  return { p, sent, manager };
}

test("an expansion whose answer timed out stays pending and is sent again", async () => {
  const { p, sent, manager } = leaderWithCaughtUpReplica([
    { errorCode: ErrorCode.REQUEST_TIMED_OUT, leaderEpoch: 1, partitionEpoch: 1, isr: [] },
    { errorCode: ErrorCode.NONE, leaderEpoch: 1, partitionEpoch: 2, isr: [1, 2, 3] },
  ]);
  manager.maybeExpand(p);
  await waitUntil(() => sent.length === 1, 5_000, "the first AlterPartition");
  await Bun.sleep(50);
  // The first answer timed out: the controller may have applied it, so it is still counted.
  expect(p.pendingIsr).toEqual([1, 2, 3]);
  expect(p.maximalIsr).toEqual([1, 2, 3]);
  await waitUntil(() => p.pendingIsr === null, 5_000, "the change answered");
  expect(sent).toEqual([
    { partitionEpoch: 1, isr: [1, 2, 3] },
    { partitionEpoch: 1, isr: [1, 2, 3] },
  ]);
  expect([p.isr, p.partitionEpoch, manager.expandCount]).toEqual([[1, 2, 3], 2, 1]);
});

test("a fenced expansion stays pending for the next LeaderAndIsr and is not sent again", async () => {
  const { p, sent, manager } = leaderWithCaughtUpReplica([
    { errorCode: ErrorCode.INVALID_UPDATE_VERSION, leaderEpoch: -1, partitionEpoch: -1, isr: [] },
  ]);
  manager.maybeExpand(p);
  await waitUntil(() => sent.length === 1, 5_000, "the first AlterPartition");
  // Longer than two resend pauses: a fenced change asked again would be fenced again.
  await Bun.sleep(1_200);
  expect(sent).toEqual([{ partitionEpoch: 1, isr: [1, 2, 3] }]);
  expect(p.pendingIsr).toEqual([1, 2, 3]);
});
