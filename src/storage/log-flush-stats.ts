import { Histogram, LATENCY_SECONDS_BOUNDS } from "../util/histogram.ts";

/**
 * Time of each fdatasync of a segment's log file, in seconds (Kafka's LogFlushStats
 * LogFlushRateAndTimeMs), on the event loop or the thread pool alike. One per process: every
 * log's flushes share the disk and the thread pool, so one distribution answers "is the disk
 * slow"; a process running several brokers (tests) reports their flushes together.
 */
export const logFlushSeconds = new Histogram(LATENCY_SECONDS_BOUNDS);

/** Runs a synchronous fdatasync and records its time. */
export function timedSync(sync: () => void): void {
  const startMs = performance.now();
  sync();
  logFlushSeconds.observe((performance.now() - startMs) / 1000);
}
