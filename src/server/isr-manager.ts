import { ErrorCode } from "../protocol/errors.ts";
import type { Logger } from "../util/logger.ts";
import type { AlterIsr, Partition } from "./partition.ts";

/** Pause before an ISR change whose outcome is unknown is sent again. */
const ISR_CHANGE_RETRY_MS = 500;

/**
 * Answers that leave a change pending but are not sent again, as in Kafka's
 * Partition.handleAlterPartitionError: a fenced or unknown partition stays fenced however often
 * it is asked, so the change waits for the controller's next LeaderAndIsr instead.
 */
const NOT_RESENT_ERRORS: ReadonlySet<number> = new Set([
  ErrorCode.FENCED_LEADER_EPOCH,
  ErrorCode.INVALID_UPDATE_VERSION,
  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
]);

export interface IsrManagerOptions {
  readonly alterIsr: AlterIsr;
  /** replica.lag.time.max.ms */
  readonly lagTimeMaxMs: number;
  /** The partitions this broker holds; the ones it leads are checked. */
  readonly partitions: () => Iterable<Partition>;
  /**
   * Whether a follower may be proposed for the ISR (Kafka's Partition.isReplicaIsrEligible): in
   * ZooKeeper mode, its broker is among the live ones the controller last announced.
   */
  readonly isReplicaIsrEligible: (brokerId: number) => boolean;
  /** Called after a committed ISR change: the HW may move and acks=-1 waits may end. */
  readonly onIsrChanged: (partition: Partition) => void;
  readonly log: Logger;
}

/**
 * Keeps each led partition's ISR honest (Kafka's Partition.maybeShrinkIsr / maybeExpandIsr):
 * a follower that has not caught up for replica.lag.time.max.ms is proposed for removal (checked
 * every half of that time, as Kafka schedules it), and a follower outside the ISR that reached
 * the high watermark is proposed for addition after its fetch. Proposals go to the controller
 * through AlterIsr, one in flight per partition; the partition applies only what was committed.
 */
export class IsrManager {
  private readonly timer: ReturnType<typeof setInterval>;
  /** Committed ISR changes that removed or added replicas (Kafka's IsrShrinksPerSec, ...). */
  shrinkCount = 0;
  expandCount = 0;
  /** Pauses before a change whose outcome was unknown is sent again. */
  private readonly retries = new Set<ReturnType<typeof setTimeout>>();
  private stopped = false;

  constructor(private readonly options: IsrManagerOptions) {
    const checkIntervalMs = Math.max(1, options.lagTimeMaxMs / 2);
    this.timer = setInterval(() => this.maybeShrinkAll(Date.now()), checkIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    for (const timer of this.retries) clearTimeout(timer);
    this.retries.clear();
  }

  /** Proposes removing the out-of-sync followers of every partition led here. */
  maybeShrinkAll(nowMs: number): void {
    for (const p of this.options.partitions()) {
      if (!p.isLeader || p.pendingIsr !== null) continue;
      const out = p.outOfSyncReplicas(nowMs, this.options.lagTimeMaxMs);
      if (out.length === 0) continue;
      this.options.log.warn(
        `${p.topic}-${p.partition}: shrinking ISR [${p.isr.join(",")}] ` +
          `without [${out.join(",")}], not caught up for ${this.options.lagTimeMaxMs} ms`,
      );
      this.propose(
        p,
        p.isr.filter((id) => !out.includes(id)),
      );
    }
  }

  /** After a follower's fetch: proposes adding the followers that caught up. */
  maybeExpand(p: Partition): void {
    if (!p.isLeader || p.pendingIsr !== null) return;
    const joining = p.catchingUpReplicas().filter(this.options.isReplicaIsrEligible);
    if (joining.length === 0) return;
    this.propose(
      p,
      [...p.isr, ...joining].sort((a, b) => a - b),
    );
  }

  private propose(p: Partition, newIsr: readonly number[]): void {
    p.beginIsrChange(newIsr);
    this.send(p, p.pendingIsr!, 1);
  }

  /**
   * Sends the pending change `pending` (the partition's own array, so a change that a
   * LeaderAndIsr replaced meanwhile is recognised) and handles the answer; a change whose
   * outcome is unknown stays pending and is sent again after a pause, as Kafka's
   * AlterPartitionManager retries, while this broker leads with it pending; a fenced one stays
   * pending without being sent again (NOT_RESENT_ERRORS).
   */
  private send(p: Partition, pending: readonly number[], attempt: number): void {
    const { topic, partition } = p;
    this.options
      .alterIsr(topic, partition, p.leaderEpoch, p.partitionEpoch, pending)
      .catch((error: unknown) => {
        if (attempt === 1) {
          this.options.log.warn(`${topic}-${partition}: ISR change failed: ${String(error)}`);
        }
        const errorCode = ErrorCode.UNKNOWN_SERVER_ERROR;
        return { errorCode, leaderEpoch: -1, partitionEpoch: -1, isr: [] };
      })
      .then((result) => {
        // An answer for a change the controller's LeaderAndIsr replaced meanwhile.
        if (p.pendingIsr !== pending) return;
        const before = p.isr.length;
        const applied = p.completeIsrChange(result);
        if (applied && p.isr.length < before) this.shrinkCount++;
        if (applied && p.isr.length > before) this.expandCount++;
        if (!applied && result.errorCode !== ErrorCode.NONE && attempt === 1) {
          this.options.log.warn(
            `${topic}-${partition}: ISR change to [${pending.join(",")}] ` +
              `refused with error ${result.errorCode}` +
              (p.pendingIsr === pending ? keptPendingNote(result.errorCode) : ""),
          );
        }
        this.options.onIsrChanged(p);
        if (p.pendingIsr !== pending || this.stopped) return;
        if (NOT_RESENT_ERRORS.has(result.errorCode)) return;
        const timer = setTimeout(() => {
          this.retries.delete(timer);
          if (p.pendingIsr === pending && p.isLeader && !this.stopped) {
            this.send(p, pending, attempt + 1);
          }
        }, ISR_CHANGE_RETRY_MS);
        timer.unref();
        this.retries.add(timer);
      });
  }
}

/** What becomes of a refused change that stays pending, for the warning. */
function keptPendingNote(errorCode: number): string {
  return NOT_RESENT_ERRORS.has(errorCode)
    ? "; kept pending until the controller's next LeaderAndIsr"
    : "; kept pending and sent again until answered";
}
