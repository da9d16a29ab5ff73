/**
 * Kafka's TokenBucket stat, which meters controller mutations (KIP-599): the bucket holds up to
 * `burst = samples * sampleSeconds * rate` tokens (controller.quota.window.num and
 * controller.quota.window.size.seconds), refills at `rate` tokens per second, and each partition
 * created or deleted takes one. It starts full. A mutation is refused only while the bucket is
 * below zero, so one request may overdraw it (a burst); the throttle time is how long the
 * refill takes to bring it back to zero, `-tokens / rate` seconds.
 */
import { assert } from "../util/assert.ts";
import type { QuotaMeter } from "./quota-sensor.ts";

export class TokenBucket implements QuotaMeter {
  private tokens = 0;
  /** 0 at first, so the first refill fills the bucket, as Kafka's. */
  private lastUpdateMs = 0;
  throttleTimeMsTotal = 0;
  /** The rate of the last take, to tell whether the bucket has refilled. */
  private lastRate = 0;

  constructor(
    private readonly samples: number,
    private readonly sampleMs: number,
  ) {
    assert(samples >= 1 && sampleMs >= 1, `quota window ${samples} x ${sampleMs} ms`);
  }

  /** Tokens left after refilling up to `nowMs` (negative: overdrawn). */
  measure(nowMs: number, rate: number): number {
    this.refill(nowMs, rate);
    return this.tokens;
  }

  /** Takes `value` tokens (negative gives them back); `rate` sets the refill and the burst. */
  take(value: number, nowMs: number, rate: number): void {
    this.refill(nowMs, rate);
    this.tokens = Math.min(this.burst(rate), this.tokens - value);
    this.lastRate = rate;
  }

  /** Full again: a new bucket (which starts full) would answer the same. */
  isIdle(nowMs: number): boolean {
    return this.lastRate === 0 || this.measure(nowMs, this.lastRate) >= this.burst(this.lastRate);
  }

  /** Kafka's permissive recording: take, then the throttle time if that overdrew the bucket. */
  recordAndThrottleMs(value: number, nowMs: number, rate: number): number {
    this.take(value, nowMs, rate);
    return this.throttleMs(nowMs, rate);
  }

  /** Kafka's ControllerMutationQuotaManager.throttleTimeMs: 0 unless overdrawn. */
  throttleMs(nowMs: number, rate: number): number {
    const tokens = this.measure(nowMs, rate);
    return tokens < 0 ? Math.round((-tokens / rate) * 1000) : 0;
  }

  private burst(rate: number): number {
    return ((this.samples * this.sampleMs) / 1000) * rate;
  }

  private refill(nowMs: number, rate: number): void {
    const elapsedMs = Math.max(0, nowMs - this.lastUpdateMs);
    this.tokens = Math.min(this.burst(rate), this.tokens + (rate * elapsedMs) / 1000);
    this.lastUpdateMs = nowMs;
  }
}
