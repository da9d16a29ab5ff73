/**
 * Kafka's Throttler, as the log cleaner uses it for log.cleaner.io.max.bytes.per.second: the
 * caller reports the bytes it read or wrote; once a check interval has passed, if the observed
 * rate is above the desired one, it sleeps as long as it takes to bring the rate down to it.
 * The cleaner's Worker makes one per cleaning (its period starts then, so time idle between
 * cleanings never counts as slow I/O) and sleeps on a timer in its own thread. The rate is read
 * at every check, so a dynamic change reaches a cleaning in progress.
 */
import { assert } from "../util/assert.ts";

const CHECK_INTERVAL_MS = 300;

export class Throttler {
  private periodStartMs: number;
  private observedSoFar = 0;
  /** Total time spent sleeping, for the cleaner's statistics. */
  sleptMs = 0;

  constructor(
    /** Bytes per second; Infinity: unthrottled. */
    private readonly desiredRatePerSec: () => number,
    private readonly nowMs: () => number = () => performance.now(),
  ) {
    this.periodStartMs = nowMs();
  }

  async maybeThrottle(observed: number): Promise<void> {
    const desiredRatePerSec = this.desiredRatePerSec();
    assert(desiredRatePerSec > 0, `throttle rate ${desiredRatePerSec}`);
    if (!Number.isFinite(desiredRatePerSec)) {
      // Unthrottled now: a rate set later measures from then, not from the cleaning's start.
      this.periodStartMs = this.nowMs();
      this.observedSoFar = 0;
      return;
    }
    this.observedSoFar += observed;
    const elapsedMs = this.nowMs() - this.periodStartMs;
    if (elapsedMs <= CHECK_INTERVAL_MS || this.observedSoFar <= 0) return;
    const ratePerSec = (this.observedSoFar * 1000) / elapsedMs;
    if (ratePerSec > desiredRatePerSec) {
      const sleepMs = Math.round(this.observedSoFar / (desiredRatePerSec / 1000) - elapsedMs);
      if (sleepMs > 0) {
        this.sleptMs += sleepMs;
        await Bun.sleep(sleepMs);
      }
    }
    this.periodStartMs = this.nowMs();
    this.observedSoFar = 0;
  }
}
