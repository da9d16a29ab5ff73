/**
 * A latency histogram with fixed bucket bounds, as Prometheus exposes one: a count per bucket
 * (cumulated only when written out), the sum and the count. Observing is a short scan over at
 * most a dozen bounds and three additions, with no allocation, so it is cheap on a hot path.
 */
export class Histogram {
  /** Observations per bucket; the last slot is the +Inf bucket. */
  readonly buckets: Float64Array;
  sum = 0;
  count = 0;

  /** `bounds` are the buckets' upper bounds (inclusive), ascending, in the histogram's unit. */
  constructor(readonly bounds: readonly number[]) {
    for (let i = 1; i < bounds.length; i++) {
      if (!(bounds[i]! > bounds[i - 1]!)) throw new Error("histogram bounds must ascend");
    }
    this.buckets = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.buckets[i]! += 1;
    this.sum += value;
    this.count += 1;
  }
}

/**
 * Bounds in seconds for request and disk latencies: 0.5 ms to 10 s, roughly doubling, fine
 * enough to tell a page-cache append from an fsync from a timed-out long poll.
 */
export const LATENCY_SECONDS_BOUNDS: readonly number[] = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];
