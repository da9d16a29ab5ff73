/**
 * One client quota's measured rate, as Kafka's quota sensors measure it (a `Rate` over a
 * `SampledStat`): `samples` samples of `sampleMs` each (quota.window.num and
 * quota.window.size.seconds).
 * A value goes into the current sample, a new sample starts once the current one is `sampleMs`
 * old (the oldest is reused), and samples older than the whole window count as empty. The rate
 * is the samples' sum over the time they cover, counted as at least `samples - 1` whole samples,
 * so a first burst is spread over the window as Kafka spreads it.
 */
import { assert } from "../util/assert.ts";

/** What ClientQuotaManager keeps per sharing entity: a sampled rate, or a token bucket. */
export interface QuotaMeter {
  /** Records `value` against `limit`; the throttle time in ms, 0 while within it. */
  recordAndThrottleMs(value: number, nowMs: number, limit: number): number;
  /** Throttle time handed out for this meter, for /metrics. */
  throttleTimeMsTotal: number;
  /** True when dropping the meter changes nothing: a new one would measure the same. */
  isIdle(nowMs: number): boolean;
}

export class QuotaSensor implements QuotaMeter {
  private readonly values: Float64Array;
  private readonly startsMs: Float64Array;
  /** Samples started so far, at most `samples`. */
  private used = 0;
  private current = 0;
  /** Throttle time handed out for this sensor, for /metrics. */
  throttleTimeMsTotal = 0;
  private lastRecordMs = 0;

  constructor(
    private readonly samples: number,
    private readonly sampleMs: number,
  ) {
    assert(samples >= 1 && sampleMs >= 1, `quota window ${samples} x ${sampleMs} ms`);
    this.values = new Float64Array(samples);
    this.startsMs = new Float64Array(samples);
  }

  /**
   * Records `value` and returns how long the client must be throttled for the rate to fall back
   * to `limit`: Kafka's `(rate - limit) / limit * window`, 0 while the rate is within it.
   */
  recordAndThrottleMs(value: number, nowMs: number, limit: number): number {
    this.record(value, nowMs);
    const windowMs = this.windowMs(nowMs);
    const rate = (this.total() * 1000) / windowMs;
    if (rate <= limit) return 0;
    return Math.round(((rate - limit) / limit) * windowMs);
  }

  /** Idle for the whole window: every sample has expired, so the rate is 0. */
  isIdle(nowMs: number): boolean {
    return this.lastRecordMs < nowMs - this.samples * this.sampleMs;
  }

  /** Adds `value` (negative to take back a recorded one, as Kafka's unrecord). */
  record(value: number, nowMs: number): void {
    this.lastRecordMs = nowMs;
    if (this.used === 0) {
      this.used = 1;
      this.startSample(0, nowMs);
    } else if (nowMs - this.startsMs[this.current]! >= this.sampleMs) {
      this.current = (this.current + 1) % this.samples;
      if (this.current >= this.used) this.used++;
      this.startSample(this.current, nowMs);
    }
    this.values[this.current]! += value;
  }

  /** Kafka's Rate.windowSize: the time the samples cover, after purging obsolete ones. */
  private windowMs(nowMs: number): number {
    const expireMs = this.samples * this.sampleMs;
    let oldestMs = nowMs;
    for (let i = 0; i < this.used; i++) {
      if (nowMs - this.startsMs[i]! >= expireMs) this.startSample(i, nowMs);
      if (this.startsMs[i]! < oldestMs) oldestMs = this.startsMs[i]!;
    }
    let elapsedMs = nowMs - oldestMs;
    const fullSamples = Math.floor(elapsedMs / this.sampleMs);
    if (fullSamples < this.samples - 1) {
      elapsedMs += (this.samples - 1 - fullSamples) * this.sampleMs;
    }
    return Math.max(elapsedMs, 1);
  }

  private total(): number {
    let sum = 0;
    for (let i = 0; i < this.used; i++) sum += this.values[i]!;
    return sum;
  }

  private startSample(i: number, nowMs: number): void {
    this.startsMs[i] = nowMs;
    this.values[i] = 0;
  }
}
