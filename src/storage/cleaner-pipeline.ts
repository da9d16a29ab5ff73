/**
 * The cleaner's chunks in flight: a few chunks are at the Worker at once so that it never waits
 * for the event loop (a read, a write, a reply to handle), and the two threads overlap instead
 * of taking turns. Jobs finish in the order they were started: each gets the previous job's
 * promise and awaits it before it touches shared state (the cleaned segment, the offset map's
 * progress), so the cleaned segment is written batch after batch in offset order whatever the
 * timing. At most `depth` jobs are unfinished: `add` waits for the oldest beyond that.
 *
 * A failed job fails every later one (each awaits its predecessor) and is thrown by `add` or
 * `finish`; `abandon` waits for every job still running, so nothing writes to a cleaned segment
 * after its cleaning gave up and removed it.
 */
export type PipelineJob = (previous: Promise<void>) => Promise<void>;

export class CleanerPipeline {
  private readonly jobs: Promise<void>[] = [];
  private last: Promise<void> = Promise.resolve();

  constructor(private readonly depth: number) {}

  /** Starts `job` now; returns once fewer than `depth` jobs are unfinished. */
  async add(job: PipelineJob): Promise<void> {
    const started = job(this.last);
    // Observed here so a failure seen first by a later job is never an unhandled rejection.
    started.catch(() => {});
    this.last = started;
    this.jobs.push(started);
    while (this.jobs.length >= this.depth) await this.jobs.shift();
  }

  /** Waits for every job in order; throws the first failure. */
  async finish(): Promise<void> {
    while (this.jobs.length > 0) await this.jobs.shift();
  }

  /** Waits for every job still running, failed or not (after a failure). */
  async abandon(): Promise<void> {
    await Promise.allSettled(this.jobs.splice(0));
  }
}
