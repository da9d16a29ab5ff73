/**
 * Long synchronous work cut into slices of about `sliceMs` of the event loop's time, with the
 * loop given back between them: the work calls `due()` after each bounded step and, when it says
 * so, awaits `next()`, a setImmediate, which gives timers and socket I/O their turn. The work
 * takes a little longer in all, but nothing waits on it for more than about two slices: Bun runs
 * the immediates of a turn before its timers, so a timer due during one slice runs after the
 * next one.
 */
export class TurnSlices {
  private sliceStartMs = performance.now();

  constructor(private readonly sliceMs: number) {}

  /** Whether this slice has used its time. */
  due(): boolean {
    return performance.now() - this.sliceStartMs >= this.sliceMs;
  }

  /** Gives the event loop a turn and starts the next slice. */
  async next(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    this.sliceStartMs = performance.now();
  }
}
