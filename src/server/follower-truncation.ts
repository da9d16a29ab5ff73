/**
 * How a follower makes its log agree with its leader's before copying (Kafka's leader-epoch
 * truncation, KIP-101 and KIP-279): it asks the leader, with OffsetForLeaderEpoch, where this
 * replica's latest epoch ends in the leader's log, and cuts its own log at the lower of that and
 * its own end of the epoch the leader answered with. Whatever lies beyond was never committed
 * (the leader does not have it), so the copy that follows cannot disagree with the leader below
 * the high watermark.
 */
import type { BrokerId, LeaderEpoch } from "../common/branded.ts";
import type { InterBrokerClient } from "../network/inter-broker-client.ts";
import { ErrorCode, errorName } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import type { EpochEndOffset } from "../storage/leader-epoch-file-cache.ts";
import type { Partition } from "./partition.ts";

/** OffsetForLeaderEpoch v4: flexible, with ReplicaId (v3+) and CurrentLeaderEpoch (v2+). */
const OFFSET_FOR_LEADER_EPOCH_VERSION = 4;

export interface TruncationContext {
  readonly localBrokerId: BrokerId;
  readonly requestTimeoutMs: number;
  /** False once the partition's role changed while the leader was asked: nothing is cut then. */
  readonly stillFollowing: () => boolean;
}

/**
 * Truncates `p`'s log to where it agrees with the leader behind `client`. A log without epochs,
 * or an epoch the leader cannot place, is cut to its high watermark (Kafka's rule before leader
 * epochs). Throws when the leader answers with an error; the fetcher retries after its backoff.
 */
export async function truncateToLeader(
  p: Partition,
  client: InterBrokerClient,
  ctx: TruncationContext,
): Promise<void> {
  const log = p.log;
  const epoch = log.leaderEpochCache.latestEpoch;
  const answer = epoch < 0 ? null : await askEpochEnd(p, client, epoch, ctx);
  if (!ctx.stillFollowing()) return;
  if (answer === null || answer.endOffset < 0n) {
    log.truncateTo(log.highWatermark);
    return;
  }
  const own = log.leaderEpochCache.endOffsetFor(answer.epoch, log.logEndOffset);
  const ownEnd = own.endOffset < 0n ? log.logEndOffset : own.endOffset;
  log.truncateTo(answer.endOffset < ownEnd ? answer.endOffset : ownEnd);
}

async function askEpochEnd(
  p: Partition,
  client: InterBrokerClient,
  epoch: LeaderEpoch,
  ctx: TruncationContext,
): Promise<EpochEndOffset> {
  const version = OFFSET_FOR_LEADER_EPOCH_VERSION;
  const response = await client.request(
    ApiKey.OffsetForLeaderEpoch,
    version,
    {
      replicaId: ctx.localBrokerId,
      topics: [
        {
          topic: p.topic,
          partitions: [
            {
              partition: p.partition,
              currentLeaderEpoch: p.leaderEpoch,
              leaderEpoch: epoch,
            },
          ],
        },
      ],
    },
    ctx.requestTimeoutMs,
  );
  const found = response.topics[0]?.partitions[0];
  if (found === undefined) throw new Error(`OffsetForLeaderEpoch answered no partition`);
  if (found.errorCode !== ErrorCode.NONE) {
    throw new Error(
      `OffsetForLeaderEpoch for ${p.topic}-${p.partition} answered ` + errorName(found.errorCode),
    );
  }
  return { epoch: found.leaderEpoch, endOffset: found.endOffset };
}
