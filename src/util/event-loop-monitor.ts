import { Histogram } from "./histogram.ts";

/** How often the loop is probed: often enough to see a 50 ms stall, rare enough to cost nothing. */
const PROBE_INTERVAL_MS = 100;
/** Event-loop delay bounds in seconds: 1 ms (timer jitter) to 5 s (a hung loop). */
const DELAY_SECONDS_BOUNDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];

/**
 * Event-loop delay: a timer due every PROBE_INTERVAL_MS records how late it fired, which is how
 * long the loop was busy with something else (a long synchronous task, or a garbage collection:
 * Bun 1.4.4 accepts a PerformanceObserver for "gc" entries but never delivers one, so GC pauses
 * show only here). One timer per monitor, unref'd, stopped with stop().
 */
export class EventLoopMonitor {
  readonly delaySeconds = new Histogram(DELAY_SECONDS_BOUNDS);
  private readonly timer: ReturnType<typeof setInterval>;
  private lastMs = performance.now();

  constructor() {
    this.timer = setInterval(() => {
      const nowMs = performance.now();
      const lateMs = nowMs - this.lastMs - PROBE_INTERVAL_MS;
      this.lastMs = nowMs;
      this.delaySeconds.observe(Math.max(0, lateMs) / 1000);
    }, PROBE_INTERVAL_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
