/**
 * The controller mutation quota of one request (KIP-599, Kafka's ControllerMutationQuota): the
 * admin handlers count each topic's partitions against it just before they create or delete
 * them (CreateTopics, CreatePartitions, DeleteTopics; validateOnly counts nothing).
 *
 * - Strict (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+, whose clients know the
 *   error): a topic is refused with THROTTLING_QUOTA_EXCEEDED while the client's token bucket is
 *   below zero; while it is not, the topic is accepted and its partitions taken, so the last
 *   accepted topic may overdraw the bucket.
 * - Permissive (older versions, and topics created by Metadata's auto-creation): every mutation
 *   is accepted and taken; an overdrawn bucket only throttles.
 *
 * Either way the response carries the throttle time (the last violation's, less the time spent
 * since, as Kafka's AbstractControllerMutationQuota) and the connection is muted for it
 * (KIP-219), so a client older than KIP-599 sees its next request delayed instead of an error.
 */
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import type { TokenBucket } from "./token-bucket.ts";

export interface ControllerMutationQuota {
  /** Counts `partitions` mutations; a strict quota throws THROTTLING_QUOTA_EXCEEDED instead. */
  record(partitions: number): void;
  /** The throttle time to answer with now (0: none); counted in the quota's metrics. */
  settle(): number;
}

/** No controller_mutation_rate applies to the client (Kafka's UnboundedControllerMutationQuota). */
export const UNBOUNDED_MUTATION_QUOTA: ControllerMutationQuota = {
  record: () => {},
  settle: () => 0,
};

/** Kafka's Errors.THROTTLING_QUOTA_EXCEEDED message, which its admin client shows. */
const QUOTA_EXCEEDED = "The throttling quota has been exceeded.";

abstract class MeteredMutationQuota implements ControllerMutationQuota {
  private lastThrottleMs = 0;
  private lastRecordedMs = 0;

  constructor(
    protected readonly bucket: TokenBucket,
    protected readonly rate: number,
  ) {}

  abstract record(partitions: number): void;

  protected violated(throttleMs: number, nowMs: number): void {
    this.lastThrottleMs = throttleMs;
    this.lastRecordedMs = nowMs;
  }

  settle(): number {
    const throttleMs = Math.max(0, this.lastThrottleMs - (Date.now() - this.lastRecordedMs));
    this.bucket.throttleTimeMsTotal += throttleMs;
    return throttleMs;
  }
}

/** Kafka's StrictControllerMutationQuota: check the bucket, then take. */
export class StrictControllerMutationQuota extends MeteredMutationQuota {
  record(partitions: number): void {
    const nowMs = Date.now();
    const throttleMs = this.bucket.throttleMs(nowMs, this.rate);
    if (throttleMs > 0) {
      this.violated(throttleMs, nowMs);
      throw new KafkaError(ErrorCode.THROTTLING_QUOTA_EXCEEDED, QUOTA_EXCEEDED);
    }
    this.bucket.take(partitions, nowMs, this.rate);
  }
}

/** Kafka's PermissiveControllerMutationQuota: take, then throttle if that overdrew it. */
export class PermissiveControllerMutationQuota extends MeteredMutationQuota {
  record(partitions: number): void {
    const nowMs = Date.now();
    const throttleMs = this.bucket.recordAndThrottleMs(partitions, nowMs, this.rate);
    if (throttleMs > 0) this.violated(throttleMs, nowMs);
  }
}
